import { KubeSliceClient } from '@slicekeeper/kube';
import { SyncQueue } from '@slicekeeper/queue';
import { runService } from '@slicekeeper/runtime';
import { Maintenance, SliceSyncer, SyncProcessor, SyncerMetrics } from '@slicekeeper/syncer';
import { WriteRateLimiter } from '@slicekeeper/state';
import { kubeconfigSource, loadConfig } from './config';

void runService({
  service: 'slice-syncer',
  loadConfig: () => loadConfig(process.env),
  build: ({ config, logger, registry, redis: connections }) => {
    const metrics = new SyncerMetrics(registry);

    const api = new KubeSliceClient({
      kubeconfig: kubeconfigSource(config),
      nodeUidTtlMs: config.NODE_UID_TTL,
      onRequest: (verb, resource, code) => {
        metrics.kubeRequests.inc({ verb, resource, code: String(code) });
      },
    });

    const redis = connections.open('slice-syncer');
    // Syncs pipeline their Redis commands, and ioredis copies every script defined on a
    // connection into each pipeline it builds: with BullMQ's dozens of scripts on the queue's
    // connection, that copy was 8% of the syncer's busy CPU.
    const syncConnection = connections.open('slice-syncer-sync');
    const workerConnection = connections.open('slice-syncer-worker');
    const maintenanceConnection = connections.open('slice-syncer-maintenance');
    const syncQueue = new SyncQueue({ connection: redis, prefix: config.REDIS_PREFIX });
    connections.addErrorSources(redis, syncQueue.queue);

    const processor = new SyncProcessor({
      api,
      redis: syncConnection,
      prefix: config.REDIS_PREFIX,
      writeLimiter: new WriteRateLimiter({
        redis: syncConnection,
        prefix: config.REDIS_PREFIX,
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

    return {
      probes: {
        host: config.PROBE_HOST,
        port: config.PROBE_PORT,
        readiness: {
          redis: async () => {
            await redis.ping();
          },
          'kube-apiserver': () => api.ping(),
        },
      },
      start: async ({ probeUrl }) => {
        syncer.start();
        await maintenance.start();
        logger.info({ probes: probeUrl, concurrency: config.SYNC_CONCURRENCY }, 'started');
      },
      close: [maintenance, syncer, syncQueue, api],
    };
  },
});
