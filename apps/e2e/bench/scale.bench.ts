/**
 * npm run bench:scale — slicekeeper at BENCH_SCALE_KEYS keys (50,000: 25,000 nodes × 2 drivers
 * × 8 devices) against the kube emulator, every service its own process (the e2e System):
 *
 * 1. cold publish, warm resync and 10% churn (`runSyncThroughput`) with 1 and with 2 syncer
 *    replicas, a fresh System each: keys/s, API writes and reads, syncs, CPU seconds per process
 *    (redis-server and the emulator included), Redis commands per sync (INFO commandstats);
 * 2. in the 1-replica System after the churn: Redis used_memory and every process's RSS with
 *    every key published, then a rolling restart of every driver (`measureRollingRestart`:
 *    BENCH_SCALE_BATCH_PERCENT of the nodes at a time, each driver deregistered through the
 *    registration API, away BENCH_SCALE_RESTART_GAP_MS, registered again with the same
 *    inventory), then the syncer restarted with every slice and Node to cache (its memory
 *    against the same syncer idle in the empty cluster);
 * 3. derived: CPU ms per key synced per process, cores busy per process, redis-server CPU and
 *    commands per sync and the sync rate that fills one Redis core.
 *
 * Not part of `npm test`. Progress on stderr, markdown tables on stdout, every figure in
 * bench/results/<date>-scale.json. Environment: BENCH_SCALE_KEYS (50000), BENCH_SCALE_REPLICAS
 * ("1,2", must include 1), BENCH_SCALE_BATCH_PERCENT (5), BENCH_SCALE_RESTART_GAP_MS (5000).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { freePort } from '@slicekeeper/testing';
import { machineInfo, writeResults } from './report';
import { measureRollingRestart } from './rolling-restart';
import type { RollingRestartResult } from './rolling-restart';
import { phaseCost, scaleGoals, scaleMarkdown } from './scale-report';
import type { ScaleBenchResults, ScaleMemory } from './scale-report';
import { round } from './stats';
import { closeSystemsOnSignal, progress, redisUsedMemory, rssBytes } from './support';
import { DRIVERS, clusterKeys, runSyncThroughput } from './sync-throughput';
import type { SyncRunOptions, SyncRunResult } from './sync-throughput';
import { measureLoadedSyncer, readSyncerMemory } from './syncer-memory';
import type { MemoryReading, SyncerMemoryResult } from './syncer-memory';

/** A whole number from the environment, at least `min`. */
function setting(name: string, fallback: number, min = 1): number {
  const raw = process.env[name]?.trim() ?? '';
  if (raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) {
    throw new Error(`${name}="${raw}": a whole number ≥ ${min} expected`);
  }
  return Number(raw);
}

const KEYS = setting('BENCH_SCALE_KEYS', 50_000, 2);
const REPLICAS = (process.env.BENCH_SCALE_REPLICAS ?? '1,2').split(',').map((r) => Number(r));
if (REPLICAS.some((r) => !Number.isInteger(r) || r < 1) || !REPLICAS.includes(1)) {
  throw new Error('BENCH_SCALE_REPLICAS: replica counts such as "1,2", 1 among them');
}
const BATCH_PERCENT = setting('BENCH_SCALE_BATCH_PERCENT', 5);
const RESTART_GAP_MS = setting('BENCH_SCALE_RESTART_GAP_MS', 5000, 0);
/** Sync jobs per syncer replica at once, as in `npm run bench`. */
const CONCURRENCY = 16;
/**
 * The registration API's REMOVAL_GRACE default (and the watcher's WIPE_DELAY, kept equal):
 * left as it is, so the restart meets the grace a real cluster has.
 */
const REMOVAL_GRACE_MS = 30_000;

interface OneReplicaExtras {
  memory: ScaleMemory;
  syncerMemory?: SyncerMemoryResult;
  rollingRestart?: RollingRestartResult;
}

/** What failed; the run goes on with what it has (one full-size run takes the best part of an hour). */
const failures: string[] = [];

