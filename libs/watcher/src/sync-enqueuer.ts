import type { SliceKey, SyncReason } from '@slicekeeper/contracts';
import { startPublishSyncSpan } from '@slicekeeper/queue';
import type { SpanContext, Tracing } from '@slicekeeper/telemetry';

/** Asks for a key's sync; `SyncQueue` from @slicekeeper/queue is the real one. */
export interface SyncEnqueuer {
  enqueue(key: SliceKey, reason: SyncReason): Promise<void>;
}

/**
 * Asks `queue` for a sync of `key`, inside a `publish sync` span (PRODUCER) when tracing is on:
 * a child of `parent` (the store that owes the sync) when given, else a root. A failed enqueue
 * ends the span with status error and rejects.
 */
export function publishSync(
  queue: SyncEnqueuer,
  key: SliceKey,
  reason: SyncReason,
  tracing: Tracing | undefined,
  parent?: SpanContext,
): Promise<void> {
  return tracing === undefined
    ? queue.enqueue(key, reason)
    : tracedPublish(queue, key, reason, tracing, parent);
}

async function tracedPublish(
  queue: SyncEnqueuer,
  key: SliceKey,
  reason: SyncReason,
  tracing: Tracing,
  parent: SpanContext | undefined,
): Promise<void> {
  // Never a child of whatever span is active: the watcher's loops outlive the spans they began in.
  const span = startPublishSyncSpan(tracing, key, {
    root: true,
    ...(parent === undefined ? {} : { parent }),
  });
  try {
    await tracing.within(span, () => queue.enqueue(key, reason));
  } finally {
    span.end();
  }
}
