/**
 * Cold publish, warm resync and 10% churn of many keys through the slice-syncer replicas of a
 * whole System. Registrations, snapshots and sync jobs are written with the libs the
 * registration API and the plugin-watcher write them with (the watcher is stopped: 10,000 gRPC
 * streams would measure the bench's drivers, not the syncers).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import { keyId, syncStatusSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory, SliceKey, SyncReason, SyncStatus } from '@slicekeeper/contracts';
import { fromDriverInventory, toDriverInventory } from '@slicekeeper/proto';
import { SyncQueue, createNodeConditionQueue, createRedisConnection } from '@slicekeeper/queue';
import type { RedisClient } from '@slicekeeper/queue';
import { RegistrationStore, SnapshotWriter } from '@slicekeeper/state';
import type { StoreResult } from '@slicekeeper/state';
import { gpuInventory, inParallel } from '../src/harness';
import type { MemoryCgroup, ProductionTree, System } from '../src/harness';
import { round } from './stats';
import { monotonicUs } from './profile-phases';
import type { PhaseWindow } from './profile-phases';
import { progress, redisUsedMemory, startCounting, withSystem } from './support';
import type { ApiCalls, RedisCommandStats } from './support';

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
  /** Redis's INFO commandstats over the phase (every client, script internals included). */
  redis: RedisCommandStats;
  /** What the bench itself asked of Redis to tell when the phase ended (part of `redis`). */
  polling: StatusPolling;
  /**
   * With `quietPolling`: from the phase's start until the node conditions its syncs asked for
   * were written too, s; the phase's counts (CPU, API calls, syncs, Redis) run until then.
   */
  nodeConditionsSeconds?: number;
  /** The phase's window on the monotonic clock, for the profiles of a `BENCH_CPU_PROF` run. */
  window: PhaseWindow;
}

