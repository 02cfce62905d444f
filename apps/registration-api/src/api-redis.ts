import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { logRedisOutages } from '@slicekeeper/observability';
import type { Logger } from '@slicekeeper/observability';
import { SyncQueue } from '@slicekeeper/queue';

export interface ApiRedisOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  /** slicekeeper's Redis prefix. */
  prefix: string;
  /** Where the outage lines go. */
  logger: Logger;
  /** Name shown by `CLIENT LIST`. @defaultValue `'registration-api'` */
  connectionName?: string;
  /** How long a command may wait for its reply, ms, before the request answers 503. @defaultValue 1000 */
  commandTimeoutMs?: number;
}

/**
 * ioredis options of a connection that serves HTTP requests: fail at once while Redis is down
 * instead of holding requests until it is back (the shared `createRedisConnection` waits, as
 * workers should: a Redis restart must delay their work, not lose it).
 * - `enableOfflineQueue: false`: a command sent while disconnected is rejected at once
 *   ("Stream isn't writeable…") instead of queued until reconnection; the pattern BullMQ
 *   documents for a Queue that adds jobs from an HTTP endpoint ("Failing fast when Redis is
 *   down"). A Queue takes any `maxRetriesPerRequest`; only blocking connections (Workers) need
 *   `null`.
 * - `maxRetriesPerRequest: 1`: a command already sent when the connection drops is resent after
 *   one reconnect attempt, and rejected if that fails, instead of waiting for ever.
 * - `commandTimeout`: a Redis that accepts commands and never answers (hung, partitioned) fails
 *   requests after that long rather than holding them.
 * - Reconnects back off as the shared factory's do, up to 2 s.
 */
function failFastRedisOptions(commandTimeoutMs = 1000): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  };
}

/**
 * The API's one Redis connection — shared by the registration store, the status reader, the
 * rate limiter and the sync queue (a BullMQ Queue uses the client it is given as it is) — set to
 * fail fast ({@link failFastRedisOptions}), with its outages logged once each, for the client
 * and the queue that re-emits its errors (which BullMQ would otherwise print raw on stderr).
 */
export class ApiRedis {
  readonly connection: Redis;
  readonly syncQueue: SyncQueue;
  private closing: Promise<void> | undefined;

  constructor(options: ApiRedisOptions) {
    const connectionName = options.connectionName ?? 'registration-api';
    this.connection = new Redis(options.url, {
      ...failFastRedisOptions(options.commandTimeoutMs),
      connectionName,
    });
    this.syncQueue = new SyncQueue({ connection: this.connection, prefix: options.prefix });
    logRedisOutages({
      logger: options.logger,
      sources: [this.connection, this.syncQueue.queue],
      fields: { connection: connectionName },
    });
  }

  /** Closes the queue, then the connection (at once when Redis is down). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.syncQueue.close();
      // QUIT is refused while disconnected (no offline queue): there is nothing to flush then.
      await this.connection.quit().catch(() => {
        this.connection.disconnect();
      });
    })();
    return this.closing;
  }
}
