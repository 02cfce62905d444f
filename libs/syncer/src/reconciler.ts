import type { Logger } from 'pino';
import { boundProblems, bringsNews, keyId, tellsNews } from '@slicekeeper/contracts';
import type {
  FieldProblem,
  InventorySnapshot,
  SliceKey,
  SyncOutcome,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import { isTerminal } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';
import { kubeErrorCode, kubeFieldCauses } from '@slicekeeper/kube';
import {
  applyLifecycleTaints,
  describeFieldErrors,
  formatFieldError,
  planSync,
  summarizeDroppedFields,
  tryPlanSync,
} from '@slicekeeper/slices';
import type {
  HealthTaintPolicy,
  LayoutRules,
  StoredResourceSlice,
  SyncPlan,
} from '@slicekeeper/slices';
import type { SyncTurn } from '@slicekeeper/state';
import type { Tracing } from '@slicekeeper/telemetry';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import type { Requeue } from './backoff';
import { readDesired, readableStreamState, unreachable } from './desired-state';
import type { Desired } from './desired-state';
import type { KeyEventInput } from './key-events';
import type { ClusterView, SliceApi } from './slice-api';
import { SliceApplier } from './slice-applier';
import type { SliceApplierOptions } from './slice-applier';
import { SyncReport } from './sync-report';
import type { SyncerMetrics } from './syncer-metrics';
import { tracePlan, traceSync } from './sync-tracing';
import type { SyncRun } from './sync-tracing';

/** One sync's hold on its key's records (`SyncTurn` of libs/state). */
export type KeyTurn = Pick<
  SyncTurn,
  | 'registered'
  | 'snapshot'
  | 'removal'
  | 'generationIssued'
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
  /** Where deletes are marked for the other replicas before they are made (`DeletionMarks`). */
  deletions?: SliceApplierOptions['deletions'];
  metrics?: SyncerMetrics;
  logger: Logger;
  /** Injected for tests. @defaultValue `systemClock` */
  clock?: Pick<Clock, 'now'>;
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
  /** Told of every recorded status, for the Events about the key's Node (`KeyEventReporter`; a cluster-scoped key's about one of its ResourceSlices). */
  events?: { report(input: KeyEventInput): void };
  /**
   * With tracing on: each sync is a `process sync` span, a child of the last message its
   * snapshot stands for and linked to all of them, with a `plan` span; its API writes are
   * children of it, and its status records its trace id. Without it no span is made.
   */
  tracing?: Tracing;
}

export interface SyncContext {
  /** The BullMQ job id: the holder of the key's guard. */
  jobId: string;
  /** 1 for the first attempt of this job. */
  attempt: number;
  reason: SyncReason;
}

/** What a reconcile did (controller-runtime's `Result`): the queue loop switches on it. */
export interface ReconcileResult {
  /**
   * The recorded outcome; `idle` when there was nothing to do and nothing was recorded, `busy`
   * when another sync of the key holds its guard.
   */
  outcome: SyncOutcome | 'idle' | 'busy';
  /** The recorded status (absent for `idle` and `busy`). */
  status?: SyncStatus;
  /**
   * Whether the status tells something new (outcome, slices, dropped fields, problems): what
   * the driver is told of, and what the node condition follows.
   */
  news: boolean;
  /** Set when the key must be looked at again. */
  requeueAfter?: Requeue;
}

/** What a sync that did not publish records, besides its outcome. */
interface Refusal {
  outcome: Exclude<SyncOutcome, 'synced' | 'withdrawn'>;
  error: string;
  problems?: readonly FieldProblem[];
  snapshotGeneration: number;
  writes?: number;
  requeueAfter?: Requeue;
}

