import { SYNC_QUEUE_NAME } from '@slicekeeper/contracts';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_SLICEKEEPER_DRIVER,
  ATTR_SLICEKEEPER_NODE,
  SpanKind,
} from '@slicekeeper/telemetry';
import type { Tracing } from '@slicekeeper/telemetry';
import type { SyncRequester } from './routes/plugin-routes';
import { failSpanBounded } from './span-failure';

/**
 * The sync queue, with a PRODUCER span `publish sync` per enqueue (the name the watcher's
 * enqueue has too), as OpenTelemetry's messaging conventions describe a send.
 */
export function tracedSyncRequester(queue: SyncRequester, tracing: Tracing): SyncRequester {
  return {
    enqueue: async (key, reason) => {
      const span = tracing.start('publish sync', {
        kind: SpanKind.PRODUCER,
        attributes: {
          [ATTR_MESSAGING_SYSTEM]: 'bullmq',
          [ATTR_MESSAGING_DESTINATION_NAME]: SYNC_QUEUE_NAME,
          [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
          [ATTR_SLICEKEEPER_NODE]: key.node,
          [ATTR_SLICEKEEPER_DRIVER]: key.driver,
        },
      });
      try {
        await queue.enqueue(key, reason);
      } catch (error) {
        failSpanBounded(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  };
}
