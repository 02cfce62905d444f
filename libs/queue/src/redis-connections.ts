import { EventEmitter } from 'node:events';
import { Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { RedisOutageLog } from '@slicekeeper/observability';
import type { Logger } from '@slicekeeper/observability';
import type { RedisTarget } from '@slicekeeper/config';
import { createRedisConnection } from './redis-connection';
import type { RedisClient } from './redis-connection';
import { redisHealth } from './redis-health';

export interface RedisConnectionsOptions {
  /** Where Redis is, for every connection: one server, through Sentinel, or a Cluster. */
  target: RedisTarget;
  /** Where the outages and the connections opened are logged. */
  logger: Pick<Logger, 'error' | 'info' | 'warn' | 'debug'>;
  /** Where the connections and their outages are counted, if anywhere. */
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
 * The one Redis connection factory of a process: every connection it opens is named, counted
 * (`slicekeeper_redis_connections`, and a debug line each), has its outages logged in the
 * process's one {@link RedisOutageLog}, and is closed with the others.
 */
export class RedisConnections implements RedisFactory {
  private readonly names = new Map<RedisClient, string>();
  private readonly probes = new Map<RedisClient, { health: EventEmitter; pinging: boolean }>();
  private readonly down = new Set<string>();
  private readonly outages: RedisOutageLog;
  private readonly metrics: RedisMetrics | undefined;
  private opened = 0;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: RedisConnectionsOptions) {
    this.metrics = options.registry === undefined ? undefined : new RedisMetrics(options.registry);
    this.outages = new RedisOutageLog({
      logger: options.logger,
      onChange: (connection, up) => {
        if (up) this.down.delete(connection);
        else this.down.add(connection);
        this.metrics?.up.set({ connection }, up ? 1 : 0);
        if (!up) this.metrics?.outages.inc({ connection });
      },
    });
  }

  /** How many connections the process opened: its own and the blocking one of each Worker. */
  get count(): number {
    return this.opened;
  }

  /**
   * Opens a connection, named `connectionName` in `CLIENT LIST` and in the outage lines.
   * Made by `createRedisConnection`: commands wait through an outage, as workers need, unless
   * `redisOptions` say otherwise — e.g. to fail fast while Redis is down, as a connection serving
   * HTTP requests should.
   */
  open(connectionName: string, redisOptions?: RedisOptions): RedisClient {
    if (this.closing !== undefined) throw new Error(`redis ${connectionName}: already closed`);
    if ([...this.names.values()].includes(connectionName)) {
      throw new Error(`redis ${connectionName}: a connection of that name is open already`);
    }
    const connection = createRedisConnection({
      target: this.options.target,
      connectionName,
      ...(redisOptions === undefined ? {} : { redisOptions }),
    });
    this.names.set(connection, connectionName);
    this.outages.watch(connectionName, redisHealth(connection));
    const probe = { health: new EventEmitter(), pinging: false };
    this.probes.set(connection, probe);
    this.outages.watch(connectionName, probe.health);
    this.metrics?.up.set({ connection: connectionName }, 1);
    this.counted(connectionName);
    return connection;
  }

  /**
   * Routes the errors of `sources` — BullMQ Queues or Workers built on `connection`, which
   * re-emit its errors — to the process's outage log: they neither log an outage twice nor
   * print raw errors on stderr (what BullMQ does when nothing listens). A Worker opens a
   * blocking connection of its own from `connection`: it is counted here, and its errors reach
   * the log through the Worker.
   */
  addErrorSources(connection: RedisClient, ...sources: readonly EventEmitter[]): void {
    const name = this.names.get(connection);
    if (name === undefined) throw new Error('not a connection of these RedisConnections');
    const isOutage = (error: unknown): boolean =>
      isConnectionError(error) || connection.status !== 'ready';
    this.outages.addErrorSources(name, isOutage, ...sources);
    const probe = this.probes.get(connection);
    for (const source of sources) {
      const emitter: EventEmitter = source;
      if (source instanceof Worker) this.counted(`${name}/${source.name}-blocking`);
      // A Worker's blocking connection may hear of an outage before `connection` does, or alone:
      // the outage is over once a PING through `connection` is answered (it waits for the
      // reconnect), if the connection's own `ready` did not say so already.
      emitter.on('error', (error: unknown) => {
        if (probe === undefined || probe.pinging || !isConnectionError(error)) return;
        probe.pinging = true;
        ping(connection).then(
          () => {
            probe.pinging = false;
            probe.health.emit('ready');
          },
          () => {
            probe.pinging = false;
          },
        );
      });
    }
  }

  /**
   * Closes every connection: QUIT, so that commands already sent get their replies, and resolves
   * once the connections have ended. A connection that is not ready has nothing to flush and is
   * dropped at once (QUIT would wait for a reconnect). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.names.keys()].map((connection) => quit(connection)));
    })();
    return this.closing;
  }

  /** Drops every connection at once, without QUIT: after a failed start. */
  disconnect(): void {
    this.closing ??= Promise.resolve();
    for (const connection of this.names.keys()) connection.disconnect();
  }

  private counted(connection: string): void {
    this.opened++;
    this.metrics?.connections.set({ connection }, 1);
    this.options.logger.debug({ connection, opened: this.opened }, 'redis connection opened');
  }
}

/** The codes of Node's socket errors that mean Redis cannot be reached. */
const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** What ioredis rejects commands with once a connection is gone (its own constant). */
const CONNECTION_CLOSED = 'Connection is closed.';

/** Whether `error` says Redis cannot be reached, as opposed to a command's failure. */
function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code } = error as NodeJS.ErrnoException;
  return (
    (code !== undefined && CONNECTION_ERROR_CODES.has(code)) || error.message === CONNECTION_CLOSED
  );
}

function ping(connection: RedisClient): Promise<string> {
  return connection instanceof Cluster ? connection.ping() : connection.ping();
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

/** The Redis metrics of a process: one set, however many connections it opens. */
class RedisMetrics {
  readonly connections: Gauge<'connection'>;
  readonly up: Gauge<'connection'>;
  readonly outages: Counter<'connection'>;

  constructor(registry: Registry) {
    this.connections = new Gauge({
      name: 'slicekeeper_redis_connections',
      help: "Redis connections the process opened, by name: its own, and each BullMQ Worker's blocking one (`<connection>/<queue>-blocking`). Their sum is the process's share of Redis's clients.",
      labelNames: ['connection'],
      registers: [registry],
    });
    this.up = new Gauge({
      name: 'slicekeeper_redis_up',
      help: 'Whether the Redis connection serves: 0 from its first error until it is ready again (through Sentinel or on a Cluster, until the failover is over).',
      labelNames: ['connection'],
      registers: [registry],
    });
    this.outages = new Counter({
      name: 'slicekeeper_redis_outages_total',
      help: 'Redis outages of the connection: each time it stopped serving.',
      labelNames: ['connection'],
      registers: [registry],
    });
  }
}
