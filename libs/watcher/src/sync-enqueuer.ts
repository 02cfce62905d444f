import { SYNC_QUEUE_NAME } from '@slicekeeper/contracts';
import type { SliceKey, SyncReason } from '@slicekeeper/contracts';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  SpanKind,
} from '@slicekeeper/telemetry';
import type { SpanContext, Tracing } from '@slicekeeper/telemetry';
import { PUBLISH_SPAN, keyAttributes, startSpan } from './watcher-spans';

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
  const span = startSpan(tracing, PUBLISH_SPAN, {
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTR_MESSAGING_SYSTEM]: 'bullmq',
      [ATTR_MESSAGING_DESTINATION_NAME]: SYNC_QUEUE_NAME,
      [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
      ...keyAttributes(key),
    },
    ...(parent === undefined ? {} : { parent }),
  });
  try {
    await tracing.within(span, () => queue.enqueue(key, reason));
  } finally {
    span.end();
  }
}
