import type { DestinationStream } from 'pino';
import type { Registry } from 'prom-client';
import { redisTarget, traceExportSettings } from '@slicekeeper/config';
import type { RedisEnv, TelemetryEnv } from '@slicekeeper/config';
import { errorMessage } from '@slicekeeper/errors';
import {
  MemoryReducer,
  ProbeServer,
  createLogger,
  createMetricsRegistry,
  installShutdown,
} from '@slicekeeper/observability';
import type { LevelWithSilent, Logger, ReadinessCheck } from '@slicekeeper/observability';
import { RedisConnections } from '@slicekeeper/queue';
import type { RedisFactory } from '@slicekeeper/queue';
import { startTracing } from '@slicekeeper/telemetry';
import type { StartedTracing, Tracing } from '@slicekeeper/telemetry';

/** The settings every service has, under the names its config schema gives them. */
export interface ServiceConfig extends RedisEnv, TelemetryEnv {
  readonly LOG_LEVEL: LevelWithSilent;
  /** Bound on a graceful shutdown, ms; past it the process exits with code 1. */
  readonly SHUTDOWN_TIMEOUT: number;
  /** Time between two memory-reducing collections, ms; 0 turns them off. */
  readonly MEMORY_REDUCE_INTERVAL: number;
}

/** What the skeleton gives a service's build function. */
export interface ServiceContext<Config extends ServiceConfig> {
  readonly config: Config;
  /** The service's logger: `service` on every line. */
  readonly logger: Logger;
  /** The service's metrics registry: Node's default metrics, `service` on every series. */
  readonly registry: Registry;
  /**
   * Opens the service's Redis connections (`redis.open(connectionName, redisOptions?)`): each
   * has its outages logged once each, and is closed by the skeleton, last. BullMQ Queues and
   * Workers built on one join its outage log through `redis.addErrorSources`.
   */
  readonly redis: RedisFactory;
  /**
   * The service's spans when tracing is on (an OTLP endpoint in the `OTEL_*` settings); absent
   * when it is off, and the components given none make no spans.
   */
  readonly tracing?: Tracing;
}

/** A long-lived part of a service. */
export interface Closable {
  close(): PromiseLike<unknown>;
}

/** The probe server of a service: `/metrics`, `/healthz`, `/readyz`. */
export interface ProbeSettings {
  port: number;
  /** @defaultValue `'127.0.0.1'` */
  host?: string;
  /** Named checks `/readyz` runs; every one must pass for the service to be ready. */
  readiness?: Record<string, ReadinessCheck>;
}

/** A built service, as its build function returns it. Nothing runs yet. */
export interface ServiceParts {
  /** The probe server; none when the service serves `/metrics`, `/healthz`, `/readyz` itself. */
  probes?: ProbeSettings;
  /** Starts the service's work, once the probe server listens (at `probeUrl`). */
  start(started: { probeUrl: string | undefined }): PromiseLike<void> | void;
  /**
   * Closed one after the other on SIGTERM or SIGINT: stop intake first, drain work, then close
   * what the work used. The probe server is closed after them, and the Redis connections last.
   */
  close: readonly Closable[];
}

export interface RunServiceOptions<Config extends ServiceConfig> {
  /** The service's name: on every log line and series, and the prefix of a fatal error. */
  service: string;
  /** Parses the service's configuration (its `config.ts`); a failure is fatal. */
  loadConfig: () => Config;
  /** Builds the service's parts from what the skeleton provides; a failure is fatal. */
  build: (context: ServiceContext<Config>) => PromiseLike<ServiceParts> | ServiceParts;
  /** Injected for tests. @defaultValue `process.exit` */
  exit?: (code: number) => void;
  /** Where a fatal error goes. Injected for tests. @defaultValue `process.stderr` */
  stderr?: { write(text: string): unknown };
  /** Where log lines go. Injected for tests. @defaultValue stdout */
  logDestination?: DestinationStream;
  /** @defaultValue `['SIGTERM', 'SIGINT']` */
  signals?: readonly NodeJS.Signals[];
}

/** A service that started. */
export interface RunningService {
  /** Where the probe server listens, if the service has one. */
  readonly probeUrl: string | undefined;
  /** Shuts the service down as SIGTERM does, then exits. */
  shutdown(): Promise<void>;
}

/**
 * The one skeleton every service starts through: parses its config, makes its logger, metrics
 * registry and Redis connections, has the service build its parts, listens for probes and
 * starts them; on SIGTERM or SIGINT closes the parts in the service's order, then the probe
 * server, then the Redis connections, within `SHUTDOWN_TIMEOUT`.
 *
 * A failure to start — a bad config most often — is fatal: one `<service>: <message>` entry
 * on stderr (a config error names every bad variable on a line of its own, no stack), the
 * Redis connections dropped, exit code 1. Never rejects; resolves with the running service,
 * or with undefined after a fatal exit (which returns only when `exit` is injected).
 */
export async function runService<Config extends ServiceConfig>(
  options: RunServiceOptions<Config>,
): Promise<RunningService | undefined> {
  const { service } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let connections: RedisConnections | undefined;
  let probes: ProbeServer | undefined;
  let tracer: StartedTracing | undefined;
  try {
    const config = options.loadConfig();
    const traceExport = traceExportSettings(config, service);
    tracer = traceExport === undefined ? undefined : startTracing(traceExport);
    const logger = createLogger({
      service,
      level: config.LOG_LEVEL,
      traceIds: tracer !== undefined,
      ...(options.logDestination === undefined ? {} : { destination: options.logDestination }),
    });
    if (traceExport !== undefined) {
      logger.info(
        { endpoint: traceExport.url, sampler: traceExport.sampler },
        'tracing to an OTLP/HTTP endpoint',
      );
    }
    const registry = createMetricsRegistry(service);
    const redis = new RedisConnections({ target: redisTarget(config), logger, registry });
    connections = redis;
    const tracing = tracer?.tracing;
    const parts = await options.build({
      config,
      logger,
      registry,
      redis,
      ...(tracing === undefined ? {} : { tracing }),
    });
    const probeServer =
      parts.probes === undefined
        ? undefined
        : new ProbeServer({ ...parts.probes, registry, logger });
    probes = probeServer;
    const memory = new MemoryReducer({
      intervalMs: config.MEMORY_REDUCE_INTERVAL,
      logger,
      registry,
    });
    const shutdown = installShutdown({
      logger,
      timeoutMs: config.SHUTDOWN_TIMEOUT,
      exit,
      ...(options.signals === undefined ? {} : { signals: options.signals }),
      close: async () => {
        probeServer?.markShuttingDown();
        await memory.close();
        for (const part of parts.close) await part.close();
        await probeServer?.close();
        await tracer?.shutdown();
        await redis.close();
      },
    });
    const probeUrl = await probeServer?.start();
    await parts.start({ probeUrl });
    memory.start();
    return { probeUrl, shutdown };
  } catch (error) {
    (options.stderr ?? process.stderr).write(`${service}: ${errorMessage(error)}\n`);
    connections?.disconnect();
    await probes?.close();
    exit(1);
    return undefined;
  }
}
