/**
 * Cold publish, warm resync and 10% churn of many keys through the slice-syncer replicas of a
 * whole System. Registrations, snapshots and sync jobs are written with the libs the
 * registration API and the plugin-watcher write them with (the watcher is stopped: 10,000 gRPC
 * streams would measure the bench's drivers, not the syncers).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { keyId, syncStatusSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory, SliceKey, SyncReason } from '@slicekeeper/contracts';
import { fromDriverInventory, toDriverInventory } from '@slicekeeper/proto';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import { RegistrationStore, SnapshotWriter } from '@slicekeeper/state';
import type { Redis } from 'ioredis';
import { gpuInventory, inParallel } from '../src/harness';
import type { System } from '../src/harness';
import { round } from './stats';
import {
  apiCalls,
  callsSince,
  cpuSeconds,
  cpuSince,
  progress,
  redisUsedMemory,
  settledSyncs,
  syncsRun,
  withSystem,
} from './support';
import type { ApiCalls } from './support';

const PREFIX = 'sk';
/** The drivers of every node: two keys a node. */
export const DRIVERS = ['gpu.example.com', 'nic.example.com'] as const;
const endpointOf = (key: SliceKey): string => `unix:///var/lib/kubelet/plugins/${key.driver}.sock`;

export interface SyncPhaseResult {
  phase: 'cold' | 'warm' | 'churn';
  keys: number;
  seconds: number;
  keysPerSecond: number;
  writes: number;
  reads: number;
  readsPerKey: number;
  writesPerKey: number;
  /** Every API call during the phase (watch requests apart from reads). */
  api: ApiCalls;
  /** Syncs run by every replica during the phase: more than `keys` is syncs with nothing to do. */
  syncs: number;
  /** CPU seconds per process during the phase. */
  cpuSeconds: Record<string, number>;
}

export interface SyncRunResult {
  replicas: number;
  concurrency: number;
  keys: number;
  nodes: number;
  cold: SyncPhaseResult;
  warm: SyncPhaseResult;
  churn: SyncPhaseResult;
  /** Redis `used_memory` after the cold publish minus before seeding, per key. */
  redisBytesPerKey: number;
}

export interface SyncRunOptions {
  keys: number;
  replicas: number;
  concurrency: number;
  /** Extra settings of every slice-syncer replica (e.g. a fixed PROBE_PORT). */
  syncerEnv?: Record<string, string>;
  /** Runs once the system is up, before any Node or key exists (an empty cluster). */
  beforeNodes?: (system: System) => Promise<void>;
  /** Runs after the churn phase, every key published and synced. */
  afterPhases?: (
    system: System,
    keys: readonly SliceKey[],
    syncerMetrics: readonly string[],
  ) => Promise<void>;
}

/** 8 NICs, like `gpuInventory`'s 8 GPUs, with the same `rev` attribute. */
function nicInventory(rev: number): DriverInventory {
  return {
    pools: [
      {
        name: '',
        scope: { kind: 'node' },
        devices: Array.from({ length: 8 }, (_, i) => ({
          name: `nic-${i}`,
          attributes: {
            model: { string: 'ConnectX-7' },
            index: { int: i },
            rev: { int: rev },
          },
          capacity: { bandwidth: { value: '400G' } },
        })),
      },
    ],
  };
}

/** The key's inventory as the watcher stores it: sent over the wire and mapped back. */
function inventoryOf(key: SliceKey, rev: number): DriverInventory {
  const sent = key.driver === 'nic.example.com' ? nicInventory(rev) : gpuInventory({ rev });
  return toDriverInventory(fromDriverInventory(sent), { nodeName: key.node });
}

/** Redis round trips in flight at once when seeding. */
const SEED_PARALLEL = 64;

/** `count` keys over `node-<i>` nodes, two drivers each (the last node may have one). */
export function clusterKeys(count: number): { nodes: string[]; keys: SliceKey[] } {
  const nodeCount = Math.ceil(count / DRIVERS.length);
  const nodes = Array.from({ length: nodeCount }, (_, i) => `node-${i}`);
  const keys = nodes.flatMap((node) => DRIVERS.map((driver) => ({ node, driver }))).slice(0, count);
  return { nodes, keys };
}

