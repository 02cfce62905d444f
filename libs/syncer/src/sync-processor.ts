import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  inventorySnapshotSchema,
  keyId,
  redisKeys,
  syncStatusSchema,
} from '@slicekeeper/contracts';
import type {
  InventorySnapshot,
  PoolSummary,
  RedisKeys,
  SliceKey,
  SyncOutcome,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import { TerminalError, TransientError, errorMessage, isTerminal } from '@slicekeeper/errors';
import { InvalidDriverResourcesError, planSync } from '@slicekeeper/slices';
import type { StoredResourceSlice, SyncPlan } from '@slicekeeper/slices';
import { NodeMissingError } from './backoff';
import { KeyGuard } from './key-guard';
import type { SliceApi } from './slice-api';
import type { SyncerMetrics } from './syncer-metrics';

export interface SyncProcessorOptions {
  api: SliceApi;
  /** Reads snapshots and registrations, records statuses. */
  redis: Redis;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Taken before every API write (the cluster-wide write limit). */
  writeLimiter?: { acquire(): Promise<void> };
  metrics?: SyncerMetrics;
  logger: Logger;
  /** Injected for tests. @defaultValue `() => new Date()` */
  now?: () => Date;
  /** Re-list and re-plan this many times on a 409 before retrying with backoff. @defaultValue 3 */
  conflictRetries?: number;
  /**
   * Before creating slices a Node owns, a cached Node UID older than this is read again, ms, so
   * that a Node deleted since it was cached does not get new slices for the garbage collector.
   * 0: always. With many Nodes cached, a confirmation is one list of every Node's metadata at
   * most once a second (an answer up to a second old), not a GET per Node, so a cold start
   * stays at about one read per key.
   * @defaultValue 0
   */
  nodeConfirmAgeMs?: number;
  /** How long a crashed sync can hold its key's guard, ms. @defaultValue 60000 */
  guardTtlMs?: number;
}

export interface SyncContext {
  /** The BullMQ job id: the guard's holder. */
  jobId: string;
  /** 1 for the first attempt of this job. */
  attempt: number;
  reason: SyncReason;
}

/**
 * One sync of one key: read the key's latest snapshot, list its slices, plan with the pure
 * planner, apply (deletes, updates, creates) and record the outcome. Level-triggered: what the
 * job says does not matter beyond its key; the latest state in Redis does.
 *
 * Outcomes: transient failures are recorded as `retrying` and thrown (the worker retries with
 * backoff); terminal ones (invalid inventory, 403, 422) are recorded and not thrown (no retry
 * until something new arrives); a missing Node is recorded as `node-missing` and thrown as
 * {@link NodeMissingError} (slow retry).
 */
export class SyncProcessor {
  private readonly keys: RedisKeys;
  private readonly now: () => Date;
  private readonly guard: KeyGuard;

  constructor(private readonly options: SyncProcessorOptions) {
    this.keys = redisKeys(options.prefix);
    this.now = options.now ?? (() => new Date());
    this.guard = new KeyGuard(options.redis, options.guardTtlMs ?? 60_000);
  }

  async sync(key: SliceKey, context: SyncContext): Promise<SyncStatus> {
    const guardKey = this.keys.syncGuard(key);
    if (!(await this.guard.acquire(guardKey, context.jobId))) {
      this.options.metrics?.overlaps.inc();
      throw new TransientError(`sync of ${keyId(key)} is already running`, { code: 'overlap' });
    }
    try {
      return await this.run(key, context);
    } finally {
      await this.guard.release(guardKey, context.jobId);
    }
  }

  private async run(key: SliceKey, context: SyncContext): Promise<SyncStatus> {
    const { api, logger, metrics } = this.options;
    const log = logger.child({
      node: key.node,
      driver: key.driver,
      jobId: context.jobId,
      attempt: context.attempt,
    });
    const startedAt = this.now();
    const desired = await this.readDesired(key);
    const base = {
      startedAt,
      snapshotGeneration: desired.snapshot?.generation ?? 0,
      attempt: context.attempt,
    };
    let writes = 0;
    try {
      const pools = desired.snapshot?.inventory.pools ?? [];
      for (let round = 0; ; round++) {
        const existing = await api.listSlices(key);
        let nodeUid = '';
        if (key.node !== '' && pools.length > 0) {
          // The key's own slices name their Node's UID: a resync of an unchanged key then costs
          // one API read (the list). Only a key without slices asks for the Node.
          const uid = ownerNodeUid(existing, key.node) ?? (await api.getNodeUid(key.node));
          if (uid === undefined) throw new NodeMissingError(key.node);
          nodeUid = uid;
        }
        let plan = planSync({ node: key.node, nodeUid, driver: key.driver, pools, existing });
        if (nodeUid !== '' && plan.creates.length > 0) {
          // Creating slices owned by a Node that was deleted since we cached its UID would only
          // feed the garbage collector: confirm a cached Node first (creates are rare).
          const fresh = await api.getNodeUid(key.node, {
            maxAgeMs: this.options.nodeConfirmAgeMs ?? 0,
          });
          if (fresh === undefined) throw new NodeMissingError(key.node);
          if (fresh !== nodeUid) {
            nodeUid = fresh;
            plan = planSync({ node: key.node, nodeUid, driver: key.driver, pools, existing });
          }
        }
        try {
          const names = new Set(existing.map((s) => s.metadata.name));
          writes += await this.apply(plan, names);
          const outcome: SyncOutcome = pools.length === 0 ? 'withdrawn' : 'synced';
          const status = await this.record(
            key,
            { ...base, outcome, writes, slices: [...names].sort(), pools: summaries(plan) },
            desired.tombstoned,
          );
          log.debug({ outcome, writes, reason: context.reason }, 'synced');
          return status;
        } catch (error) {
          // A 409 means our view is stale (someone else wrote): re-read and re-plan promptly.
          if (isConflict(error) && round < (this.options.conflictRetries ?? 3)) {
            log.debug({ err: errorMessage(error) }, 'conflict, re-planning');
            continue;
          }
          throw error;
        }
      }
    } catch (error) {
      const outcome = outcomeOf(error);
      // What is published did not change: keep showing the last known slices and pools.
      const published = {
        slices: desired.previous?.slices ?? [],
        pools: desired.previous?.pools ?? [],
      };
      const status = await this.record(
        key,
        { ...base, ...published, outcome, writes, error: errorMessage(error) },
        false,
      );
      if (outcome === 'invalid' || outcome === 'failed') {
        log.warn({ err: errorMessage(error), outcome }, 'sync refused');
        return status;
      }
      if (error instanceof NodeMissingError) api.forgetNode(key.node);
      log.info({ err: errorMessage(error), outcome }, 'sync failed, will retry');
      throw error;
    } finally {
      metrics?.duration.observe((this.now().getTime() - startedAt.getTime()) / 1000);
    }
  }

  /** Executes a plan in upstream order; `names` tracks the key's slice names as it goes. */
  private async apply(plan: SyncPlan, names: Set<string>): Promise<number> {
    const { api, writeLimiter, metrics } = this.options;
    let writes = 0;
    for (const target of plan.deletes) {
      await writeLimiter?.acquire();
      await api.deleteSlice(target);
      names.delete(target.name);
      metrics?.sliceWrites.inc({ op: 'delete' });
      writes++;
    }
    for (const slice of plan.updates) {
      await writeLimiter?.acquire();
      await api.updateSlice(slice);
      metrics?.sliceWrites.inc({ op: 'update' });
      writes++;
    }
    for (const slice of plan.creates) {
      await writeLimiter?.acquire();
      const created = await api.createSlice(slice);
      names.add(created.metadata.name);
      metrics?.sliceWrites.inc({ op: 'create' });
      writes++;
    }
    return writes;
  }

  /**
   * The key's desired state: its snapshot, unless the plugin was removed (a tombstone and no
   * registration left). A snapshot without a registration is still published: after Redis lost
   * its data, a watcher rewrites the snapshots of its live streams before drivers re-register.
   */
  private async readDesired(key: SliceKey): Promise<Desired> {
    const { redis } = this.options;
    const [snapshotRaw, registrations, previousRaw] = await Promise.all([
      redis.get(this.keys.snapshot(key)),
      redis.hlen(this.keys.registrations(key)),
      redis.get(this.keys.syncStatus(key)),
    ]);
    const previousParsed =
      previousRaw === null ? undefined : syncStatusSchema.safeParse(JSON.parse(previousRaw));
    const previous = previousParsed?.success === true ? previousParsed.data : undefined;
    const tombstoned =
      registrations === 0 && (await redis.zscore(this.keys.tombstones, keyId(key))) !== null;
    if (snapshotRaw === null || tombstoned)
      return previous === undefined ? { tombstoned } : { tombstoned, previous };
    const parsed = inventorySnapshotSchema.safeParse(JSON.parse(snapshotRaw));
    if (!parsed.success) {
      throw new TerminalError(`corrupt snapshot of ${keyId(key)}: ${parsed.error.message}`, {
        code: 'invalid',
      });
    }
    return previous === undefined
      ? { snapshot: parsed.data, tombstoned }
      : { snapshot: parsed.data, tombstoned, previous };
  }

  private async record(
    key: SliceKey,
    fields: Omit<SyncStatus, 'finishedAt' | 'startedAt'> & { startedAt: Date },
    clearTombstone: boolean,
  ): Promise<SyncStatus> {
    const { redis, metrics } = this.options;
    const finishedAt = this.now();
    const status: SyncStatus = {
      ...fields,
      startedAt: fields.startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
    };
    await redis.set(this.keys.syncStatus(key), JSON.stringify(status));
    if (status.outcome === 'synced')
      await redis.zadd(this.keys.knownKeys, finishedAt.getTime(), keyId(key));
    if (status.outcome === 'withdrawn') {
      await redis.zrem(this.keys.knownKeys, keyId(key));
      await redis.zrem(this.keys.orphans, keyId(key));
      if (clearTombstone) await redis.zrem(this.keys.tombstones, keyId(key));
    }
    metrics?.syncs.inc({ outcome: status.outcome });
    return status;
  }
}

interface Desired {
  snapshot?: InventorySnapshot;
  /** The plugin was removed: withdraw, then forget the tombstone. */
  tombstoned: boolean;
  /** The key's last recorded status. */
  previous?: SyncStatus;
}

/** The UID of the Node that owns the key's slices, as their controller owner reference says. */
function ownerNodeUid(slices: readonly StoredResourceSlice[], node: string): string | undefined {
  for (const slice of slices) {
    for (const owner of slice.metadata.ownerReferences ?? []) {
      if (owner.kind === 'Node' && owner.name === node && owner.controller === true)
        return owner.uid;
    }
  }
  return undefined;
}

function summaries(plan: SyncPlan): PoolSummary[] {
  return plan.pools.map((p) => ({
    name: p.name,
    generation: p.generation,
    sliceCount: p.resourceSliceCount,
    devices: p.deviceCount,
  }));
}

function isConflict(error: unknown): boolean {
  return error instanceof TransientError && error.code === 'conflict';
}

function outcomeOf(error: unknown): SyncOutcome {
  if (error instanceof InvalidDriverResourcesError) return 'invalid';
  if (error instanceof NodeMissingError) return 'node-missing';
  if (error instanceof TerminalError && error.code === 'invalid') return 'invalid';
  return isTerminal(error) ? 'failed' : 'retrying';
}
