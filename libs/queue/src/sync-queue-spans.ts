import { SYNC_QUEUE_NAME } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_SLICEKEEPER_DRIVER,
  ATTR_SLICEKEEPER_NODE,
  SpanKind,
} from '@slicekeeper/telemetry';
import type { Span, SpanStart, Tracing } from '@slicekeeper/telemetry';

/** The span of an enqueue of a key's sync (PRODUCER), whoever asks for it. */
export const PUBLISH_SYNC_SPAN = 'publish sync';

/**
 * The attributes of a span of the sync queue (OpenTelemetry's messaging conventions) for one
 * key: `send` on the producers' side, `process` on the syncer's.
 */
export function syncQueueAttributes(
  key: SliceKey,
  operation: 'send' | 'process',
): Record<string, string> {
  return {
    [ATTR_MESSAGING_SYSTEM]: 'bullmq',
    [ATTR_MESSAGING_DESTINATION_NAME]: SYNC_QUEUE_NAME,
    [ATTR_MESSAGING_OPERATION_TYPE]: operation,
    [ATTR_SLICEKEEPER_NODE]: key.node,
    [ATTR_SLICEKEEPER_DRIVER]: key.driver,
  };
}

/**
 * Starts the `publish sync` span of an enqueue of `key`'s sync: a child of the active span, or
 * as `start` says (a parent, or a root). The caller ends it.
 */
export function startPublishSyncSpan(
  tracing: Tracing,
  key: SliceKey,
  start: Pick<SpanStart, 'parent' | 'root'> = {},
): Span {
  return tracing.start(PUBLISH_SYNC_SPAN, {
    ...start,
    kind: SpanKind.PRODUCER,
    attributes: syncQueueAttributes(key, 'send'),
  });
}
