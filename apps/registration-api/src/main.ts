import { EndpointPolicy, GrpcPluginProber, TokenAuthority } from '@slicekeeper/admission';
import { createLogger, createMetricsRegistry, installShutdown } from '@slicekeeper/observability';
import { KeyStatusReader, RegistrationStore } from '@slicekeeper/registry';
import { ApiRedis } from './api-redis';
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
  // One connection for the store, the rate limiter and the queue, failing fast while Redis is
  // down (503 at once, not requests held until it is back); each outage logged once.
  const apiRedis = new ApiRedis({
    url: config.REDIS_URL,
    prefix: config.REDIS_PREFIX,
    logger,
  });
  const { connection: redis, syncQueue } = apiRedis;

  const app = buildApp({
    logger,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    store: new RegistrationStore({
      redis,
      prefix: config.REDIS_PREFIX,
      maxEndpointsPerKey: config.MAX_ENDPOINTS_PER_PLUGIN,
      maxDriversPerNode: config.MAX_DRIVERS_PER_NODE,
    }),
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
    removalGraceMs: config.REMOVAL_GRACE,
  });

  installShutdown({
    logger,
    timeoutMs: config.SHUTDOWN_TIMEOUT,
    // Stop intake and drain requests first (fastify answers 503 to new ones meanwhile), then
    // close the queue and Redis that in-flight requests were still using.
    close: async () => {
      await app.close();
      await apiRedis.close();
    },
  });
  await app.listen({ host: config.HOST, port: config.PORT });
}

main().catch((error: unknown) => {
  // The logger may not exist yet (bad configuration): report on stderr and fail.
  console.error(error);
  process.exit(1);
});