/** A fresh System with `replicas` syncers; cold, warm and churn over `keys` keys. */
export function runSyncThroughput(options: SyncRunOptions): Promise<SyncRunResult> {
  const { nodes, keys } = clusterKeys(options.keys);
  const name = `bench-sync-${options.replicas}`;
  return withSystem(
    {
      name,
      nodes: [],
      syncerReplicas: options.replicas,
      syncerEnv: {
        SYNC_CONCURRENCY: String(options.concurrency),
        SYNC_WRITE_RATE: '1000000',
        SYNC_WRITE_BURST: '1000000',
        RESYNC_INTERVAL: '1h',
        // The anti-entropy relist (a list of every managed slice and Node) stays out of the
        // measured phases: it is a periodic cost, not a cost per sync.
        RELIST_INTERVAL: '1h',
        ...options.syncerEnv,
      },
    },
    async (system) => {
      // The bench plays the watcher's part, so that nothing but the syncers acts on the keys.
      await system.stopService('plugin-watcher');
      await options.beforeNodes?.(system);
      const metrics = await system.syncerMetricsUrls();
      progress(`sync ×${options.replicas}: creating ${nodes.length} nodes…`);
      await system.emulator.createNodes(nodes, 32);
      const redis = createRedisConnection({
        target: { kind: 'server', url: system.redis.url },
        connectionName: 'bench',
      });
      const producer = new Producer(redis);
      try {
        const memoryBefore = await redisUsedMemory(redis);
        progress(`sync ×${options.replicas}: registering ${keys.length} keys…`);
        await producer.register(keys);
        progress(`sync ×${options.replicas}: cold publish of ${keys.length} keys…`);
        const cold = await phase(system, metrics, producer, 'cold', keys, 'snapshot');
        const memoryAfter = await redisUsedMemory(redis);
        progress(`sync ×${options.replicas}: warm resync of ${keys.length} keys…`);
        const warm = await phase(system, metrics, producer, 'warm', keys, 'resync');
        const churned = keys.filter((_, i) => i % 10 === 0);
        progress(`sync ×${options.replicas}: 10% churn (${churned.length} keys)…`);
        const churn = await phase(system, metrics, producer, 'churn', churned, 'snapshot');
        await options.afterPhases?.(system, keys, metrics);
        return {
          replicas: options.replicas,
          concurrency: options.concurrency,
          keys: keys.length,
          nodes: nodes.length,
          cold,
          warm,
          churn,
          redisBytesPerKey: Math.round((memoryAfter - memoryBefore) / keys.length),
        };
      } finally {
        await producer.close();
        redis.disconnect();
      }
    },
  );
}

/**
 * What the registration API and the plugin-watcher write for a key, written with their own libs:
 * registrations, snapshots and stream states, sync jobs.
 */
export class Producer {
  readonly redis: Redis;
  /** Key id → the snapshot generation last stored. */
  readonly generations = new Map<string, number>();
  private readonly registrations: RegistrationStore;
  private readonly snapshots: SnapshotWriter;
  private readonly queue: SyncQueue;

  constructor(redis: Redis) {
    this.redis = redis;
    this.registrations = new RegistrationStore({ redis, prefix: PREFIX });
    this.snapshots = new SnapshotWriter({ redis, prefix: PREFIX });
    this.queue = new SyncQueue({ connection: redis, prefix: PREFIX });
  }

  register(keys: readonly SliceKey[]): Promise<void> {
    return inParallel(keys, SEED_PARALLEL, async (key) => {
      await this.registrations.add({ ...key, endpoint: endpointOf(key), version: VERSION });
    });
  }

  /** Stores the key's next inventory (every device's rev = the count of stores) as streaming. */
  async publish(key: SliceKey): Promise<void> {
    const id = keyId(key);
    const rev = (this.generations.get(id) ?? 0) + 1;
    const now = new Date();
    const stored = await this.snapshots.store(key, endpointOf(key), inventoryOf(key, rev), now);
    if (stored.kind !== 'stored') throw new Error(`storing ${id}'s snapshot: ${stored.kind}`);
    this.generations.set(id, stored.generation);
    await this.snapshots.writeState(key, {
      state: 'streaming',
      endpoint: endpointOf(key),
      since: now.toISOString(),
      lastMessageAt: now.toISOString(),
      reconnects: 0,
    });
  }

  /**
   * Records the key's stream as lost at `since`, as the watcher does when a stream fails (an
   * error, not EOF): its devices are tainted `driver-unreachable` at the key's next sync.
   */
  loseStream(key: SliceKey, since: Date): Promise<void> {
    return this.snapshots.writeState(key, {
      state: 'backoff',
      endpoint: endpointOf(key),
      since: since.toISOString(),
      reconnects: 1,
      unreachableSince: since.toISOString(),
    });
  }

