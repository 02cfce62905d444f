import { syncQueueAttributes } from '@slicekeeper/queue';
import type { InventorySnapshot, SliceKey, SyncOutcome } from '@slicekeeper/contracts';
import { tryPlanSync } from '@slicekeeper/slices';
import {
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_SLICEKEEPER_OUTCOME,
  ATTR_SLICEKEEPER_SNAPSHOT_GENERATION,
  SpanKind,
  SpanStatusCode,
  linksTo,
  parseTraceparent,
} from '@slicekeeper/telemetry';
import type { Tracing } from '@slicekeeper/telemetry';
import type { ReconcileResult, SyncContext } from './reconciler';

/** A sync under way: the job's context, and the trace id its status records (tracing on). */
export interface SyncRun extends SyncContext {
  traceId?: string;
}

/** Span attributes of a sync (`slicekeeper.*` beside OpenTelemetry's messaging ones). */
const ATTR_ATTEMPT = 'slicekeeper.attempt';
const ATTR_REASON = 'slicekeeper.reason';
const ATTR_WRITES = 'slicekeeper.writes';
const ATTR_POOLS = 'slicekeeper.pools';
const ATTR_DEVICES = 'slicekeeper.devices';
const ATTR_CREATES = 'slicekeeper.plan.creates';
const ATTR_UPDATES = 'slicekeeper.plan.updates';
const ATTR_DELETES = 'slicekeeper.plan.deletes';

/**
 * The outcomes whose `process sync` span ends with status error: slicekeeper could not do its
 * part (a write failed, a record is unreadable). `invalid`, `node-missing` and `removing` are
 * the sync doing its job on what it was given (the driver's data, the cluster, a removal), so
 * their spans keep status unset and say the outcome in `slicekeeper.outcome`.
 */
const FAILED_OUTCOMES: ReadonlySet<string> = new Set<SyncOutcome>([
  'retrying',
  'failed',
  'corrupt',
]);

/**
 * Runs the rest of a sync inside its `process sync` span (a CONSUMER span of the sync queue's
 * job), started at `startTime` (when the job did, so that it covers the Redis read): a child of
 * the last traceparent of the snapshot (one change, one trace) and linked to each of them (the
 * messages coalesced into this sync); a root without any (a resync, tracing off at the
 * watcher). A retry of the job reads the same snapshot: another span of the same trace with its
 * own attempt. Status error for the outcomes of {@link FAILED_OUTCOMES}, and for an exception.
 */
export async function traceSync(
  tracing: Tracing,
  sync: {
    startTime: number;
    key: SliceKey;
    context: SyncContext;
    snapshot: InventorySnapshot | undefined;
  },
  work: (run: SyncRun) => Promise<ReconcileResult>,
): Promise<ReconcileResult> {
  const { key, context } = sync;
  const traceparents = sync.snapshot?.traceparents ?? [];
  const last = traceparents.at(-1);
  const parent = last === undefined ? undefined : parseTraceparent(last);
  const span = tracing.start('process sync', {
    kind: SpanKind.CONSUMER,
    startTime: sync.startTime,
    links: linksTo(traceparents),
    // Whatever is active around the job (nothing, in the worker): a sync continues its change.
    ...(parent === undefined ? { root: true } : { parent }),
    attributes: {
      ...syncQueueAttributes(key, 'process'),
      [ATTR_MESSAGING_MESSAGE_ID]: context.jobId,
      [ATTR_ATTEMPT]: context.attempt,
      [ATTR_REASON]: context.reason,
    },
  });
  try {
    // A span the sampler dropped names no trace anyone can look up.
    const run: SyncRun = span.isRecording()
      ? { ...context, traceId: span.spanContext().traceId }
      : context;
    const result = await tracing.within(span, () => work(run));
    span.setAttribute(ATTR_SLICEKEEPER_OUTCOME, result.outcome);
    const { status } = result;
    if (status !== undefined) {
      span.setAttributes({
        [ATTR_SLICEKEEPER_SNAPSHOT_GENERATION]: status.snapshotGeneration,
        [ATTR_WRITES]: status.writes,
      });
      if (FAILED_OUTCOMES.has(status.outcome)) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: status.error ?? status.outcome });
      }
    }
    return result;
  } finally {
    span.end();
  }
}

/**
 * Plans inside a `plan` span: how many pools and devices it was given, and how many writes it
 * planned (or `slicekeeper.outcome` `invalid`). The planner stays pure: the span is around it.
 */
export function tracePlan(
  tracing: Tracing,
  input: Parameters<typeof tryPlanSync>[0],
): ReturnType<typeof tryPlanSync> {
  let devices = 0;
  for (const pool of input.pools) devices += pool.devices.length;
  const span = tracing.start('plan', {
    attributes: { [ATTR_POOLS]: input.pools.length, [ATTR_DEVICES]: devices },
  });
  try {
    const planned = tryPlanSync(input);
    if (planned.ok) {
      span.setAttributes({
        [ATTR_CREATES]: planned.plan.creates.length,
        [ATTR_UPDATES]: planned.plan.updates.length,
        [ATTR_DELETES]: planned.plan.deletes.length,
      });
    } else {
      span.setAttribute(ATTR_SLICEKEEPER_OUTCOME, 'invalid');
    }
    return planned;
  } finally {
    span.end();
  }
}
