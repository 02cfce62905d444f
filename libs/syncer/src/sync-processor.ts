import type { ChainableCommander, Redis } from 'ioredis';
import type { Logger } from 'pino';
import {
  bringsNews,
  inventorySnapshotSchema,
  keyId,
  redisKeys,
  removalSchema,
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
import { LuaScript, replyOf } from '@slicekeeper/queue';
import type { PipelineReply } from '@slicekeeper/queue';
import { InvalidDriverResourcesError, planSync } from '@slicekeeper/slices';
import type { StoredResourceSlice, SyncPlan } from '@slicekeeper/slices';
import { NodeMissingError, RemovalPendingError } from './backoff';
import { KeyGuard } from './key-guard';
import type { HeldGuard } from './key-guard';
import { queueSyncedRead, queueSyncedWrite, slicesForEpoch, toSyncedRecord } from './synced-slices';
import type { SyncedRecord } from './synced-slices';
import type { SliceApi } from './slice-api';
import type { SyncerMetrics } from './syncer-metrics';
import type { WriteRateLimiter } from './write-rate-limiter';

export interface SyncProcessorOptions {
  api: SliceApi;
  /** Reads snapshots and registrations, records statuses, holds the keys' sync guards. */
  redis: Redis;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Taken before every API write (the cluster-wide write limit). */
  writeLimiter?: WriteRateLimiter;
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
 * One sync of one key: read the key's latest snapshot, list its slices (a changed inventory
 * takes them from the previous sync's record instead, see `synced-slices.ts`), plan with the
 * pure planner, apply (deletes, updates, creates) and record the outcome. Level-triggered: what
 * the job says does not matter beyond its key; the latest state in Redis does.
 *
 * Outcomes: transient failures are recorded as `retrying` and thrown (the worker retries with
 * backoff); terminal ones (invalid inventory, 403, 422) are recorded and not thrown (no retry
 * until something new arrives); a missing Node is recorded as `node-missing` and thrown as
 * {@link NodeMissingError} (slow retry).
 *
 * Redis sees two round trips per sync: one takes the key's guard and reads the key, one records
 * the outcome and releases the guard (plus one per API write after the first, for the
 * cluster-wide write limit).
 * Both are pipelines, not transactions or scripts: the global indexes they touch live in other
 * hash slots than the key's records.
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
    // A sync that brings news nearly always writes: it asks for its first write token along
    // with its reads, not after planning (each hop costs about a millisecond on a small
    // machine). A token it does not use is lost, never overspent. Other syncs take tokens as
    // they write.
    const news = bringsNews(context.reason);
    const prepay = news ? this.options.writeLimiter : undefined;
    const taken = await this.guard.acquireWith(
      this.keys.syncGuard(key),
      this.keys.syncEpoch(key),
      context.jobId,
      (pipeline) => {
        this.queueReads(pipeline, key, news);
        prepay?.queueAcquire(pipeline);
      },
    );
    if (taken === undefined) {
      this.options.metrics?.overlaps.inc();
      throw new TransientError(`sync of ${keyId(key)} is already running`, { code: 'overlap' });
    }
    try {
      return await this.run(key, context, taken);
    } finally {
      // Recording the outcome released the guard, unless the sync failed before it got there.
      await taken.guard.release();
    }
  }

  private async run(
    key: SliceKey,
    context: SyncContext,
    { guard, epoch, replies }: { guard: HeldGuard; epoch: number; replies: PipelineReply[] },
  ): Promise<SyncStatus> {
    const { api, logger, metrics } = this.options;
    const log = logger.child({
      node: key.node,
      driver: key.driver,
      jobId: context.jobId,
      attempt: context.attempt,
    });
    const startedAt = this.now();
    const reads = replies.slice(0, READS);
    const tokenReply = replies[READS];
    let desired: Desired | undefined;
    const base = () => ({
      startedAt,
      snapshotGeneration: desired?.snapshot?.generation ?? 0,
      attempt: context.attempt,
    });
    let writes = 0;
    try {
      desired = this.readDesired(key, reads, startedAt);
      if (desired.pendingRemoval !== undefined) throw desired.pendingRemoval;
      if (desired.snapshot?.rejected !== undefined) {
        throw new TerminalError(desired.snapshot.rejected, { code: 'invalid' });
      }
      const pools = desired.snapshot?.inventory?.pools ?? [];
      let prepaid =
        tokenReply === undefined ? undefined : this.options.writeLimiter?.settle(tokenReply);
      prepaid?.catch(() => undefined);
      // News is planned from the slices the key's previous sync left, when that sync was the
      // last to run; a periodic resync always lists, the safety net for changes made behind our
      // back. A stale record costs a 409 (updates and deletes carry preconditions), never a
      // wrong write: creates are only ever planned from a list.
      const news = bringsNews(context.reason);
      let recorded = news ? slicesForEpoch(desired.synced, epoch) : undefined;
      if (news)
        metrics?.syncedSlices.inc({ result: recorded === undefined ? 'listed' : 'recorded' });
      let replans = 0;
      for (;;) {
        const fromRecord = recorded !== undefined;
        const existing = recorded ?? (await api.listSlices(key));
        recorded = undefined;
        let nodeUid = '';
        if (key.node !== '' && pools.length > 0) {
          // The key's own slices name their Node's UID: a resync of an unchanged key then costs
          // one API read (the list). Only a key without slices asks for the Node.
          const uid = ownerNodeUid(existing, key.node) ?? (await api.getNodeUid(key.node));
          if (uid === undefined) throw new NodeMissingError(key.node);
          nodeUid = uid;
        }
        let plan = planSync({ node: key.node, nodeUid, driver: key.driver, pools, existing });
        // A slice created by a sync whose record was lost (a crash, Redis losing its last
        // second) would be created twice: list first.
        if (fromRecord && plan.creates.length > 0) continue;
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
          const published = new Map(existing.map((s) => [s.metadata.name, s]));
          const token = prepaid;
          prepaid = undefined;
          writes += await this.apply(plan, published, token);
          const outcome: SyncOutcome = pools.length === 0 ? 'withdrawn' : 'synced';
          const status = await this.record(
            key,
            guard,
            {
              ...base(),
              outcome,
              writes,
              slices: [...published.keys()].sort(),
              pools: summaries(plan),
            },
            {
              forgetSnapshot: desired.unregistered,
              synced: { epoch, slices: [...published.values()], recorded: desired.synced },
            },
          );
          log.debug({ outcome, writes, reason: context.reason }, 'synced');
          return status;
        } catch (error) {
          // A 409, or a 404 on an update, means our view is stale (someone else wrote, or the
          // garbage collector deleted the slice): re-read and re-plan promptly.
          if (isStale(error) && replans++ < (this.options.conflictRetries ?? 3)) {
            log.debug({ err: errorMessage(error) }, 'stale view, re-planning');
            continue;
          }
          throw error;
        }
      }
    } catch (error) {
      const outcome = outcomeOf(error);
      // What is published did not change: keep showing the last known slices and pools.
      const previous = parseStatus(previousStatusOf(reads));
      const published = { slices: previous?.slices ?? [], pools: previous?.pools ?? [] };
      const status = await this.record(
        key,
        guard,
        { ...base(), ...published, outcome, writes, error: errorMessage(error) },
        { forgetSnapshot: false },
      );
      if (outcome === 'invalid' || outcome === 'failed' || outcome === 'corrupt') {
        log.warn({ err: errorMessage(error), outcome }, 'sync refused');
        return status;
      }
      if (error instanceof NodeMissingError) api.forgetNode(key.node);
      if (error instanceof RemovalPendingError) {
        log.debug({ withdrawInMs: error.retryAfterMs }, 'removal pending');
        throw error;
      }
      log.info({ err: errorMessage(error), outcome }, 'sync failed, will retry');
      throw error;
    } finally {
      metrics?.duration.observe((this.now().getTime() - startedAt.getTime()) / 1000);
    }
  }

  /**
   * Executes a plan in upstream order; `published` tracks the key's slices by name as the API
   * server returns them. The first write spends the `prepaid` write token, if any; every other
   * write takes one.
   */
  private async apply(
    plan: SyncPlan,
    published: Map<string, StoredResourceSlice>,
    prepaid: Promise<void> | undefined,
  ): Promise<number> {
    const { api, metrics } = this.options;
    let token = prepaid;
    const takeToken = async (): Promise<void> => {
      const next = token ?? this.options.writeLimiter?.acquire();
      token = undefined;
      await next;
    };
    let writes = 0;
    for (const target of plan.deletes) {
      await takeToken();
      await api.deleteSlice(target);
      published.delete(target.name);
      metrics?.sliceWrites.inc({ op: 'delete' });
      writes++;
    }
    for (const slice of plan.updates) {
      await takeToken();
      const updated = await api.updateSlice(slice);
      published.set(updated.metadata.name, updated);
      metrics?.sliceWrites.inc({ op: 'update' });
      writes++;
    }
    for (const slice of plan.creates) {
      await takeToken();
      const created = await api.createSlice(slice);
      published.set(created.metadata.name, created);
      metrics?.sliceWrites.inc({ op: 'create' });
      writes++;
    }
    return writes;
  }

  /**
   * Adds what {@link readDesired} reads ({@link READS} commands, in this order) to the pipeline
   * that takes the guard; the recorded slices themselves only `withSlices`.
   */
  private queueReads(pipeline: ChainableCommander, key: SliceKey, withSlices: boolean): void {
    pipeline
      .get(this.keys.snapshot(key))
      .hlen(this.keys.registrations(key))
      .get(this.keys.syncStatus(key))
      .get(this.keys.removal(key));
    queueSyncedRead(pipeline, this.keys.syncedSlices(key), withSlices);
  }

  /**
   * The key's desired state, from the replies to {@link queueReads}: its snapshot while it has a
   * registration, nothing otherwise. A key without a registration is never published, whatever
   * snapshot it still has: after Redis lost its data the watchers restore the registrations of
   * their live streams together with the snapshots. While a removal's grace runs (a driver that
   * deregistered may register again), its slices are kept as they are. Also what the last
   * successful sync recorded.
   */
  private readDesired(key: SliceKey, reads: PipelineReply[], now: Date): Desired {
    const [snapshotRaw, registrations, , removalRaw, syncedReply] = reads.map(replyOf) as [
      string | null,
      number,
      string | null,
      string | null,
      unknown,
    ];
    const synced = toSyncedRecord(syncedReply);
    const unregistered = registrations === 0;
    const known = { unregistered, synced };
    if (unregistered) {
      const removal =
        removalRaw === null ? undefined : removalSchema.safeParse(parseJsonOrUndefined(removalRaw));
      if (removal !== undefined && !removal.success) {
        throw new TerminalError(`corrupt removal of ${keyId(key)}: ${removal.error.message}`, {
          code: 'corrupt-record',
        });
      }
      const remainingMs = (removal?.data.withdrawAt ?? 0) - now.getTime();
      return remainingMs > 0
        ? { ...known, pendingRemoval: new RemovalPendingError(keyId(key), remainingMs) }
        : known;
    }
    if (snapshotRaw === null) return known;
    const parsed = inventorySnapshotSchema.safeParse(parseJsonOrUndefined(snapshotRaw));
    if (!parsed.success) {
      throw new TerminalError(`corrupt snapshot of ${keyId(key)}: ${parsed.error.message}`, {
        code: 'corrupt-record',
      });
    }
    return { ...known, snapshot: parsed.data };
  }

  /**
   * Records the outcome: the key's status, the indexes the outcome changes and, after a success,
   * the slices it left (`synced`), sent in one round trip with the release of the key's guard.
   */
  private async record(
    key: SliceKey,
    guard: HeldGuard,
    fields: Omit<SyncStatus, 'finishedAt' | 'startedAt'> & { startedAt: Date },
    {
      forgetSnapshot,
      synced,
    }: {
      forgetSnapshot: boolean;
      synced?: { epoch: number; slices: StoredResourceSlice[]; recorded: SyncedRecord };
    },
  ): Promise<SyncStatus> {
    const finishedAt = this.now();
    const status: SyncStatus = {
      ...fields,
      startedAt: fields.startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
    };
    const id = keyId(key);
    await guard.releaseWith((pipeline) => {
      pipeline.set(this.keys.syncStatus(key), JSON.stringify(status));
      if (synced !== undefined) {
        const { epoch, slices, recorded } = synced;
        queueSyncedWrite(pipeline, this.keys.syncedSlices(key), epoch, slices, recorded);
      }
      if (status.outcome === 'synced') pipeline.zadd(this.keys.knownKeys, finishedAt.getTime(), id);
      if (status.outcome === 'withdrawn') {
        pipeline.zrem(this.keys.knownKeys, id).zrem(this.keys.orphans, id);
        // The slices of a removed key are gone: so is its snapshot, unless it registered again
        // meanwhile. A registration then publishes from a fresh stream, never from this one.
        if (forgetSnapshot) {
          FORGET_SNAPSHOT.queue(
            pipeline,
            [this.keys.registrations(key), this.keys.snapshot(key)],
            [],
          );
        }
      }
    });
    this.options.metrics?.syncs.inc({ outcome: status.outcome });
    return status;
  }
}

