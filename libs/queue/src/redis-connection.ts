import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';

export interface RedisConnectionOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  /** Name shown by `CLIENT LIST`, e.g. the service name. */
  connectionName?: string;
  /**
   * Told about connection errors (ioredis reconnects by itself; this is for logging). Without a
   * listener ioredis prints every reconnect attempt to stderr.
   */
  onError?: (error: Error) => void;
  /**
   * ioredis options that replace the defaults below, e.g. `enableOfflineQueue: false` and a
   * bounded `maxRetriesPerRequest` for a connection serving HTTP requests, which should fail
   * fast while Redis is down instead of holding the request.
   */
  redisOptions?: RedisOptions;
}

/**
 * An ioredis connection as BullMQ needs it: commands wait for a reconnect instead of failing
 * after a few retries (`maxRetriesPerRequest: null`), so that a Redis restart delays work rather
 * than losing it, and reconnects back off up to 2 s. `redisOptions` replace these defaults.
 */
export function createRedisConnection(options: RedisConnectionOptions): Redis {
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    ...options.redisOptions,
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
  };
  const redis = new Redis(options.url, redisOptions);
  redis.on('error', options.onError ?? (() => undefined));
  return redis;
}