async function attempt<T>(what: string, body: () => Promise<T>): Promise<T | undefined> {
  try {
    return await body();
  } catch (error) {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    progress(`${what} failed: ${detail}`);
    failures.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

/**
 * One System: cold, warm and churn; with one replica, memory, the rolling restart and the
 * restarted syncer's memory after them.
 */
async function scaleRun(
  replicas: number,
): Promise<{ run: SyncRunResult; extras?: OneReplicaExtras }> {
  const label = `scale ×${replicas}`;
  const common: SyncRunOptions = {
    keys: KEYS,
    replicas,
    concurrency: CONCURRENCY,
    name: `bench-scale-${replicas}`,
    quietPolling: true,
    // Every request of the restart carries the bench's admin token: one principal for 2 × keys
    // requests, where each node's own token would have its own limit.
    apiEnv: { RATE_LIMIT_MAX: '100000000' },
  };
  if (replicas !== 1) return { run: await runSyncThroughput(common) };
  const probePort = await freePort();
  let idle: MemoryReading | undefined;
  let extras: OneReplicaExtras | undefined;
  const run = await runSyncThroughput({
    ...common,
    syncerEnv: { PROBE_PORT: String(probePort) },
    beforeNodes: async (system) => {
      progress(`${label}: syncer memory, idle in an empty cluster…`);
      idle = await readSyncerMemory(system, probePort);
    },
    afterPhases: async (system, keys, syncerMetrics, producer) => {
      const idleReading = idle;
      if (idleReading === undefined) throw new Error('no idle reading');
      progress(`${label}: memory with every key published…`);
      const memory: ScaleMemory = {
        keys: keys.length,
        nodes: new Set(keys.map((k) => k.node)).size,
        redisUsedMemoryBytes: await redisUsedMemory(producer.redis),
        redisBytesPerKey: 0,
        rssBytes: await rssBytes(),
      };
      progress(
        `${label}: rolling restart, ${BATCH_PERCENT}% of nodes at a time, each driver away ${RESTART_GAP_MS} ms…`,
      );
      extras = { memory };
      const rollingRestart = await attempt('rolling restart', () =>
        measureRollingRestart({
          system,
          producer,
          keys,
          syncerMetrics,
          batchShare: BATCH_PERCENT / 100,
          restartGapMs: RESTART_GAP_MS,
          removalGraceMs: REMOVAL_GRACE_MS,
        }),
      );
      if (rollingRestart !== undefined) {
        extras.rollingRestart = rollingRestart;
        progress(
          `${label}: rolling restart: ${rollingRestart.keysWithoutSlices} keys without slices, longest gap ${rollingRestart.longestUnpublishedMs} ms, ${rollingRestart.api.writes} writes, ${rollingRestart.rolloutSeconds} s`,
        );
      }
      progress(`${label}: syncer memory, restarted with every slice and Node cached…`);
      const syncerMemory = await attempt('syncer memory', () =>
        measureLoadedSyncer({ system, probePort, idle: idleReading, nodes: memory.nodes }),
      );
      if (syncerMemory !== undefined) extras.syncerMemory = syncerMemory;
    },
  });
  if (extras === undefined) throw new Error('the 1-replica run measured no memory');
  extras.memory.redisBytesPerKey = run.redisBytesPerKey;
  return { run, extras };
}

async function main(): Promise<void> {
  closeSystemsOnSignal();
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  const { nodes } = clusterKeys(KEYS);
  progress(
    `scale: ${KEYS} keys on ${nodes.length} nodes, replicas ${REPLICAS.join(',')}; load ${os
      .loadavg()
      .map((l) => round(l))
      .join(' ')}`,
  );
  const sync: SyncRunResult[] = [];
  let extras: OneReplicaExtras | undefined;
  for (const replicas of REPLICAS) {
    progress(`scale ×${replicas}: fresh system…`);
    // The 1-replica run carries the memory and the restart: without it there is nothing to show.
    const result =
      replicas === 1
        ? await scaleRun(replicas)
        : await attempt(`scale ×${replicas}`, () => scaleRun(replicas));
    if (result === undefined) continue;
    sync.push(result.run);
    extras ??= result.extras;
    const { cold, warm, churn } = result.run;
    progress(
      `scale ×${replicas}: cold ${cold.seconds} s (${cold.keysPerSecond} keys/s), warm ${warm.seconds} s (${warm.writes} writes), churn ${churn.seconds} s; load ${os
        .loadavg()
        .map((l) => round(l))
        .join(' ')}`,
    );
  }
  if (extras === undefined) throw new Error('no 1-replica run');
  const partial = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: {
      keys: KEYS,
      nodes: nodes.length,
      driversPerNode: DRIVERS.length,
      devicesPerKey: 8,
      replicas: REPLICAS,
      syncConcurrency: CONCURRENCY,
      batchPercent: BATCH_PERCENT,
      restartGapMs: RESTART_GAP_MS,
      removalGraceMs: REMOVAL_GRACE_MS,
    },
    sync,
    costs: sync.flatMap((run) => [run.cold, run.warm, run.churn].map((p) => phaseCost(run, p))),
    ...extras,
    failures,
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const results: ScaleBenchResults = { ...partial, goals: scaleGoals(partial) };
  const path = await writeResults(results, '-scale');
  process.stdout.write(scaleMarkdown(results));
  progress(`results written to ${path}`);
}

main().then(undefined, (error: unknown) => {
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`bench:scale failed: ${detail}\n`);
  process.exit(1);
});
