/**
 * npm run bench — the whole system, each service its own process (the e2e harness's System):
 *
 * 1. the floor, measured in the same run against the same Redis and emulator process: a bare
 *    BullMQ round trip and a bare ResourceSlice write;
 * 2. end-to-end latency, driver sends → slice seen through a watch, at 100 and 1,000 changes/s
 *    over 100 in-process drivers, one syncer replica, each rate after 2 s of unmeasured warm-up
 *    at that rate (as the floor's first rounds are unmeasured);
 * 3. cold publish, warm resync and 10% churn of BENCH_KEYS keys (nodes × 2 drivers × 8 devices)
 *    with each replica count of BENCH_REPLICAS, a fresh System each, and Redis memory per key;
 * 4. the plugin-watcher's memory per stream over BENCH_STREAMS in-process drivers.
 *
 * Progress goes to stderr, markdown tables to stdout, every figure to bench/results/<date>.json.
 * Environment: BENCH_KEYS (10000), BENCH_REPLICAS ("1,2,4"), BENCH_SECONDS per latency rate (10),
 * BENCH_STREAMS (1000).
 */
import { performance } from 'node:perf_hooks';
import { keyId } from '@slicekeeper/contracts';
import { gpuInventory, inParallel } from '../src/harness';
import type { InProcessDriver } from '../src/harness';
import { measureFloor } from './floor';
import type { FloorResult } from './floor';
import { SliceWatch, measureLatency } from './latency';
import type { LatencyResult } from './latency';
import { evaluateGoals, machineInfo, markdown, writeResults } from './report';
import type { BenchResults } from './report';
import { round } from './stats';
import { runSyncThroughput } from './sync-throughput';
import type { SyncRunResult } from './sync-throughput';
import { closeSystemsOnSignal, progress, withSystem } from './support';
import { measureWatcherMemory } from './watcher-memory';

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

const KEYS = positiveInt('BENCH_KEYS', 10_000);
const SECONDS = positiveInt('BENCH_SECONDS', 10);
const STREAMS = positiveInt('BENCH_STREAMS', 1000);
const REPLICAS = (process.env.BENCH_REPLICAS ?? '1,2,4').split(',').map((r) => {
  const value = Number(r.trim());
  if (!Number.isInteger(value) || value <= 0) throw new Error('BENCH_REPLICAS: e.g. "1,2,4"');
  return value;
});
/** Sync jobs per syncer replica at once, in every phase. */
const CONCURRENCY = 16;
/** Drivers (keys, one per node) of the latency phases. */
const LATENCY_DRIVERS = 100;
const LATENCY_RATES = [100, 1000];
const FLOOR_SAMPLES = 500;

type Latency = LatencyResult & { ratioToFloor: number };

/** Floor and end-to-end latency share one System: same Redis, same emulator process. */
function floorAndLatency(): Promise<{ floor: FloorResult; latency: Latency[] }> {
  const nodes = Array.from({ length: LATENCY_DRIVERS }, (_, i) => `node-${i}`);
  return withSystem(
    {
      name: 'bench-latency',
      nodes,
      syncerReplicas: 1,
      syncerEnv: {
        SYNC_CONCURRENCY: String(CONCURRENCY),
        SYNC_WRITE_RATE: '1000000',
        SYNC_WRITE_BURST: '1000000',
        RESYNC_INTERVAL: '1h',
      },
    },
    async (system) => {
      progress(`floor: ${FLOOR_SAMPLES} BullMQ round trips and ${FLOOR_SAMPLES} API writes…`);
      const floor = await measureFloor({
        redisUrl: system.redis.url,
        emulatorUrl: system.emulator.url,
        node: 'node-0',
        samples: FLOOR_SAMPLES,
      });
      progress(`latency: registering ${LATENCY_DRIVERS} in-process drivers…`);
      const drivers: InProcessDriver[] = [];
      await inParallel(nodes, 8, async (node) => {
        drivers.push(
          await system.inProcessDriver({
            node,
            driver: 'gpu.example.com',
            inventory: gpuInventory({ rev: 0 }),
          }),
        );
      });
      drivers.sort((a, b) => a.node.localeCompare(b.node, 'en', { numeric: true }));
      const ids = drivers.map((d) => keyId({ node: d.node, driver: d.driver }));
      const watch = await SliceWatch.open(system.emulator.url);
      try {
        await system.until(
          `all ${LATENCY_DRIVERS} keys published`,
          () => ids.every((id) => watch.latest.get(id) === 0),
          120_000,
        );
        const revs = new Map<string, number>();
        const latency: Latency[] = [];
        for (const rate of LATENCY_RATES) {
          progress(`latency: ${rate} changes/s for ${SECONDS} s…`);
          const result = await measureLatency({
            emulator: system.emulator,
            watch,
            drivers,
            revs,
            rate,
            seconds: SECONDS,
          });
          latency.push({ ...result, ratioToFloor: round(result.p50ms / floor.floorMs, 2) });
        }
        return { floor, latency };
      } finally {
        watch.close();
      }
    },
  );
}

async function main(): Promise<void> {
  closeSystemsOnSignal();
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  progress(
    `keys ${KEYS}, replicas ${REPLICAS.join(',')}, ${SECONDS} s per latency rate, ${STREAMS} streams`,
  );
  const { floor, latency } = await floorAndLatency();
  const sync: SyncRunResult[] = [];
  for (const replicas of REPLICAS) {
    progress(`sync: fresh system with ${replicas} syncer replica(s)…`);
    sync.push(await runSyncThroughput({ keys: KEYS, replicas, concurrency: CONCURRENCY }));
  }
  progress(`watcher memory: fresh system for ${STREAMS} streams…`);
  const watcherMemory = await measureWatcherMemory(STREAMS);
  const results: BenchResults = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine,
    settings: {
      keys: KEYS,
      replicas: REPLICAS,
      secondsPerRate: SECONDS,
      streams: STREAMS,
      syncConcurrency: CONCURRENCY,
      latencyDrivers: LATENCY_DRIVERS,
      latencyRates: LATENCY_RATES,
      floorSamples: FLOOR_SAMPLES,
    },
    floor,
    latency,
    sync,
    watcherMemory,
    goals: evaluateGoals(floor, latency, sync),
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(results);
  process.stdout.write(markdown(results));
  progress(`results written to ${path}`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
