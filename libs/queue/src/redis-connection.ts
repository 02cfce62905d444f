import { Cluster, Redis } from 'ioredis';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import type { RedisTarget } from '@slicekeeper/config';

/**
 * A connection to slicekeeper's Redis: one server or a master found through Sentinel (`Redis`),
 * or a Redis Cluster (`Cluster`). Both take the same commands; on a Cluster every script,
 * MULTI and pipeline must keep to one hash slot, which the key layout's hash tags make possible.
 */
export type RedisClient = Redis | Cluster;

export interface RedisConnectionOptions {
  /** Where Redis is (`redisTarget` of the service's settings). */
  target: RedisTarget;
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
   * fast while Redis is down instead of holding the request. On a Cluster they apply to the
   * connection to each node, but for `enableOfflineQueue`, which is the Cluster's own.
   */
  redisOptions?: RedisOptions;
}

/** How long reconnects back off at most, ms. */
const MAX_RECONNECT_DELAY_MS = 2000;

/**
 * How a Cluster client waits through a master's failover: a command for the dead master's
 * slots is retried every 300 ms up to 100 times (30 s, twice Redis's default
 * cluster-node-timeout), instead of ioredis's 16 × 100 ms, which fails commands during any
 * failover slower than 1.6 s.
 */
const CLUSTER_FAILOVER_OPTIONS: ClusterOptions = {
  retryDelayOnFailover: 300,
  retryDelayOnClusterDown: 300,
  retryDelayOnTryAgain: 300,
  maxRedirections: 100,
  clusterRetryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
};

/**
 * An ioredis connection as BullMQ needs it: commands wait for a reconnect instead of failing
 * after a few retries (`maxRetriesPerRequest: null`), so that a Redis restart or failover
 * delays work rather than losing it, and reconnects back off up to 2 s. Through Sentinel the
 * master is asked of the Sentinels on every reconnect, and a demoted master's READONLY answer
 * makes one. `redisOptions` replace these defaults.
 */
export function createRedisConnection(
  options: RedisConnectionOptions & { target: { kind: 'server' | 'sentinel' } },
): Redis;
export function createRedisConnection(options: RedisConnectionOptions): RedisClient;
export function createRedisConnection(options: RedisConnectionOptions): RedisClient {
  const { target } = options;
  const common: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    ...options.redisOptions,
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
  };
  const retryStrategy = (attempt: number): number =>
    Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS);
  let redis: RedisClient;
  switch (target.kind) {
    case 'server':
      redis = new Redis(target.url, { retryStrategy, ...common });
      break;
    case 'sentinel':
      redis = new Redis({
        retryStrategy,
        sentinelRetryStrategy: retryStrategy,
        // An old master that is alive but demoted answers writes with READONLY: reconnect (the
        // Sentinels are asked again) and resend. Not ioredis's `failoverDetector`: its
        // disconnect during a reconnect's Sentinel lookup ends the connection for good (seen in
        // the failover scenario on a loaded machine: a syncer that never came back).
        reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 2 : false),
        sentinels: target.sentinels,
        name: target.name,
        ...(target.sentinelPassword === undefined
          ? {}
          : { sentinelPassword: target.sentinelPassword }),
        ...credentials(target),
        ...(target.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
        ...common,
      });
      break;
    case 'cluster': {
      const { enableOfflineQueue, ...nodeOptions } = common;
      redis = new Cluster(target.nodes, {
        ...CLUSTER_FAILOVER_OPTIONS,
        ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
        redisOptions: {
          ...credentials(target),
          ...(target.tls ? { tls: {} } : {}),
          ...nodeOptions,
        },
      });
      break;
    }
  }
  redis.on('error', options.onError ?? (() => undefined));
  return redis;
}

function credentials(target: { username?: string; password?: string }): RedisOptions {
  return {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
  };
}
