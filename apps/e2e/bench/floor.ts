/**
 * The floor of the end-to-end latency: the two hops slicekeeper cannot avoid, measured bare
 * against the same Redis and the same emulator process as the system under test. A change
 * crosses the queue once (watcher → syncer) and makes one API write (syncer → apiserver); the
 * rest (gRPC stream, snapshot store, list, planning, status) is slicekeeper's overhead.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { round, summarize } from './stats';
import type { Summary } from './stats';
import { cpuSeconds } from './support';

export interface FloorResult {
  /** `Queue.add` → a plain Worker's processor runs, sequentially, ms. */
  queueRoundTrip: Summary;
  /** One ResourceSlice write (a create, then updates) over a keep-alive connection, ms. */
  apiWrite: Summary;
  /** p50 of the queue round trip + p50 of the API write, ms. */
  floorMs: number;
  /**
   * CPU per measured round, ms, by process as {@link cpuSeconds} names them: `bench` is the
   * client side (producer and Worker, HTTP client), the rest the servers (`redis`,
   * `kube-emulator`). Warm-up rounds are not counted.
   */
  cpuMsPerRound: { queueRoundTrip: Record<string, number>; apiWrite: Record<string, number> };
  /** How far apart its rounds were, ms (`FloorOptions.paceMs`); 0 when back to back. */
  paceMs: number;
}

/** CPU seconds so far per process, the bench's own read after the rest. */
async function cpuReading(): Promise<Record<string, number>> {
  const all = await cpuSeconds();
  // Reading /proc costs the bench CPU too: its own reading is taken after, so that a stretch
  // that starts with this reading does not count the reading itself.
  const own = process.cpuUsage();
  return { ...all, bench: (own.user + own.system) / 1e6 };
}

/** CPU ms per round of each process between two {@link cpuReading}s, unrounded seconds in. */
function cpuMsPer(
  before: Record<string, number>,
  after: Record<string, number>,
  rounds: number,
): Record<string, number> {
  const perRound: Record<string, number> = {};
  for (const name of ['bench', 'redis', 'kube-emulator']) {
    perRound[name] = round((((after[name] ?? 0) - (before[name] ?? 0)) * 1000) / rounds, 4);
  }
  return perRound;
}

export interface FloorOptions {
  redisUrl: string;
  emulatorUrl: string;
  /** An existing Node the floor's slice names. */
  node: string;
  samples: number;
  /** Unmeasured rounds first (JIT, connection set-up). @defaultValue 50 */
  warmup?: number;
  /**
   * Each round starts this long after the previous one ended, ms, as changes that come one at a
   * time do (10 at 100 changes/s); 0 runs them back to back. @defaultValue 0
   */
  paceMs?: number;
}

export async function measureFloor(options: FloorOptions): Promise<FloorResult> {
  const queue = await measureQueueRoundTrip(options);
  const api = await measureApiWrite(options);
  return {
    queueRoundTrip: queue.summary,
    apiWrite: api.summary,
    floorMs: round(queue.summary.p50 + api.summary.p50, 3),
    cpuMsPerRound: { queueRoundTrip: queue.cpuMsPerRound, apiWrite: api.cpuMsPerRound },
    paceMs: options.paceMs ?? 0,
  };
}

interface Measured {
  summary: Summary;
  cpuMsPerRound: Record<string, number>;
}

async function measureQueueRoundTrip(options: FloorOptions): Promise<Measured> {
  // A queue of its own (own name and prefix): the syncer's workers never see these jobs.
  const name = 'bench-floor';
  const prefix = '{bench-floor}';
  const connection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  const workerConnection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  let processing: ((at: number) => void) | undefined;
  let completed: (() => void) | undefined;
  const queue = new Queue(name, { connection, prefix });
  const worker = new Worker(
    name,
    () => {
      processing?.(performance.now());
      return Promise.resolve();
    },
    { connection: workerConnection, prefix, concurrency: 1 },
  );
  worker.on('completed', () => {
    completed?.();
  });
  try {
    await queue.waitUntilReady();
    await worker.waitUntilReady();
    const samples: number[] = [];
    const warmup = options.warmup ?? 50;
    const paceMs = options.paceMs ?? 0;
    let cpuBefore: Record<string, number> = {};
    for (let i = 0; i < warmup + options.samples; i++) {
      if (paceMs > 0) await sleep(paceMs);
      if (i === warmup) cpuBefore = await cpuReading();
      const ran = new Promise<number>((resolve) => (processing = resolve));
      const done = new Promise<void>((resolve) => (completed = resolve));
      const start = performance.now();
      await queue.add('ping', { i }, { removeOnComplete: true, removeOnFail: true });
      const at = await ran;
      // The next job starts once this one is completed: one job at a time, as measured.
      await done;
      if (i >= warmup) samples.push(at - start);
    }
    const cpuMsPerRound = cpuMsPer(cpuBefore, await cpuReading(), options.samples);
    return { summary: summarize(samples), cpuMsPerRound };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    connection.disconnect();
    workerConnection.disconnect();
  }
}

interface Answer {
  status: number;
  body: string;
}

async function measureApiWrite(options: FloorOptions): Promise<Measured> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const base = new URL(options.emulatorUrl);
  const request = (method: string, path: string, body?: unknown): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          host: base.hostname,
          port: base.port,
          method,
          path,
          agent,
          headers: {
            accept: 'application/json',
            ...(payload === undefined
              ? {}
              : {
                  'content-type': 'application/json',
                  'content-length': Buffer.byteLength(payload),
                }),
          },
          timeout: 10_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  const collection = '/apis/resource.k8s.io/v1/resourceslices';
  const name = `bench-floor-${process.pid}`;
  // The size of a slice the syncer writes for an 8-GPU node, not managed by slicekeeper.
  const slice = (rev: number, resourceVersion?: string) => ({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    spec: {
      driver: 'floor.example.com',
      nodeName: options.node,
      pool: { name: options.node, generation: 1, resourceSliceCount: 1 },
      devices: Array.from({ length: 8 }, (_, i) => ({
        name: `gpu-${i}`,
        attributes: {
          model: { string: 'H100-SXM5-80GB' },
          index: { int: i },
          rev: { int: rev },
        },
        capacity: { memory: { value: '80Gi' } },
      })),
    },
  });
  try {
    const samples: number[] = [];
    const warmup = options.warmup ?? 50;
    const paceMs = options.paceMs ?? 0;
    let resourceVersion: string | undefined;
    let cpuBefore: Record<string, number> = {};
    for (let i = 0; i < warmup + options.samples; i++) {
      if (paceMs > 0) await sleep(paceMs);
      if (i === warmup) cpuBefore = await cpuReading();
      const start = performance.now();
      const answer =
        resourceVersion === undefined
          ? await request('POST', collection, slice(i))
          : await request('PUT', `${collection}/${name}`, slice(i, resourceVersion));
      const elapsed = performance.now() - start;
      if (answer.status !== 200 && answer.status !== 201) {
        throw new Error(`floor write ${i}: ${answer.status} ${answer.body.slice(0, 300)}`);
      }
      resourceVersion = (JSON.parse(answer.body) as { metadata: { resourceVersion: string } })
        .metadata.resourceVersion;
      if (i >= warmup) samples.push(elapsed);
    }
    const cpuMsPerRound = cpuMsPer(cpuBefore, await cpuReading(), options.samples);
    return { summary: summarize(samples), cpuMsPerRound };
  } finally {
    await request('DELETE', `${collection}/${name}`).catch(() => undefined);
    agent.destroy();
  }
}
