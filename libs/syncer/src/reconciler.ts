import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { bringsNews, keyId } from '@slicekeeper/contracts';
import type {
  InventorySnapshot,
  PoolSummary,
  PublishedTaints,
  SliceKey,
  StreamState,
  SyncOutcome,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import { TerminalError, TransientError, errorMessage, isTerminal } from '@slicekeeper/errors';
import {
  InvalidDriverResourcesError,
  TAINT_CONDITIONS,
  applyLifecycleTaints,
  droppedFields,
  formatFieldError,
  planSync,
  semanticEqual,
  summarizeDroppedFields,
  withoutFields,
} from '@slicekeeper/slices';
import type {
  DroppedField,
  HealthTaintPolicy,
  LayoutRules,
  ResourceSlice,
  StoredResourceSlice,
  SyncPlan,
} from '@slicekeeper/slices';
import { kubeErrorCode } from '@slicekeeper/kube';
import { CorruptRecordError } from '@slicekeeper/state';
import type { SyncTurn } from '@slicekeeper/state';
import { NodeMissingError, RemovalPendingError } from './backoff';
import type { KeyEventInput } from './key-events';
import type { ClusterView, SliceApi } from './slice-api';
import type { SyncerMetrics } from './syncer-metrics';

/** One sync's hold on its key's records (`SyncTurn` of libs/state). */
export type KeyTurn = Pick<
  SyncTurn,
  | 'registered'
  | 'snapshot'
  | 'removal'
  | 'streamState'
  | 'previousStatus'
  | 'finish'
  | 'release'
  | 'prepaidWrite'
>;

export interface ReconcilerOptions {
  /** The key's records in Redis: snapshot, registrations, removal, status, guard (`SyncRecords`). */
  records: {
    begin(
      key: SliceKey,
      holder: string,
      options?: { prepayWrite?: boolean },
    ): Promise<KeyTurn | undefined>;
  };
  /** What is published: the watch-fed caches. */
  cluster: ClusterView;
  /** Where writes go. */
  api: SliceApi;
  /** Taken before every API write (the cluster-wide write limit). */
  writeLimiter?: { acquire(): Promise<void> };
  metrics?: SyncerMetrics;
  logger: Logger;
  /** Injected for tests. @defaultValue `() => new Date()` */
  now?: () => Date;
  /** Re-plan this many times after a 409 before retrying with backoff. @defaultValue 3 */
  conflictRetries?: number;
  /**
   * The resource.k8s.io version the slices are written in, with the server's release
   * (`describeResourceApi`); recorded in every successful sync's status.
   */
  publishedWith?: () => string;
  /** The server release's slice layout rules. @defaultValue `CURRENT_LAYOUT_RULES` (1.35+) */
  layoutRules?: () => LayoutRules;
  /** What a driver's unhealthy and unknown devices get. @defaultValue `() => 'NoSchedule'` */
  healthTaints?: (driver: string) => HealthTaintPolicy;
  /** Told of every recorded status, for the Events about the key's Node (`KeyEventReporter`). */
  events?: { report(input: KeyEventInput): void };
}

export interface SyncContext {
  /** The BullMQ job id: the holder of the key's guard. */
  jobId: string;
  /** 1 for the first attempt of this job. */
  attempt: number;
  reason: SyncReason;
}

/** What a reconcile did. */
export interface Reconciled {
  /** The recorded status; undefined when there was nothing to do and nothing was recorded. */
  status?: SyncStatus;
  /** Set when the key must be looked at again: the worker retries with this error's backoff. */
  retry?: TransientError;
  /**
   * Whether the recorded status tells something new (outcome, slices, dropped fields, problems):
   * what the driver is told of, and what the node condition follows.
   */
  changed?: boolean;
}

/**
 * One sync of one key, level-triggered: whatever asked for it, it makes the key's published
 * slices match the key's latest state in Redis.
 *
 * 1. Read what is desired (Redis, one round trip that also takes the key's guard).
 * 2. Read what is published (the watch-fed cache: no API read).
 * 3. Plan the fewest writes (`planSync`, upstream's resourceslice controller semantics).
 * 4. Apply them (deletes, updates, creates), each returned object into the cache.
 * 5. Record the outcome (Redis, one round trip that releases the guard).
 *
 * Updates and deletes carry UID and resourceVersion preconditions, so a cache that lags costs a
 * 409 and a re-plan from a fresh list, never a wrong write. A create is never planned twice: the
 * cache shows our own writes before the watch delivers them.
 */
export class Reconciler {
  private readonly now: () => Date;

  constructor(private readonly options: ReconcilerOptions) {
    this.now = options.now ?? (() => new Date());
  }

  async reconcile(key: SliceKey, context: SyncContext): Promise<Reconciled> {
    // A sync that brings news nearly always writes: its first write token comes with its reads
    // (one Redis round trip less on the path of every change; measured in the README).
    const turn = await this.options.records.begin(key, context.jobId, {
      prepayWrite: bringsNews(context.reason),
    });
    if (turn === undefined) {
      this.options.metrics?.overlaps.inc();
      const error = new TransientError(`sync of ${keyId(key)} is already running`, {
        code: 'overlap',
      });
      return { retry: error };
    }
    const startedAt = this.now();
    try {
      const reconciled = await this.sync(key, context, turn, startedAt);
      const { status } = reconciled;
      if (status === undefined) return reconciled;
      return { ...reconciled, changed: !sameFeedback(turn.previousStatus(), status) };
    } finally {
      // Recording the outcome released the guard, unless the sync failed before it got there.
      await turn.release();
      this.options.metrics?.duration.observe((this.now().getTime() - startedAt.getTime()) / 1000);
    }
  }

  private async sync(
    key: SliceKey,
    context: SyncContext,
    turn: KeyTurn,
    startedAt: Date,
  ): Promise<Reconciled> {
    const log = this.options.logger.child({
      node: key.node,
      driver: key.driver,
      jobId: context.jobId,
      attempt: context.attempt,
    });
    let snapshot: InventorySnapshot | undefined;
    /**
     * The generation a removal within its grace keeps published: its status says so, so that
     * the watcher of a driver that registers again with the same inventory owes no sync.
     */
    let keptGeneration: number | undefined;
    let writes = 0;
    const record = (
      fields: Omit<SyncStatus, 'startedAt' | 'finishedAt' | 'attempt' | 'snapshotGeneration'>,
      forgetSnapshot = false,
    ) =>
      this.record(
        key,
        turn,
        {
          ...fields,
          startedAt: startedAt.toISOString(),
          snapshotGeneration: snapshot?.generation ?? keptGeneration ?? 0,
          attempt: context.attempt,
        },
        forgetSnapshot,
      );

    try {
      // 1. What is desired.
      const registered = turn.registered();
      if (!registered) {
        const withdrawAt = turn.removal()?.withdrawAt ?? 0;
        const remainingMs = withdrawAt - startedAt.getTime();
        if (remainingMs > 0) {
          keptGeneration = turn.previousStatus()?.snapshotGeneration;
          throw new RemovalPendingError(keyId(key), remainingMs);
        }
      } else {
        snapshot = turn.snapshot();
        if (snapshot === undefined && context.reason === 'registered') {
          // A registration's sync publishes the snapshot a re-registered driver kept. Without
          // one the driver has sent nothing yet (or Redis lost it): what is published stays,
          // and the watcher's first store asks for the sync that publishes it.
          log.debug('registered, no inventory yet: nothing to do');
          return {};
        }
        if (snapshot?.rejected !== undefined) {
          throw new TerminalError(snapshot.rejected, { code: 'invalid' });
        }
      }
      // The driver's pools, with the taints of the key's lifecycle: device health, and the
      // driver-unreachable taint while its stream is lost.
      const tainted = applyLifecycleTaints({
        driver: key.driver,
        pools: snapshot?.inventory?.pools ?? [],
        health: this.options.healthTaints?.(key.driver) ?? 'NoSchedule',
        ...unreachable(snapshot === undefined ? undefined : turn.streamState()),
      });
      const pools = tainted.pools;
      const previous = turn.previousStatus();
      // Fields this server drops are not rewritten for the snapshot they were dropped from.
      const dropping =
        previous?.snapshotGeneration === (snapshot?.generation ?? 0) &&
        (previous.droppedFields?.length ?? 0) > 0;

      let dropped: DroppedField[] = [];
      let prepaid = turn.prepaidWrite;
      let existing = this.options.cluster.slicesOf(key);
      for (let replans = 0; ; replans++) {
        // 2. What is published; the Node the slices belong to.
        let nodeUid = '';
        if (key.node !== '' && pools.length > 0) {
          nodeUid = this.options.cluster.nodeUid(key.node) ?? '';
          if (nodeUid === '') throw new NodeMissingError(key.node);
        }
        // 3. The plan.
        // Laid out for taints from the start: a taint later changes devices in place.
        const planned = planSync({
          node: key.node,
          nodeUid,
          driver: key.driver,
          pools,
          existing,
          taintable: true,
          ...(this.options.layoutRules === undefined ? {} : { rules: this.options.layoutRules() }),
        });
        const plan = dropping
          ? { ...planned, updates: planned.updates.filter((u) => !onlyDropped(u, existing)) }
          : planned;
        // 4. The writes.
        const published = new Map(existing.map((s) => [s.metadata.name, s]));
        try {
          // The prepaid token pays for one write only, whatever happens to it.
          const token = prepaid;
          prepaid = undefined;
          const applied = await this.apply(plan, published, token);
          writes += applied.writes;
          dropped = [...dropped, ...applied.dropped];
        } catch (error) {
          // A 409, or a 404 on an update: the view was stale (someone else wrote, or the garbage
          // collector deleted a slice). Re-plan from what the server has now.
          if (isStale(error) && replans < (this.options.conflictRetries ?? 3)) {
            log.debug({ err: errorMessage(error) }, 'stale view, re-planning from a list');
            existing = await this.options.api.listSlices(key);
            continue;
          }
          throw error;
        }
        // 5. The outcome.
        const droppedText = summarizeDroppedFields(dropped);
        if (droppedText.length > 0) this.reportDropped(log, dropped, droppedText, previous);
        const keptDropped =
          droppedText.length > 0 ? droppedText : dropping ? previous.droppedFields : undefined;
        const taints = this.taintsOutcome(log, tainted.summary, keptDropped, previous);
        const status = await record(
          {
            outcome: pools.length === 0 ? 'withdrawn' : 'synced',
            writes,
            slices: [...published.keys()].sort(),
            pools: summaries(plan),
            ...(keptDropped === undefined || pools.length === 0
              ? {}
              : { droppedFields: keptDropped }),
            ...(taints === undefined || pools.length === 0 ? {} : { taints }),
            ...(this.options.publishedWith === undefined
              ? {}
              : { api: this.options.publishedWith() }),
          },
          !registered,
        );
        if (snapshot !== undefined && status.outcome === 'synced') {
          this.observePublished(snapshot, previous);
        }
        log.debug({ outcome: status.outcome, writes, reason: context.reason }, 'synced');
        return { status };
      }
    } catch (error) {
      const outcome = outcomeOf(error);
      // What is published did not change: keep showing the last known slices and pools.
      const previous = turn.previousStatus();
      const status = await record({
        outcome,
        writes,
        slices: previous?.slices ?? [],
        pools: previous?.pools ?? [],
        error: errorMessage(error),
        ...(error instanceof InvalidDriverResourcesError
          ? {
              problems: error.fieldErrors.map((e) => ({
                field: e.path,
                message: formatFieldError(e),
              })),
            }
          : {}),
      });
      if (outcome === 'invalid' || outcome === 'failed' || outcome === 'corrupt') {
        log.warn({ err: errorMessage(error), outcome }, 'sync refused');
        return { status };
      }
      if (outcome === 'node-missing') {
        // Not retried: the Node watch syncs the key when its Node appears (and the relist and
        // the periodic resync if that event is missed). A retry would hold back, behind its
        // backoff, the follow-up sync of any news that arrived while this one ran.
        log.info({ err: errorMessage(error) }, 'node missing, waiting for it');
        return { status };
      }
      if (error instanceof RemovalPendingError) {
        log.debug({ withdrawInMs: error.retryAfterMs }, 'removal pending');
      } else {
        log.info({ err: errorMessage(error), outcome }, 'sync failed, will retry');
      }
      return { status, retry: asTransient(error) };
    }
  }

  /**
   * Executes a plan in upstream order; `published` tracks the key's slices by name as the API
   * server returns them, and every returned object goes into the cache at once. The first write
   * spends the `prepaid` token, if any; every other write takes one.
   */
  private async apply(
    plan: SyncPlan,
    published: Map<string, StoredResourceSlice>,
    prepaid: Promise<void> | undefined,
  ): Promise<{ writes: number; dropped: DroppedField[] }> {
    const { api, cluster, metrics, writeLimiter } = this.options;
    let token = prepaid;
    const takeToken = async (): Promise<void> => {
      const next = token ?? writeLimiter?.acquire();
      token = undefined;
      await next;
    };
    let writes = 0;
    const dropped: DroppedField[] = [];
    const stored = (sent: ResourceSlice, back: StoredResourceSlice) => {
      cluster.recordWrite(back);
      published.set(back.metadata.name, back);
      dropped.push(...droppedFields(sent, back));
      writes++;
    };
    for (const target of plan.deletes) {
      await takeToken();
      // Recorded first: the watch may deliver the deletion before the answer, and a deletion
      // not recorded as ours would count as someone else's (and cost a sync).
      cluster.recordDelete(target);
      try {
        await api.deleteSlice(target);
      } catch (error) {
        cluster.forgetDelete(target.name);
        throw error;
      }
      published.delete(target.name);
      metrics?.sliceWrites.inc({ op: 'delete' });
      writes++;
    }
    for (const slice of plan.updates) {
      await takeToken();
      stored(slice, await api.updateSlice(slice));
      metrics?.sliceWrites.inc({ op: 'update' });
    }
    for (const slice of plan.creates) {
      await takeToken();
      stored(slice, await api.createSlice(slice));
      metrics?.sliceWrites.inc({ op: 'create' });
    }
    return { writes, dropped };
  }

  /**
   * The taints the sync leaves on the key's devices, for its status. A driver-unreachable
   * taint the server dropped (its DRADeviceTaints gate is off) falls back to what happens
   * without taints: the slices stay schedulable until the wipe. Said once per loss, in the
   * status, a metric and the log.
   */
  private taintsOutcome(
    log: Logger,
    summary: PublishedTaints | undefined,
    dropped: readonly string[] | undefined,
    previous: SyncStatus | undefined,
  ): PublishedTaints | undefined {
    this.countTaintsAdded(summary, previous?.taints);
    if (summary?.unreachable === undefined) return summary;
    if (!(dropped ?? []).some((field) => field.includes('.taints'))) return summary;
    if (previous?.taints?.unreachable !== 'dropped') {
      this.options.metrics?.unreachableTaintFallbacks.inc();
      log.warn(
        'driver unreachable, but the API server drops device taints (DRADeviceTaints off): ' +
          'its devices stay schedulable until its slices are withdrawn',
      );
    }
    return { ...summary, unreachable: 'dropped' };
  }

  private countTaintsAdded(
    now: PublishedTaints | undefined,
    before: PublishedTaints | undefined,
  ): void {
    const metric = this.options.metrics?.taintsAdded;
    if (metric === undefined || now === undefined) return;
    if (now.unhealthy > 0 && (before?.unhealthy ?? 0) === 0) {
      metric.inc({ condition: TAINT_CONDITIONS.unhealthy });
    }
    if (now.healthUnknown > 0 && (before?.healthUnknown ?? 0) === 0) {
      metric.inc({ condition: TAINT_CONDITIONS.healthUnknown });
    }
    if (now.unreachable !== undefined && before?.unreachable === undefined) {
      metric.inc({ condition: TAINT_CONDITIONS.driverUnreachable });
    }
  }

  /** The end-to-end latency of a snapshot generation's first publish. */
  private observePublished(snapshot: InventorySnapshot, previous: SyncStatus | undefined): void {
    if (previous?.outcome === 'synced' && previous.snapshotGeneration === snapshot.generation) {
      return;
    }
    const seconds = (this.now().getTime() - Date.parse(snapshot.receivedAt)) / 1000;
    this.options.metrics?.publishLatency.observe(Math.max(0, seconds));
  }

  /** Counts dropped fields and logs them once per key and snapshot generation. */
  private reportDropped(
    log: Logger,
    dropped: readonly DroppedField[],
    text: readonly string[],
    previous: SyncStatus | undefined,
  ): void {
    for (const field of dropped)
      this.options.metrics?.droppedFields.inc({ gate: field.gate ?? 'unknown' });
    const known = previous?.droppedFields ?? [];
    if (text.some((line) => !known.includes(line))) {
      log.warn(
        { droppedFields: text },
        'the API server dropped fields of our writes (a feature gate is off)',
      );
    }
  }

  /**
   * Records the outcome (see `SyncTurn.finish`), which releases the key's guard, and tells it
   * as Events about the key's Node.
   */
  private async record(
    key: SliceKey,
    turn: KeyTurn,
    fields: Omit<SyncStatus, 'finishedAt'>,
    forgetSnapshot: boolean,
  ): Promise<SyncStatus> {
    const status: SyncStatus = { ...fields, finishedAt: this.now().toISOString() };
    const previous = turn.previousStatus();
    // The driver hears of an outcome when what it would be told changed.
    const announce = !sameFeedback(previous, status);
    await turn.finish(status, { forgetSnapshot, announce });
    this.options.metrics?.syncs.inc({ outcome: status.outcome });
    this.options.events?.report({
      key,
      previous,
      status,
      registered: turn.registered(),
      stream: readableStreamState(turn),
    });
    return status;
  }
}

/**
 * Whether a planned update differs from the published slice only in fields this server drops:
 * what it stored is then the desired state, and writing again would change nothing.
 */
function onlyDropped(
  update: StoredResourceSlice,
  existing: readonly StoredResourceSlice[],
): boolean {
  const current = existing.find((s) => s.metadata.name === update.metadata.name);
  if (current === undefined) return false;
  const fields = droppedFields(update, current);
  if (fields.length === 0) return false;
  return semanticEqual(withoutFields(update, fields).spec, current.spec);
}

/** The key's stream state; undefined when unreadable (the sync recorded `corrupt` then). */
function readableStreamState(turn: KeyTurn): StreamState | undefined {
  try {
    return turn.streamState();
  } catch (error) {
    if (error instanceof CorruptRecordError) return undefined;
    throw error;
  }
}

/** The driver-unreachable part of the planner's input, from the key's stream state. */
function unreachable(stream: StreamState | undefined): { unreachableSince?: string } {
  const since = stream?.unreachableSince;
  return since === undefined || stream?.state === 'wiped' ? {} : { unreachableSince: since };
}

/**
 * Whether a driver told of `before` would be told nothing new by `after`. A new snapshot
 * generation alone is not news: an inventory change published into the same slices costs the
 * driver no call (and the node condition no evaluation) per change.
 */
function sameFeedback(before: SyncStatus | undefined, after: SyncStatus): boolean {
  return (
    before !== undefined &&
    before.outcome === after.outcome &&
    isDeepStrictEqual(before.slices, after.slices) &&
    isDeepStrictEqual(before.droppedFields ?? [], after.droppedFields ?? []) &&
    isDeepStrictEqual(before.problems ?? [], after.problems ?? [])
  );
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
  switch (kubeErrorCode(error)) {
    case 'conflict':
    case 'not-found':
      return true;
    default:
      return false;
  }
}

function asTransient(error: unknown): TransientError {
  return error instanceof TransientError
    ? error
    : new TransientError(errorMessage(error), { cause: error });
}

function outcomeOf(error: unknown): SyncOutcome {
  if (error instanceof InvalidDriverResourcesError) return 'invalid';
  if (error instanceof RemovalPendingError) return 'removing';
  if (error instanceof CorruptRecordError) return 'corrupt';
  if (error instanceof NodeMissingError) return 'node-missing';
  if (error instanceof TerminalError && error.code === 'invalid') return 'invalid';
  return isTerminal(error) ? 'failed' : 'retrying';
}
