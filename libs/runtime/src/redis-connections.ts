import type { EventEmitter } from 'node:events';
import type { RedisOptions } from 'ioredis';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { RedisClient } from '@slicekeeper/queue';
import { logRedisOutages } from '@slicekeeper/observability';
import type { Logger, RedisOutageLog } from '@slicekeeper/observability';
import type { RedisTarget } from '@slicekeeper/config';
import { createRedisConnection, redisHealth } from '@slicekeeper/queue';

export interface RedisConnectionsOptions {
  /** Where Redis is, for every connection: one server, through Sentinel, or a Cluster. */
  target: RedisTarget;
  /** Where each connection's outages are logged. */
  logger: Pick<Logger, 'error' | 'info'>;
  /** Where each connection's outages are counted, if anywhere. */
  registry?: Registry;
}

/** Opens Redis connections whose outages are logged, for code that does not close them. */
export interface RedisFactory {
  /** See {@link RedisConnections.open}. */
  open(connectionName: string, redisOptions?: RedisOptions): RedisClient;
  /** See {@link RedisConnections.addErrorSources}. */
  addErrorSources(connection: RedisClient, ...sources: readonly EventEmitter[]): void;
}

/**
 * The Redis connections of one process: each opened with its outages logged once each
 * (`logRedisOutages`, with the connection's name as `connection`), and all closed together.
 */
export class RedisConnections implements RedisFactory {
  private readonly outageLogs = new Map<RedisClient, RedisOutageLog>();
  private closing: Promise<void> | undefined;
  private readonly metrics: RedisMetrics | undefined;

  constructor(private readonly options: RedisConnectionsOptions) {
    this.metrics = options.registry === undefined ? undefined : redisMetrics(options.registry);
  }

  /**
   * Opens a connection, named `connectionName` in `CLIENT LIST` and in its outage lines.
   * Made by `createRedisConnection`: commands wait through an outage, as workers need, unless
   * `redisOptions` say otherwise — e.g. to fail fast while Redis is down, as a connection serving
   * HTTP requests should.
   */
  open(connectionName: string, redisOptions?: RedisOptions): RedisClient {
    if (this.closing !== undefined) throw new Error(`redis ${connectionName}: already closed`);
    this.metrics?.up.set({ connection: connectionName }, 1);
    const connection = createRedisConnection({
      target: this.options.target,
      connectionName,
      ...(redisOptions === undefined ? {} : { redisOptions }),
    });
    this.outageLogs.set(
      connection,
      logRedisOutages({
        logger: this.options.logger,
        sources: [redisHealth(connection)],
        fields: { connection: connectionName },
        onChange: (up) => {
          this.metrics?.up.set({ connection: connectionName }, up ? 1 : 0);
          if (!up) this.metrics?.outages.inc({ connection: connectionName });
        },
      }),
    );
    return connection;
  }

  /**
   * Counts `sources` — BullMQ Queues or Workers built on `connection`, which re-emit its errors
   * — as part of the connection for its outage log: they neither log an outage twice nor print
   * raw errors on stderr (what BullMQ does when nothing listens).
   */
  addErrorSources(connection: RedisClient, ...sources: readonly EventEmitter[]): void {
    const log = this.outageLogs.get(connection);
    if (log === undefined) throw new Error('not a connection of these RedisConnections');
    log.add(...sources);
  }

  /**
   * Closes every connection: QUIT, so that commands already sent get their replies, and resolves
   * once the connections have ended. A connection that is not ready has nothing to flush and is
   * dropped at once (QUIT would wait for a reconnect). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.outageLogs.keys()].map((connection) => quit(connection)));
    })();
    return this.closing;
  }

  /** Drops every connection at once, without QUIT: after a failed start. */
  disconnect(): void {
    this.closing ??= Promise.resolve();
    for (const connection of this.outageLogs.keys()) connection.disconnect();
  }
}

async function quit(connection: RedisClient): Promise<void> {
  if (connection.status !== 'ready') {
    connection.disconnect();
    return;
  }
  const ended = new Promise<void>((resolve) => {
    connection.once('end', resolve);
  });
  try {
    await connection.quit();
  } catch {
    // Refused when the connection dropped meanwhile (no offline queue): nothing to flush.
    connection.disconnect();
    return;
  }
  await ended;
}

interface RedisMetrics {
  up: Gauge<'connection'>;
  outages: Counter<'connection'>;
}

function redisMetrics(registry: Registry): RedisMetrics {
  return {
    up: new Gauge({
      name: 'slicekeeper_redis_up',
      help: 'Whether the Redis connection serves: 0 from its first error until it is ready again (through Sentinel or on a Cluster, until the failover is over).',
      labelNames: ['connection'],
      registers: [registry],
    }),
    outages: new Counter({
      name: 'slicekeeper_redis_outages_total',
      help: 'Redis outages of the connection: each time it stopped serving.',
      labelNames: ['connection'],
      registers: [registry],
    }),
  };
}
