/**
 * npm run bench:syncer — 10,000 keys × 8 devices through slice-syncer replicas (separate
 * processes) against the kube emulator (another process): cold publish, warm resync and 10%
 * churn, with 1 and 2 replicas, and in the same run a direct baseline that makes the same list
 * and create calls straight against a fresh emulator process with the same concurrency and no
 * queue.
 * Environment: BENCH_KEYS (10000), BENCH_CONCURRENCY per replica (16), BENCH_REPLICAS ("1,2").
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { SYNC_JOB_NAME, keyId, syncStatusSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory, Pool, SliceKey } from '@slicekeeper/contracts';
import { KubeSliceClient } from '@slicekeeper/kube';
import { SyncQueue, syncJobOptions } from '@slicekeeper/queue';
import { planSync } from '@slicekeeper/slices';
import { RedisServer, ServiceProcess, uniquePrefix, waitFor } from '@slicekeeper/testing';

const KEYS = Number(process.env.BENCH_KEYS ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const REPLICAS = (process.env.BENCH_REPLICAS ?? '1,2').split(',').map(Number);

interface Counters {
  counts: { verb: string; resource: string; code: number; count: number }[];
}

const keyOf = (i: number): SliceKey => ({ node: `node-${i}`, driver: 'gpu.example.com' });

function inventory(i: number, version: number): DriverInventory {
  return { pools: [pool(`node-${i}`, version)] };
}

function pool(name: string, version: number): Pool {
  return {
    name,
    scope: { kind: 'node' },
    devices: Array.from({ length: 8 }, (_, d) => ({
      name: `gpu-${d}`,
      attributes: { model: { string: 'A100' }, index: { int: d } },
      capacity: { memory: { value: d === 0 ? `${80 + version}Gi` : '80Gi' } },
    })),
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

class Emulator {
  private constructor(
    readonly process: ServiceProcess,
    readonly url: string,
    readonly kubeconfigPath: string,
  ) {}

  static async start(dir: string): Promise<Emulator> {
    const kubeconfigPath = join(dir, 'kubeconfig');
    const process = new ServiceProcess({
      app: 'kube-emulator',
      env: { PORT: '0', KUBECONFIG_OUT: kubeconfigPath, LOG_LEVEL: 'info' },
    });
    const listening = await process.waitForLog('listening');
    return new Emulator(process, String(listening.url), kubeconfigPath);
  }

  async counts(): Promise<{ reads: number; writes: number }> {
    const body = (await (await fetch(`${this.url}/_emulator/counters`)).json()) as Counters;
    let reads = 0;
    let writes = 0;
    for (const c of body.counts) {
      if (c.resource !== 'resourceslices' && c.resource !== 'nodes') continue;
      if (c.verb === 'list' || c.verb === 'get') reads += c.count;
      if (c.verb === 'create' || c.verb === 'update' || c.verb === 'delete' || c.verb === 'patch') {
        if (c.resource === 'resourceslices') writes += c.count;
      }
    }
    return { reads, writes };
  }

  async createNodes(count: number): Promise<void> {
    const agentFetch = (i: number) =>
      fetch(`${this.url}/api/v1/nodes`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${i}` } }),
      });
    for (let i = 0; i < count; i += 64) {
      await Promise.all(
        Array.from({ length: Math.min(64, count - i) }, (_, j) => agentFetch(i + j)),
      );
    }
  }
}

interface PhaseResult {
  phase: string;
  replicas: number | 'direct';
  keys: number;
  seconds: number;
  keysPerSecond: number;
  p50ms: number;
  p99ms: number;
  readsPerSync: number;
  writesPerSync: number;
}

async function runPhase(
  phase: string,
  replicas: number,
  redis: Redis,
  prefix: string,
  emulator: Emulator,
  keys: number[],
  version: number,
  reason: 'snapshot' | 'resync',
): Promise<PhaseResult> {
  const rk = redisKeys(prefix);
  const queue = new SyncQueue({ connection: redis, prefix });
  const before = await emulator.counts();
  const start = Date.now();
  if (reason === 'snapshot') {
    const pipeline = redis.pipeline();
    for (const i of keys) {
      pipeline.set(
        rk.snapshot(keyOf(i)),
        JSON.stringify({
          generation: version,
          receivedAt: new Date().toISOString(),
          endpoint: 'unix:///run/gpu.sock',
          inventory: inventory(i, version),
        }),
      );
    }
    await pipeline.exec();
  }
  const enqueuedAt = Date.now();
  for (let i = 0; i < keys.length; i += 1000) {
    await queue.queue.addBulk(
      keys.slice(i, i + 1000).map((k) => ({
        name: SYNC_JOB_NAME,
        data: { ...keyOf(k), reason },
        opts: syncJobOptions(keyOf(k), reason),
      })),
    );
  }
  // Keys whose resync the syncer already scheduled (spread over its interval) absorbed the adds
  // above: run those now.
  if (reason === 'resync') await queue.queue.promoteJobs();
  const statusKeys = keys.map((i) => rk.syncStatus(keyOf(i)));
  let latencies: number[] = [];
  await waitFor(
    async () => {
      latencies = [];
      for (let i = 0; i < statusKeys.length; i += 2000) {
        const raws = await redis.mget(...statusKeys.slice(i, i + 2000));
        for (const raw of raws) {
          if (raw === null) return false;
          const status = syncStatusSchema.parse(JSON.parse(raw));
          const finished = Date.parse(status.finishedAt);
          if (status.snapshotGeneration !== version || finished < enqueuedAt) return false;
          latencies.push(finished - enqueuedAt);
        }
      }
      return true;
    },
    { timeoutMs: 600_000, intervalMs: 250, description: `${phase} to finish` },
  );
  const seconds = (Date.now() - start) / 1000;
  const after = await emulator.counts();
  await queue.close();
  latencies.sort((a, b) => a - b);
  return {
    phase,
    replicas,
    keys: keys.length,
    seconds,
    keysPerSecond: Math.round(keys.length / seconds),
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    readsPerSync: round2((after.reads - before.reads) / keys.length),
    writesPerSync: round2((after.writes - before.writes) / keys.length),
  };
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The floor: the same list + create per key, straight from one process, same concurrency. */
async function directBaseline(emulator: Emulator, concurrency: number): Promise<PhaseResult> {
  const api = new KubeSliceClient({
    kubeconfig: { kind: 'yaml', text: await readFile(emulator.kubeconfigPath, 'utf8') },
  });
  const before = await emulator.counts();
  const start = Date.now();
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < KEYS) {
        const i = next++;
        const t0 = Date.now();
        const key = { node: `direct-${i}`, driver: 'gpu.example.com' };
        const existing = await api.listSlices(key);
        const plan = planSync({
          node: key.node,
          nodeUid: `uid-${i}`,
          driver: key.driver,
          pools: [pool(key.node, 0)],
          existing,
        });
        for (const slice of plan.creates) await api.createSlice(slice);
        latencies.push(Date.now() - t0);
      }
    }),
  );
  const seconds = (Date.now() - start) / 1000;
  const after = await emulator.counts();
  await api.close();
  latencies.sort((a, b) => a - b);
  return {
    phase: 'direct baseline (list + create)',
    replicas: 'direct',
    keys: KEYS,
    seconds,
    keysPerSecond: Math.round(KEYS / seconds),
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    readsPerSync: round2((after.reads - before.reads) / KEYS),
    writesPerSync: round2((after.writes - before.writes) / KEYS),
  };
}

