import { KubeSliceClient } from '@slicekeeper/kube';
import {
  ProbeServer,
  createLogger,
  createMetricsRegistry,
  installShutdown,
} from '@slicekeeper/observability';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import {
  Maintenance,
  SliceSyncer,
  SyncProcessor,
  SyncerMetrics,
  WriteRateLimiter,
} from '@slicekeeper/syncer';
import { redisKeys } from '@slicekeeper/contracts';
import { kubeconfigSource, loadConfig } from './config';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ service: 'slice-syncer', level: config.LOG_LEVEL });
  const registry = createMetricsRegistry('slice-syncer');
  const metrics = new SyncerMetrics(registry);

  const api = new KubeSliceClient({
    kubeconfig: kubeconfigSource(config),
    nodeUidTtlMs: config.NODE_UID_TTL,
    onRequest: (verb, resource, code) => {
      metrics.kubeRequests.inc({ verb, resource, code: String(code) });
    },
  });

  const onError = (error: Error): void => {
    logger.warn({ err: error.message }, 'redis connection error');
  };
  const connect = (connectionName: string) =>
    createRedisConnection({ url: config.REDIS_URL, connectionName, onError });
  const redis = connect('slice-syncer');
  // Syncs pipeline their Redis commands, and ioredis copies every script defined on a connection
  // into each pipeline it builds: with BullMQ's dozens of scripts on the queue's connection, that
  // copy was 8% of the syncer's busy CPU.
  const syncConnection = connect('slice-syncer-sync');
  const workerConnection = connect('slice-syncer-worker');
  const maintenanceConnection = connect('slice-syncer-maintenance');
  const syncQueue = new SyncQueue({ connection: redis, prefix: config.REDIS_PREFIX });

  const processor = new SyncProcessor({
    api,
    redis: syncConnection,
    prefix: config.REDIS_PREFIX,
    writeLimiter: new WriteRateLimiter({
      redis: syncConnection,
      key: redisKeys(config.REDIS_PREFIX).writeRateLimit,
      ratePerSecond: config.SYNC_WRITE_RATE,
      burst: config.SYNC_WRITE_BURST,
    }),
    metrics,
    logger,
  });
  const syncer = new SliceSyncer({
    connection: workerConnection,
    prefix: config.REDIS_PREFIX,
    processor,
    logger,
    concurrency: config.SYNC_CONCURRENCY,
    lockDurationMs: config.SYNC_LOCK_DURATION,
    stalledIntervalMs: config.SYNC_STALLED_INTERVAL,
    registry,
  });
  const maintenance = new Maintenance({
    connection: maintenanceConnection,
    redis,
    prefix: config.REDIS_PREFIX,
    api,
    syncQueue,
    logger,
    resyncIntervalMs: config.RESYNC_INTERVAL,
    janitorIntervalMs: config.JANITOR_INTERVAL,
    orphanGraceMs: config.ORPHAN_GRACE,
    registry,
  });
  const probes = new ProbeServer({
    host: config.PROBE_HOST,
    port: config.PROBE_PORT,
    registry,
    logger,
    readiness: {
      redis: async () => {
        await redis.ping();
      },
      'kube-apiserver': () => api.ping(),
    },
  });

  installShutdown({
    logger,
    timeoutMs: config.SHUTDOWN_TIMEOUT,
    close: async () => {
      probes.markShuttingDown();
      await maintenance.close();
      await syncer.close();
      await syncQueue.close();
      await probes.close();
      await api.close();
      for (const connection of [redis, syncConnection, workerConnection, maintenanceConnection])
        await connection.quit();
    },
  });

  const probeUrl = await probes.start();
  syncer.start();
  await maintenance.start();
  logger.info({ probes: probeUrl, concurrency: config.SYNC_CONCURRENCY }, 'started');
}

main().catch((error: unknown) => {
  process.stderr.write(`slice-syncer: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
