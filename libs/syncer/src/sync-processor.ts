import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bringsNews, keyId } from '@slicekeeper/contracts';
import type {
  InventorySnapshot,
  PoolSummary,
  SliceKey,
  SyncOutcome,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import { TerminalError, TransientError, errorMessage, isTerminal } from '@slicekeeper/errors';
import { InvalidDriverResourcesError, planSync } from '@slicekeeper/slices';
import type { StoredResourceSlice, SyncPlan } from '@slicekeeper/slices';
import { CorruptRecordError, SyncRecords } from '@slicekeeper/state';
import type { SyncTurn, WriteRateLimiter } from '@slicekeeper/state';
import { NodeMissingError, RemovalPendingError } from './backoff';
import type { SliceApi } from './slice-api';
import type { SyncerMetrics } from './syncer-metrics';

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
  private readonly now: () => Date;
  private readonly records: SyncRecords;

  constructor(private readonly options: SyncProcessorOptions) {
    this.now = options.now ?? (() => new Date());
    this.records = new SyncRecords({
      redis: options.redis,
      prefix: options.prefix,
      guardTtlMs: options.guardTtlMs,
    });
  }

  /**
   * Syncs the key; returns the recorded status, or undefined when a registration's sync found no
   * inventory to publish yet (nothing written, nothing recorded).
   */
  async sync(key: SliceKey, context: SyncContext): Promise<SyncStatus | undefined> {
    // A sync that brings news nearly always writes: it asks for its first write token along
    // with its reads, not after planning (each hop costs about a millisecond on a small
    // machine). A token it does not use is lost, never overspent. Other syncs take tokens as
    // they write.
    const news = bringsNews(context.reason);
    const prepay = news ? this.options.writeLimiter : undefined;
    const turn = await this.records.begin(key, {
      holder: context.jobId,
      withSlices: news,
      also: (pipeline) => {
        prepay?.queueAcquire(pipeline);
      },
    });
    if (turn === undefined) {
      this.options.metrics?.overlaps.inc();
      throw new TransientError(`sync of ${keyId(key)} is already running`, { code: 'overlap' });
    }
    try {
      return await this.run(key, context, turn);
    } finally {
      // Recording the outcome released the guard, unless the sync failed before it got there.
      await turn.release();
    }
  }

  private async run(
    key: SliceKey,
    context: SyncContext,
    turn: SyncTurn,
  ): Promise<SyncStatus | undefined> {
    const { api, logger, metrics } = this.options;
    const log = logger.child({
      node: key.node,
      driver: key.driver,
      jobId: context.jobId,
      attempt: context.attempt,
    });
    const startedAt = this.now();
    const [tokenReply] = turn.extra;
    let desired: Desired | undefined;
    const base = () => ({
      startedAt,
      snapshotGeneration: desired?.snapshot?.generation ?? 0,
      attempt: context.attempt,
    });
    let writes = 0;
    try {
      desired = readDesired(key, turn, startedAt);
      if (desired.pendingRemoval !== undefined) throw desired.pendingRemoval;
      if (context.reason === 'registered' && !desired.unregistered && !desired.snapshot) {
        // A registration's sync publishes the snapshot a re-registered driver kept. Without one
        // the driver has sent nothing yet (or Redis lost it): what is published stays, and the
        // watcher's first store asks for the sync that publishes it.
        log.debug('registered, no inventory yet: nothing to do');
        return undefined;
      }
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
      let recorded = news ? turn.recordedSlices() : undefined;
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
            turn,
            {
              ...base(),
              outcome,
              writes,
              slices: [...published.keys()].sort(),
              pools: summaries(plan),
            },
            { forgetSnapshot: desired.unregistered, slices: [...published.values()] },
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
      const previous = turn.previousStatus();
      const published = { slices: previous?.slices ?? [], pools: previous?.pools ?? [] };
      const status = await this.record(turn, {
        ...base(),
        ...published,
        outcome,
        writes,
        error: errorMessage(error),
      });
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

  /** Records the outcome (see `SyncTurn.finish`), which releases the key's guard. */
  private async record(
    turn: SyncTurn,
    fields: Omit<SyncStatus, 'finishedAt' | 'startedAt'> & { startedAt: Date },
    options: { forgetSnapshot?: boolean; slices?: readonly StoredResourceSlice[] } = {},
  ): Promise<SyncStatus> {
    const status: SyncStatus = {
      ...fields,
      startedAt: fields.startedAt.toISOString(),
      finishedAt: this.now().toISOString(),
    };
    await turn.finish(status, options);
    this.options.metrics?.syncs.inc({ outcome: status.outcome });
    return status;
  }
}

/**
 * The key's desired state: its snapshot while it has a registration, nothing otherwise. A key
 * without a registration is never published, whatever snapshot it still has: after Redis lost
 * its data the watchers restore the registrations of their live streams together with the
 * snapshots. While a removal's grace runs (a driver that deregistered may register again), its
 * slices are kept as they are.
 */
function readDesired(key: SliceKey, turn: SyncTurn, now: Date): Desired {
  if (!turn.registered()) {
    const remainingMs = (turn.removal()?.withdrawAt ?? 0) - now.getTime();
    return remainingMs > 0
      ? { unregistered: true, pendingRemoval: new RemovalPendingError(keyId(key), remainingMs) }
      : { unregistered: true };
  }
  return { unregistered: false, snapshot: turn.snapshot() };
}

interface Desired {
  snapshot?: InventorySnapshot;
  /** The key has no registration: withdraw, then forget its snapshot. */
  unregistered: boolean;
  /** The key's removal grace runs: keep its slices, look again when it ends. */
  pendingRemoval?: RemovalPendingError;
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
  if (error instanceof CorruptRecordError) return 'corrupt';
  if (error instanceof NodeMissingError) return 'node-missing';
  if (error instanceof TerminalError && error.code === 'invalid') return 'invalid';
  return isTerminal(error) ? 'failed' : 'retrying';
}
