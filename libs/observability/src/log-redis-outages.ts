import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';

export interface RedisOutageLogOptions {
  logger: Pick<Logger, 'error' | 'info'>;
  /**
   * The emitters of one Redis connection's `error` and `ready` events: the ioredis client, plus
   * every BullMQ Queue or Worker built on that client (they re-emit its errors, and print them
   * raw on stderr when nothing listens).
   */
  sources: readonly EventEmitter[];
  /** Fields of both lines, e.g. `{ connection: 'registration-api' }`. */
  fields?: Record<string, unknown>;
}

/**
 * Logs a Redis outage as two structured lines: `redis unavailable` (error, with the first
 * error's message as `err`) when the connection first fails, and `redis reconnected` (info)
 * when it is ready again. ioredis emits an error for every reconnect attempt, several a second;
 * those in between are dropped, so an outage of an hour is two lines, not thousands of stacks.
 * Becomes the `error` listener of every source. Returns a function that removes its listeners.
 */
export function logRedisOutages(options: RedisOutageLogOptions): () => void {
  const { logger, sources, fields = {} } = options;
  let down = false;
  const onError = (error: unknown): void => {
    if (down) return;
    down = true;
    logger.error({ ...fields, err: errorMessage(error) }, 'redis unavailable');
  };
  const onReady = (): void => {
    if (!down) return;
    down = false;
    logger.info(fields, 'redis reconnected');
  };
  for (const source of sources) {
    source.on('error', onError);
    source.on('ready', onReady);
  }
  return () => {
    for (const source of sources) {
      source.off('error', onError);
      source.off('ready', onReady);
    }
  };
}