  /** Sync jobs ready to run and not yet taken (waiting and prioritized; not delayed or active). */
  async backlog(): Promise<number> {
    const counts = await this.queue.queue.getJobCounts('waiting', 'prioritized');
    return (counts.waiting ?? 0) + (counts.prioritized ?? 0);
  }

  enqueue(key: SliceKey, reason: SyncReason): Promise<void> {
    return this.queue.enqueue(key, reason);
  }

  /** Runs now every sync job that waits for its time (a key's scheduled resync absorbs an add). */
  async promoteDelayed(): Promise<void> {
    await this.queue.queue.promoteJobs();
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

const VERSION = 'v1.ResourcePublisher';

/**
 * One phase: for a `snapshot` phase, each key's next inventory is stored as the watcher stores
 * it; then a sync job per key is enqueued, and the phase ends when every key's status is synced
 * for its latest snapshot generation and newer than the start. `whileDraining` runs once every
 * job is enqueued, alongside the drain; the phase also waits for it, but its time is the drain's.
 */
export async function phase(
  system: System,
  syncerMetrics: readonly string[],
  producer: Producer,
  name: SyncPhaseResult['phase'],
  keys: readonly SliceKey[],
  reason: SyncReason,
  whileDraining?: () => Promise<void>,
): Promise<SyncPhaseResult> {
  const before = await apiCalls(system.emulator);
  const syncsBefore = await syncsRun(syncerMetrics);
  const cpuBefore = await cpuSeconds();
  const startedAt = Date.now();
  await inParallel(keys, SEED_PARALLEL, async (key) => {
    if (reason === 'snapshot') await producer.publish(key);
    await producer.enqueue(key, reason);
  });
  if (reason === 'resync') await producer.promoteDelayed();
  const drained = untilSynced(producer, keys, startedAt, `${name} phase`).then(
    () => (Date.now() - startedAt) / 1000,
  );
  const [seconds] = await Promise.all([drained, whileDraining?.()]);
  const cpu = cpuSince(cpuBefore, await cpuSeconds());
  // The syncs the phase's writes asked for through the watch count as the phase's.
  const syncs = (await settledSyncs(syncerMetrics)) - syncsBefore;
  const calls = callsSince(before, await apiCalls(system.emulator));
  return {
    phase: name,
    keys: keys.length,
    seconds: round(seconds, 2),
    keysPerSecond: Math.round(keys.length / seconds),
    writes: calls.writes,
    reads: calls.reads,
    readsPerKey: round(calls.reads / keys.length, 3),
    writesPerKey: round(calls.writes / keys.length, 3),
    api: calls,
    syncs,
    cpuSeconds: cpu,
  };
}

const TERMINAL = new Set(['invalid', 'failed', 'node-missing', 'withdrawn']);

/** Polls the keys' sync statuses (only those not done yet) until all are synced. */
async function untilSynced(
  producer: Producer,
  keys: readonly SliceKey[],
  since: number,
  what: string,
  timeoutMs = 600_000,
): Promise<void> {
  const rk = redisKeys(PREFIX);
  let pending = [...keys];
  const deadline = Date.now() + timeoutMs;
  while (pending.length > 0) {
    const still: SliceKey[] = [];
    for (let i = 0; i < pending.length; i += 2000) {
      const batch = pending.slice(i, i + 2000);
      const raws = await producer.redis.mget(...batch.map((key) => rk.syncStatus(key)));
      batch.forEach((key, j) => {
        const raw = raws[j];
        if (raw === null || raw === undefined) {
          still.push(key);
          return;
        }
        const status = syncStatusSchema.parse(JSON.parse(raw));
        const generation = producer.generations.get(keyId(key));
        const current =
          Date.parse(status.finishedAt) >= since && status.snapshotGeneration === generation;
        if (current && TERMINAL.has(status.outcome)) {
          throw new Error(
            `${what}: ${keyId(key)} ended ${status.outcome}: ${status.error ?? 'no error'}`,
          );
        }
        if (!current || status.outcome !== 'synced') still.push(key);
      });
    }
    pending = still;
    if (pending.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`${what}: ${pending.length} keys not synced after ${timeoutMs / 1000} s`);
    }
    await sleep(200);
  }
}