/** How many replies {@link SyncProcessor.queueReads} asks for. */
const READS = 5;

/* KEYS: registrations, snapshot. Deletes the snapshot of a key that has no registration. */
const FORGET_SNAPSHOT = new LuaScript(
  `if redis.call('HLEN', KEYS[1]) == 0 then return redis.call('DEL', KEYS[2]) end
return 0`,
  2,
);

interface Desired {
  snapshot?: InventorySnapshot;
  /** The key has no registration: withdraw, then forget its snapshot. */
  unregistered: boolean;
  /** The key's removal grace runs: keep its slices, look again when it ends. */
  pendingRemoval?: RemovalPendingError;
  /** What the key's last successful sync recorded it left. */
  synced: SyncedRecord;
}

/** The key's last recorded status as read (parsed only when a sync fails); null if unreadable. */
function previousStatusOf(reads: readonly PipelineReply[]): string | null {
  const [error, result] = reads[2] ?? [null, null];
  return error === null && typeof result === 'string' ? result : null;
}

/**
 * A recorded status; undefined when there is none or it is unreadable, which only loses what a
 * failed sync shows as still published.
 */
function parseStatus(raw: string | null): SyncStatus | undefined {
  if (raw === null) return undefined;
  const parsed = syncStatusSchema.safeParse(parseJsonOrUndefined(raw));
  return parsed.success ? parsed.data : undefined;
}

/** `text` as JSON; undefined (which no schema accepts) when it is not JSON. */
function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
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

/** A 409, or a 404 of a write (deletes treat 404 as done): the slices changed since read. */
function isStale(error: unknown): boolean {
  return (
    (error instanceof TransientError && error.code === 'conflict') ||
    (error instanceof TerminalError && error.code === 'not-found')
  );
}

function outcomeOf(error: unknown): SyncOutcome {
  if (error instanceof InvalidDriverResourcesError) return 'invalid';
  if (error instanceof RemovalPendingError) return 'removing';
  if (error instanceof TerminalError && error.code === 'corrupt-record') return 'corrupt';
  if (error instanceof NodeMissingError) return 'node-missing';
  if (error instanceof TerminalError && error.code === 'invalid') return 'invalid';
  return isTerminal(error) ? 'failed' : 'retrying';
}
