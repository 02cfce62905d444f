import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { EndpointPolicy } from '@slicekeeper/admission';
import { errorMessage } from '@slicekeeper/errors';
import {
  ProbeServer,
  createLogger,
  createMetricsRegistry,
  installShutdown,
} from '@slicekeeper/observability';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import { PluginWatcher, createGrpcConnector } from '@slicekeeper/watcher';
import { loadConfig } from './config';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'plugin-watcher', level: config.LOG_LEVEL });
  const replicaId = config.REPLICA_ID ?? `${hostname()}-${randomBytes(3).toString('hex')}`;
  const redis = createRedisConnection({ url: config.REDIS_URL, connectionName: 'plugin-watcher' });
  redis.on('error', (error: unknown) => {
    logger.warn({ err: errorMessage(error) }, 'redis connection error');
  });
  const queue = new SyncQueue({ connection: redis, prefix: config.REDIS_PREFIX });
  const metrics = createMetricsRegistry('plugin-watcher');
  // Checked before every dial: a registration that passed the API once is not trusted forever.
  const policy = new EndpointPolicy({
    socketDirectories: config.PLUGIN_SOCKET_DIRS,
    tcpHosts: config.PLUGIN_TCP_ALLOWLIST,
    allowLoopback: config.PLUGIN_ALLOW_LOOPBACK,
    allowLinkLocal: config.PLUGIN_ALLOW_LINK_LOCAL,
  });
  const watcher = new PluginWatcher({
    connector: createGrpcConnector({ policy }),
    redis,
    queue,
    prefix: config.REDIS_PREFIX,
    ...(config.WATCHER_MODE === 'node'
      ? { nodeName: config.NODE_NAME ?? '' }
      : { shared: { replicaId, leaseMs: config.LEASE_DURATION } }),
    wipeDelayMs: config.WIPE_DELAY,
    backoff: { initialMs: config.RECONNECT_INITIAL_DELAY, maxMs: config.RECONNECT_MAX_DELAY },
    logger,
    metrics,
  });
  const probes = new ProbeServer({
    port: config.PROBE_PORT,
    host: config.PROBE_HOST,
    registry: metrics,
    logger,
    readiness: { redis: async () => void (await redis.ping()) },
  });

  installShutdown({
    logger,
    close: async () => {
      probes.markShuttingDown();
      await watcher.close();
      await queue.close();
      await redis.quit();
      await probes.close();
    },
  });

  await probes.start();
  await watcher.start();
  logger.info(
    { mode: config.WATCHER_MODE, node: config.NODE_NAME, replicaId, keys: watcher.keys.length },
    'watching',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`plugin-watcher: ${errorMessage(error)}\n`);
  process.exit(1);
});