/**
 * One sync of one key, level-triggered: whatever asked for it, it makes the key's published
 * slices match the key's latest state in Redis, and returns what happened as a value.
 *
 * 1. Desired: the key's registration, snapshot and stream state (Redis, one round trip that
 *    also takes the key's guard).
 * 2. Existing: the key's slices and its Node, from the watch-fed cache (no API read).
 * 3. Plan: the fewest writes (`tryPlanSync`, upstream's resourceslice controller semantics).
 * 4. Apply: deletes, updates, creates (`SliceApplier`: write tokens, mutation cache, 409 re-plan).
 * 5. Record: the status (Redis, one round trip that releases the guard), Events, metrics.
 *
 * Retries are the queue loop's: a result asks for one with `requeueAfter`. Exceptions are for
 * the unexpected only (Redis unreachable, a bug).
 */
export class Reconciler {
  private readonly now: () => Date;
  private readonly applier: SliceApplier;
  private readonly report: SyncReport;

  constructor(private readonly options: ReconcilerOptions) {
    const clock = options.clock ?? systemClock;
    this.now = () => new Date(clock.now());
    this.applier = new SliceApplier({
      cluster: options.cluster,
      api: options.api,
      logger: options.logger,
      ...(options.writeLimiter === undefined ? {} : { writeLimiter: options.writeLimiter }),
      ...(options.deletions === undefined ? {} : { deletions: options.deletions }),
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      ...(options.conflictRetries === undefined
        ? {}
        : { conflictRetries: options.conflictRetries }),
    });
    this.report = new SyncReport(options.metrics, this.now);
  }

  async reconcile(key: SliceKey, context: SyncContext): Promise<ReconcileResult> {
    const { tracing } = this.options;
    // A span's times are the tracer's wall clock, not the sync's injected one.
    const jobStartedAt = tracing === undefined ? 0 : Date.now();
    // A sync that brings news nearly always writes: its first write token comes with its reads
    // (one Redis round trip less on the path of every change; measured in the README).
    const turn = await this.options.records.begin(key, context.jobId, {
      prepayWrite: bringsNews(context.reason),
    });
    if (turn === undefined) {
      this.options.metrics?.overlaps.inc();
      return { outcome: 'busy', news: false, requeueAfter: { kind: 'backoff' } };
    }
    const startedAt = this.now();
    try {
      // 1. What is desired.
      const desired = readDesired(turn, startedAt.getTime());
      if (tracing === undefined) return await this.sync(key, context, turn, startedAt, desired);
      const sync = { startTime: jobStartedAt, key, context, snapshot: snapshotOf(desired) };
      return await traceSync(tracing, sync, (run) => this.sync(key, run, turn, startedAt, desired));
    } finally {
      // Recording the outcome released the guard, unless the sync failed before it got there.
      await turn.release();
      this.options.metrics?.duration.observe((this.now().getTime() - startedAt.getTime()) / 1000);
    }
  }

