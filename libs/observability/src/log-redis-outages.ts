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
  /** Told when an outage starts (`false`) and ends (`true`), with the lines: for metrics. */
  onChange?: (up: boolean) => void;
}

/** The outage log of one Redis connection (see {@link logRedisOutages}). */
export interface RedisOutageLog {
  /**
   * Adds emitters of the same connection: a BullMQ Queue or Worker built on it after the log
   * was made. Their errors are the connection's, so they start or continue its outage.
   */
  add(...sources: readonly EventEmitter[]): void;
  /** Removes every listener the log added. */
  detach(): void;
}

/**
 * Logs a Redis outage as two structured lines: `redis unavailable` (error, with the first
 * error's message as `err`) when the connection first fails, and `redis reconnected` (info)
 * when it is ready again. ioredis emits an error for every reconnect attempt, several a second;
 * those in between are dropped, so an outage of an hour is two lines, not thousands of stacks.
 * Becomes the `error` listener of every source.
 */
export function logRedisOutages(options: RedisOutageLogOptions): RedisOutageLog {
  const { logger, fields = {} } = options;
  const sources = new Set<EventEmitter>();
  let down = false;
  const onError = (error: unknown): void => {
    if (down) return;
    down = true;
    logger.error({ ...fields, err: errorMessage(error) }, 'redis unavailable');
    options.onChange?.(false);
  };
  const onReady = (): void => {
    if (!down) return;
    down = false;
    logger.info(fields, 'redis reconnected');
    options.onChange?.(true);
  };
  const log: RedisOutageLog = {
    add: (...added) => {
      for (const source of added) {
        if (sources.has(source)) continue;
        sources.add(source);
        source.on('error', onError);
        source.on('ready', onReady);
      }
    },
    detach: () => {
      for (const source of sources) {
        source.off('error', onError);
        source.off('ready', onReady);
      }
      sources.clear();
    },
  };
  log.add(...options.sources);
  return log;
}
