import type { RedisOptions } from 'ioredis';
import type { RedisClient } from '@slicekeeper/queue';
import { SyncQueue } from '@slicekeeper/queue';
import type { RedisFactory } from '@slicekeeper/queue';

/**
 * ioredis options of a connection that serves HTTP requests: fail at once while Redis is down
 * instead of holding requests until it is back (the default connection waits, as workers
 * should: a Redis restart must delay their work, not lose it).
 * - `enableOfflineQueue: false`: a command sent while disconnected is rejected at once
 *   ("Stream isn't writeable…") instead of queued until reconnection; the pattern BullMQ
 *   documents for a Queue that adds jobs from an HTTP endpoint ("Failing fast when Redis is
 *   down"). A Queue takes any `maxRetriesPerRequest`; only blocking connections (Workers) need
 *   `null`.
 * - `maxRetriesPerRequest: 1`: a command already sent when the connection drops is resent after
 *   one reconnect attempt, and rejected if that fails, instead of waiting for ever.
 * - `commandTimeout`: a Redis that accepts commands and never answers (hung, partitioned) fails
 *   requests after that long rather than holding them.
 * - Reconnects back off as the default connection's do, up to 2 s (`createRedisConnection`).
 */
export function failFastRedisOptions(commandTimeoutMs = 1000): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
  };
}

/** The API's one Redis connection and the sync queue on it. */
export interface ApiConnection {
  readonly connection: RedisClient;
  readonly syncQueue: SyncQueue;
}

/**
 * Opens the API's one Redis connection — shared by the registration store, the status reader,
 * the rate limiter and the sync queue (a BullMQ Queue uses the client it is given as it is) —
 * set to fail fast ({@link failFastRedisOptions}), with the queue that re-emits its errors in
 * its outage log (BullMQ would otherwise print them raw on stderr). The queue is the caller's
 * to close; the connection is `redis`'s.
 */
export function openApiConnection(redis: RedisFactory, prefix: string): ApiConnection {
  const connection = redis.open('registration-api', failFastRedisOptions());
  const syncQueue = new SyncQueue({ connection, prefix });
  redis.addErrorSources(connection, syncQueue.queue);
  return { connection, syncQueue };
}