  private async sync(
    key: SliceKey,
    context: SyncRun,
    turn: KeyTurn,
    startedAt: Date,
    desired: Desired,
  ): Promise<ReconcileResult> {
    const log = this.options.logger.child({
      node: key.node,
      driver: key.driver,
      jobId: context.jobId,
      attempt: context.attempt,
    });
    const refuse = (refusal: Refusal) => this.refuse(key, context, turn, startedAt, log, refusal);
    const previous = turn.previousStatus();

    switch (desired.kind) {
      case 'idle':
        log.debug({ why: desired.why }, 'nothing to publish or withdraw');
        return { outcome: 'idle', news: false };
      case 'corrupt':
        return refuse({ outcome: 'corrupt', error: desired.problem, snapshotGeneration: 0 });
      case 'unreadable':
        return refuse({
          outcome: 'retrying',
          error: desired.problem,
          snapshotGeneration: 0,
          requeueAfter: { kind: 'backoff' },
        });
      case 'rejected':
        return refuse({
          outcome: 'invalid',
          error: desired.problem,
          snapshotGeneration: desired.snapshot.generation,
        });
      case 'removing':
        // Still the generation published: a driver back with the same inventory owes no sync.
        return refuse({
          outcome: 'removing',
          error: `plugin ${keyId(key)} was removed; its slices are withdrawn in ${Math.ceil(desired.remainingMs / 1000)}s unless it registers again`,
          snapshotGeneration: previous?.snapshotGeneration ?? 0,
          requeueAfter: { kind: 'after', ms: desired.remainingMs },
        });
      case 'publish':
        break;
    }
    const { snapshot, registered } = desired;
    const snapshotGeneration = snapshot?.generation ?? 0;
    // The driver's pools, with the taints of the key's lifecycle: device health, and the
    // driver-unreachable taint while its stream is lost.
    const tainted = applyLifecycleTaints({
      driver: key.driver,
      pools: snapshot?.inventory?.pools ?? [],
      health: this.options.healthTaints?.(key.driver) ?? 'NoSchedule',
      ...unreachable(desired.stream),
    });
    const pools = tainted.pools;

    // 2. What is published, and the Node the slices belong to.
    const existing = this.options.cluster.slicesOf(key);
    let nodeUid = '';
    if (key.node !== '' && pools.length > 0) {
      nodeUid = this.options.cluster.nodeUid(key.node) ?? '';
      if (nodeUid === '') {
        // Not retried: the Node watch syncs the key when its Node appears (and the relist and
        // the periodic resync if that event is missed).
        return refuse({
          outcome: 'node-missing',
          error: `node "${key.node}" does not exist`,
          snapshotGeneration,
        });
      }
    }

    // 3. The plan. Fields this server drops are not rewritten for the snapshot they were
    // dropped from: the planner adopts what the server kept (upstream's DroppedFieldsError).
    const dropping =
      previous?.snapshotGeneration === snapshotGeneration &&
      (previous.droppedFields?.length ?? 0) > 0;
    const input = (slices: readonly StoredResourceSlice[]) => ({
      node: key.node,
      nodeUid,
      driver: key.driver,
      pools,
      existing: slices,
      // Laid out for taints from the start: a taint later changes devices in place.
      taintable: true,
      ...(this.options.layoutRules === undefined ? {} : { rules: this.options.layoutRules() }),
      ...(dropping ? { adoptDropped: previous.droppedFields ?? [] } : {}),
    });
    const planned =
      this.options.tracing === undefined
        ? tryPlanSync(input(existing))
        : tracePlan(this.options.tracing, input(existing));
    if (!planned.ok) {
      return refuse({
        outcome: 'invalid',
        error: describeFieldErrors(planned.problems),
        problems: planned.problems.map((e) => ({ field: e.path, message: formatFieldError(e) })),
        snapshotGeneration,
      });
    }
    // 4. The writes.
    const applied = await this.applier.apply({
      key,
      existing,
      plan: planned.plan,
      // The input was valid above, and validity does not depend on what is published.
      replan: (slices) => planSync(input(slices)),
      prepaid: turn.prepaidWrite,
    });
    if (!applied.ok) {
      return refuse({ ...failure(applied.error), snapshotGeneration, writes: applied.writes });
    }

    // 5. The outcome.
    const droppedText = summarizeDroppedFields(applied.dropped);
    if (droppedText.length > 0) this.report.dropped(log, applied.dropped, droppedText, previous);
    const keptDropped =
      droppedText.length > 0 ? droppedText : dropping ? previous.droppedFields : undefined;
    const taints = this.report.taints(log, tainted.summary, keptDropped, previous);
    const withdrawn = pools.length === 0;
    const result = await this.record(
      key,
      turn,
      {
        outcome: withdrawn ? 'withdrawn' : 'synced',
        snapshotGeneration,
        writes: applied.writes,
        slices: applied.slices,
        pools: summaries(applied.plan),
        ...(keptDropped === undefined || withdrawn ? {} : { droppedFields: keptDropped }),
        ...(taints === undefined || withdrawn ? {} : { taints }),
        ...(this.options.publishedWith === undefined ? {} : { api: this.options.publishedWith() }),
        startedAt: startedAt.toISOString(),
        attempt: context.attempt,
        ...(context.traceId === undefined ? {} : { traceId: context.traceId }),
      },
      !registered,
    );
    if (snapshot !== undefined && !withdrawn) this.report.published(snapshot, previous);
    log.debug(
      { outcome: result.outcome, writes: applied.writes, reason: context.reason },
      'synced',
    );
    return result;
  }

