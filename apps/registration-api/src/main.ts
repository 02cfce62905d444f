import { EndpointPolicy, GrpcPluginProber, TokenAuthority } from '@slicekeeper/admission';
import { createLogger, createMetricsRegistry, installShutdown } from '@slicekeeper/observability';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import { KeyStatusReader, RegistrationStore } from '@slicekeeper/registry';
import { buildApp } from './app';
import { loadConfig } from './config';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ service: 'registration-api', level: config.LOG_LEVEL });
  const tokens = await TokenAuthority.load(config.TOKEN_FILE);
  const endpointPolicy = new EndpointPolicy({
    socketDirectories: config.PLUGIN_SOCKET_DIRS,
    tcpHosts: config.PLUGIN_TCP_ALLOWLIST,
    allowLoopback: config.PLUGIN_ALLOW_LOOPBACK,
    allowLinkLocal: config.PLUGIN_ALLOW_LINK_LOCAL,
  });
  const redis = createRedisConnection({
    url: config.REDIS_URL,
    connectionName: 'registration-api',
  });
  const syncQueue = new SyncQueue({ connection: redis, prefix: config.REDIS_PREFIX });

  const app = buildApp({
    logger,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    store: new RegistrationStore({ redis, prefix: config.REDIS_PREFIX }),
    statusReader: new KeyStatusReader({ redis, prefix: config.REDIS_PREFIX }),
    syncQueue,
    prober: new GrpcPluginProber({
      dialTimeoutMs: config.PLUGIN_DIAL_TIMEOUT,
      callTimeoutMs: config.PLUGIN_CALL_TIMEOUT,
    }),
    endpointPolicy,
    tokens,
    redis,
    redisPrefix: config.REDIS_PREFIX,
    registry: createMetricsRegistry('registration-api'),
    rateLimitMax: config.RATE_LIMIT_MAX,
    rateLimitWindowMs: config.RATE_LIMIT_WINDOW,
    maxEndpointsPerKey: config.MAX_ENDPOINTS_PER_PLUGIN,
  });

  installShutdown({
    logger,
    timeoutMs: config.SHUTDOWN_TIMEOUT,
    // Stop intake and drain requests first (fastify answers 503 to new ones meanwhile), then
    // close the queue and Redis that in-flight requests were still using.
    close: async () => {
      await app.close();
      await syncQueue.close();
      await redis.quit();
    },
  });
  await app.listen({ host: config.HOST, port: config.PORT });
}

main().catch((error: unknown) => {
  // The logger may not exist yet (bad configuration): report on stderr and fail.
  console.error(error);
  process.exit(1);
});