async function main(): Promise<void> {
  const results: PhaseResult[] = [];
  const summaries: string[] = [];
  for (const replicaCount of REPLICAS) {
    const dir = await mkdtemp(join(tmpdir(), 'bench-syncer-'));
    const redisServer = await RedisServer.start();
    const redis = new Redis(redisServer.url);
    const emulator = await Emulator.start(dir);
    const prefix = uniquePrefix('bench');
    const replicas: ServiceProcess[] = [];
    try {
      process.stdout.write(
        `${replicaCount} replica(s): creating ${KEYS} nodes and registrations…\n`,
      );
      await emulator.createNodes(KEYS);
      const rk = redisKeys(prefix);
      const pipeline = redis.pipeline();
      for (let i = 0; i < KEYS; i++) {
        const key = keyOf(i);
        pipeline.hset(
          rk.registrations(key),
          'unix:///run/gpu.sock',
          JSON.stringify({
            ...key,
            endpoint: 'unix:///run/gpu.sock',
            version: 'v1.ResourcePublisher',
            registeredAt: new Date().toISOString(),
            sequence: i + 1,
          }),
        );
        pipeline.zadd(rk.registrationIndex, 0, keyId(key));
      }
      await pipeline.exec();
      for (let r = 0; r < replicaCount; r++) {
        const replica = new ServiceProcess({
          app: 'slice-syncer',
          env: {
            REDIS_URL: redisServer.url,
            REDIS_PREFIX: prefix,
            KUBECONFIG: emulator.kubeconfigPath,
            PROBE_HOST: '127.0.0.1',
            PROBE_PORT: '0',
            SYNC_CONCURRENCY: String(CONCURRENCY),
            SYNC_WRITE_RATE: '1000000',
            SYNC_WRITE_BURST: '1000000',
            RESYNC_INTERVAL: '1h',
            LOG_LEVEL: 'warn',
          },
        });
        replicas.push(replica);
      }
      // LOG_LEVEL=warn hides 'started'; give the replicas a moment by waiting for their probes.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const all = Array.from({ length: KEYS }, (_, i) => i);
      const churned = all.filter((i) => i % 10 === 0);
      process.stdout.write('cold publish…\n');
      results.push(
        await runPhase('cold publish', replicaCount, redis, prefix, emulator, all, 1, 'snapshot'),
      );
      process.stdout.write('warm resync…\n');
      results.push(
        await runPhase(
          'warm resync (all equal)',
          replicaCount,
          redis,
          prefix,
          emulator,
          all,
          1,
          'resync',
        ),
      );
      process.stdout.write('10% churn…\n');
      results.push(
        await runPhase('10% churn', replicaCount, redis, prefix, emulator, churned, 2, 'snapshot'),
      );
      process.stdout.write('direct baseline…\n');
      // The floor runs against a fresh emulator process, as the cold publish did.
      const fresh = await Emulator.start(await mkdtemp(join(dir, 'baseline-')));
      const direct = await directBaseline(fresh, CONCURRENCY * replicaCount).finally(() =>
        fresh.process.stop(),
      );
      results.push(direct);
      const cold = results.find((r) => r.phase === 'cold publish' && r.replicas === replicaCount);
      if (cold !== undefined) {
        summaries.push(
          `${replicaCount} replica(s): cold throughput ${cold.keysPerSecond} keys/s = ${round2(cold.keysPerSecond / direct.keysPerSecond)} × the direct baseline (${direct.keysPerSecond} keys/s; goal ≥ 0.67)`,
        );
      }
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
      await emulator.process.stop();
      redis.disconnect();
      await redisServer.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }
  console.table(results);
  for (const line of summaries) process.stdout.write(`${line}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
