import { startPublishSyncSpan } from '@slicekeeper/queue';
import type { Tracing } from '@slicekeeper/telemetry';
import type { SyncRequester } from './routes/plugin-routes';
import { failSpanBounded } from './span-failure';

/**
 * The sync queue, with a PRODUCER span `publish sync` per enqueue (the watcher's enqueues have
 * the same), as OpenTelemetry's messaging conventions describe a send.
 */
export function tracedSyncRequester(queue: SyncRequester, tracing: Tracing): SyncRequester {
  return {
    enqueue: async (key, reason) => {
      const span = startPublishSyncSpan(tracing, key);
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