/** The bench's own reads while it waits for a phase to end. */
export interface StatusPolling {
  /** MGETs of sync statuses, and the statuses they read. */
  statusReads: number;
  statusesRead: number;
  /** Job-count reads of the sync queue (with `quietPolling`). */
  queuePolls: number;
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
  /** Runs the services compiled, as the images do. @defaultValue from their sources */
  production?: ProductionTree;
  /** Memory cgroups by service name (a pod's limit). @defaultValue none */
  memoryCgroups?: Readonly<Partial<Record<string, MemoryCgroup>>>;
  /** Extra settings of the registration API (e.g. a higher RATE_LIMIT_MAX). */
  apiEnv?: Record<string, string>;
  /** Names the System (its logs go to `reports/e2e/<name>/`). @defaultValue `bench-sync-<replicas>` */
  name?: string;
  /**
   * Wait for a phase's end by polling the queue's job counts until no job waits or runs, and
   * only then the keys' statuses. Polling every pending key's status each 200 ms (the default)
   * reads more from Redis at 50,000 keys than the syncs themselves do. @defaultValue false
   */
  quietPolling?: boolean;
  /** Runs once the system is up, before any Node or key exists (an empty cluster). */
  beforeNodes?: (system: System) => Promise<void>;
  /** Runs after the churn phase, every key published and synced. */
  afterPhases?: (
    system: System,
    keys: readonly SliceKey[],
    syncerMetrics: readonly string[],
    producer: Producer,
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
export function inventoryOf(key: SliceKey, rev: number): DriverInventory {
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
  const name = options.name ?? `bench-sync-${options.replicas}`;
  const phaseOptions = { quietPolling: options.quietPolling ?? false };
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
      ...(options.apiEnv === undefined ? {} : { apiEnv: options.apiEnv }),
      ...(options.production === undefined ? {} : { production: options.production }),
      ...(options.memoryCgroups === undefined ? {} : { memoryCgroups: options.memoryCgroups }),
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
      const measure = (
        phaseName: SyncPhaseResult['phase'],
        phaseKeys: readonly SliceKey[],
        reason: SyncReason,
      ): Promise<SyncPhaseResult> =>
        phase(system, metrics, producer, phaseName, phaseKeys, reason, undefined, phaseOptions);
      try {
        const memoryBefore = await redisUsedMemory(redis);
        progress(`sync ×${options.replicas}: registering ${keys.length} keys…`);
        await producer.register(keys);
        progress(`sync ×${options.replicas}: cold publish of ${keys.length} keys…`);
        const cold = await measure('cold', keys, 'snapshot');
        const memoryAfter = await redisUsedMemory(redis);
        progress(`sync ×${options.replicas}: warm resync of ${keys.length} keys…`);
        const warm = await measure('warm', keys, 'resync');
        const churned = keys.filter((_, i) => i % 10 === 0);
        progress(`sync ×${options.replicas}: 10% churn (${churned.length} keys)…`);
        const churn = await measure('churn', churned, 'snapshot');
        await options.afterPhases?.(system, keys, metrics, producer);
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
  readonly redis: RedisClient;
  /** Key id → the snapshot generation last stored. */
  readonly generations = new Map<string, number>();
  private readonly registrations: RegistrationStore;
  private readonly snapshots: SnapshotWriter;
  private readonly queue: SyncQueue;
  /** The syncers' node condition queue, only counted. */
  private readonly nodeConditions: Queue;

  constructor(redis: RedisClient) {
    this.redis = redis;
    this.registrations = new RegistrationStore({ redis, prefix: PREFIX });
    this.snapshots = new SnapshotWriter({ redis, prefix: PREFIX });
    this.queue = new SyncQueue({ connection: redis, prefix: PREFIX });
    this.nodeConditions = createNodeConditionQueue({ connection: redis, prefix: PREFIX });
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
   * What the plugin-watcher does when it opens the stream of a plugin that registered again and
   * the plugin sends the inventory it had: stores it again (equal to the stored one, so nothing
   * is written unless no sync has finished for it yet), asks for the sync it owes, if any, and
   * records the stream as streaming from `endpoint`. Returns what the store did.
   */
  async reopenStream(key: SliceKey, endpoint: string): Promise<StoreResult['kind']> {
    const id = keyId(key);
    const now = new Date();
    const rev = this.generations.get(id) ?? 0;
    const stored = await this.snapshots.store(key, endpoint, inventoryOf(key, rev), now);
    if (stored.kind === 'stored') this.generations.set(id, stored.generation);
    if (stored.kind === 'stored' || stored.kind === 'unsynced') {
      await this.enqueue(key, 'snapshot');
    }
    await this.snapshots.writeState(key, {
      state: 'streaming',
      endpoint,
      since: now.toISOString(),
      lastMessageAt: now.toISOString(),
      reconnects: 0,
    });
    return stored.kind;
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

  /** Sync jobs waiting, prioritized or running (not delayed): 0 once a phase has drained. */
  unfinished(): Promise<number> {
    return unfinishedJobs(this.queue.queue);
  }

  /** Node condition evaluations waiting, prioritized or running (not delayed). */
  unfinishedNodeConditions(): Promise<number> {
    return unfinishedJobs(this.nodeConditions);
  }

  enqueue(key: SliceKey, reason: SyncReason): Promise<void> {
    return this.queue.enqueue(key, reason);
  }

  /** Runs now every sync job that waits for its time (a key's scheduled resync absorbs an add). */
  async promoteDelayed(): Promise<void> {
    await this.queue.queue.promoteJobs();
  }

  async close(): Promise<void> {
    await this.nodeConditions.close();
    await this.queue.close();
  }
}

async function unfinishedJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'active');
  return (counts.waiting ?? 0) + (counts.prioritized ?? 0) + (counts.active ?? 0);
}

const VERSION = 'v1.ResourcePublisher';

/** How a phase waits for its end. */
export interface PhaseOptions {
  /** See {@link SyncRunOptions.quietPolling}. @defaultValue false */
  quietPolling?: boolean;
}

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
  options: PhaseOptions = {},
): Promise<SyncPhaseResult> {
  const stop = await startCounting(system.emulator, producer.redis, syncerMetrics);
  const fromUs = monotonicUs();
  const startedAt = Date.now();
  await inParallel(keys, SEED_PARALLEL, async (key) => {
    if (reason === 'snapshot') await producer.publish(key);
    await producer.enqueue(key, reason);
  });
  if (reason === 'resync') await producer.promoteDelayed();
  const polling: StatusPolling = { statusReads: 0, statusesRead: 0, queuePolls: 0 };
  const quiet = options.quietPolling === true;
  const drained = (async () => {
    if (quiet) await untilDrained(() => producer.unfinished(), polling);
    await untilSynced(producer, keys, startedAt, `${name} phase`, polling);
    return (Date.now() - startedAt) / 1000;
  })();
  const [seconds] = await Promise.all([drained, whileDraining?.()]);
  // The node conditions the phase's syncs asked for lag behind them: their work is the phase's.
  if (quiet) await untilDrained(() => producer.unfinishedNodeConditions(), polling);
  const settledSeconds = (Date.now() - startedAt) / 1000;
  // The syncs the phase's writes asked for through the watch count as the phase's.
  const { api: calls, syncs, cpuSeconds: cpu, redis: commands } = await stop();
  const window = { fromUs, toUs: monotonicUs() };
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
    redis: commands,
    polling,
    ...(quiet ? { nodeConditionsSeconds: round(settledSeconds, 2) } : {}),
    window,
  };
}

/** Polls a queue's job counts until no job waits or runs. */
export async function untilDrained(
  unfinished: () => Promise<number>,
  polling?: StatusPolling,
  timeoutMs = 1_800_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (polling !== undefined) polling.queuePolls++;
    if ((await unfinished()) === 0) return;
    if (Date.now() > deadline)
      throw new Error(`sync queue not drained after ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

/** Statuses read per MGET. */
const STATUS_BATCH = 2000;

/** The keys' sync statuses (undefined where none is recorded), in the keys' order. */
export async function readStatuses(
  redis: RedisClient,
  keys: readonly SliceKey[],
  polling?: StatusPolling,
): Promise<(SyncStatus | undefined)[]> {
  const rk = redisKeys(PREFIX);
  const statuses: (SyncStatus | undefined)[] = [];
  for (let i = 0; i < keys.length; i += STATUS_BATCH) {
    const batch = keys.slice(i, i + STATUS_BATCH);
    const raws = await redis.mget(...batch.map((key) => rk.syncStatus(key)));
    if (polling !== undefined) {
      polling.statusReads++;
      polling.statusesRead += batch.length;
    }
    for (const raw of raws) {
      statuses.push(raw === null ? undefined : syncStatusSchema.parse(JSON.parse(raw)));
    }
  }
  return statuses;
}

const TERMINAL = new Set(['invalid', 'failed', 'node-missing', 'withdrawn']);

/** Polls the keys' sync statuses (only those not done yet) until all are synced. */
async function untilSynced(
  producer: Producer,
  keys: readonly SliceKey[],
  since: number,
  what: string,
  polling: StatusPolling,
  timeoutMs = 600_000,
): Promise<void> {
  let pending = [...keys];
  const deadline = Date.now() + timeoutMs;
  while (pending.length > 0) {
    const statuses = await readStatuses(producer.redis, pending, polling);
    const still: SliceKey[] = [];
    pending.forEach((key, j) => {
      const status = statuses[j];
      if (status === undefined) {
        still.push(key);
        return;
      }
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
    pending = still;
    if (pending.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`${what}: ${pending.length} keys not synced after ${timeoutMs / 1000} s`);
    }
    await sleep(200);
  }
}
