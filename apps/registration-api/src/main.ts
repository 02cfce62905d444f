import { EndpointPolicy, GrpcPluginProber, TokenAuthority } from '@slicekeeper/admission';
import { runService } from '@slicekeeper/runtime';
import { KeyStatusReader, RegistrationStore } from '@slicekeeper/state';
import { openApiConnection } from './api-redis';
import { buildApp } from './app';
import { loadConfig } from './config';

void runService({
  service: 'registration-api',
  loadConfig: () => loadConfig(process.env),
  build: async ({ config, logger, registry, redis: connections }) => {
    const tokens = await TokenAuthority.load(config.TOKEN_FILE);
    const endpointPolicy = new EndpointPolicy({
      socketDirectories: config.PLUGIN_SOCKET_DIRS,
      tcpHosts: config.PLUGIN_TCP_ALLOWLIST,
      allowLoopback: config.PLUGIN_ALLOW_LOOPBACK,
      allowLinkLocal: config.PLUGIN_ALLOW_LINK_LOCAL,
    });
    // One connection for the store, the rate limiter and the queue, failing fast while Redis is
    // down (503 at once, not requests held until it is back).
    const { connection: redis, syncQueue } = openApiConnection(connections, config.REDIS_PREFIX);

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
      registry,
      rateLimitMax: config.RATE_LIMIT_MAX,
      rateLimitWindowMs: config.RATE_LIMIT_WINDOW,
      removalGraceMs: config.REMOVAL_GRACE,
    });

    return {
      // fastify serves /metrics, /healthz and /readyz itself, on the API's port.
      start: async () => {
        await app.listen({ host: config.HOST, port: config.PORT });
      },
      // Stop intake and drain requests first (fastify answers 503 to new ones meanwhile), then
      // close the queue that in-flight requests were still using.
      close: [app, syncQueue],
    };
  },
});