  /**
   * Records a sync that did not publish. What is published did not change: the status keeps
   * showing the last known slices and pools.
   */
  private async refuse(
    key: SliceKey,
    context: SyncRun,
    turn: KeyTurn,
    startedAt: Date,
    log: Logger,
    refusal: Refusal,
  ): Promise<ReconcileResult> {
    const previous = turn.previousStatus();
    const result = await this.record(
      key,
      turn,
      {
        outcome: refusal.outcome,
        snapshotGeneration: refusal.snapshotGeneration,
        writes: refusal.writes ?? 0,
        slices: previous?.slices ?? [],
        pools: previous?.pools ?? [],
        error: refusal.error,
        ...(refusal.problems === undefined ? {} : boundProblems(refusal.problems)),
        startedAt: startedAt.toISOString(),
        attempt: context.attempt,
        ...(context.traceId === undefined ? {} : { traceId: context.traceId }),
      },
      false,
      refusal.requeueAfter,
    );
    const fields = { err: refusal.error, outcome: refusal.outcome };
    switch (refusal.outcome) {
      case 'removing':
        log.debug({ requeueAfter: refusal.requeueAfter }, 'removal pending');
        break;
      case 'node-missing':
        log.info(fields, 'node missing, waiting for it');
        break;
      case 'retrying':
        log.info(fields, 'sync failed, will retry');
        break;
      default:
        log.warn(fields, 'sync refused');
    }
    return result;
  }

  /**
   * Records the outcome (see `SyncTurn.finish`), which releases the key's guard, and tells it
   * as Events about the key's Node. The driver hears of an outcome when what it would be told
   * changed.
   */
  private async record(
    key: SliceKey,
    turn: KeyTurn,
    fields: Omit<SyncStatus, 'finishedAt'>,
    forgetSnapshot: boolean,
    requeueAfter?: Requeue,
  ): Promise<ReconcileResult> {
    const status: SyncStatus = { ...fields, finishedAt: this.now().toISOString() };
    const previous = turn.previousStatus();
    const news = tellsNews(previous, status);
    await turn.finish(status, { forgetSnapshot, announce: news });
    this.options.metrics?.syncs.inc({ outcome: status.outcome });
    this.options.events?.report({
      key,
      previous,
      status,
      registered: turn.registered(),
      stream: readableStreamState(turn),
    });
    return {
      outcome: status.outcome,
      status,
      news,
      ...(requeueAfter === undefined ? {} : { requeueAfter }),
    };
  }
}

/** The snapshot a sync read, when it read one. */
function snapshotOf(desired: Desired): InventorySnapshot | undefined {
  return desired.kind === 'publish' || desired.kind === 'rejected' ? desired.snapshot : undefined;
}

/** A failed write's outcome: `invalid` for the server's 422, and when to try again. */
function failure(error: SlicekeeperError): Omit<Refusal, 'snapshotGeneration'> {
  if (isTerminal(error)) {
    if (kubeErrorCode(error) !== 'invalid') return { outcome: 'failed', error: error.message };
    // The server's own field paths, as the planner's validator names problems (a field only the
    // server checks: a pass-through member, a rule of a newer release).
    const problems = kubeFieldCauses(error);
    return {
      outcome: 'invalid',
      error: error.message,
      ...(problems.length === 0 ? {} : { problems }),
    };
  }
  const retryAfterMs = 'retryAfterMs' in error ? error.retryAfterMs : undefined;
  return {
    outcome: 'retrying',
    error: error.message,
    requeueAfter:
      kubeErrorCode(error) === 'throttled' && typeof retryAfterMs === 'number'
        ? { kind: 'throttled', ms: retryAfterMs }
        : {
            kind: 'backoff',
            ...(typeof retryAfterMs === 'number' ? { notBeforeMs: retryAfterMs } : {}),
          },
  };
}

function summaries(plan: SyncPlan): SyncStatus['pools'] {
  return plan.pools.map((p) => ({
    name: p.name,
    generation: p.generation,
    sliceCount: p.resourceSliceCount,
    devices: p.deviceCount,
  }));
}
