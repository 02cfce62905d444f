import { Server as TlsServer } from 'node:tls';
import {
  EndpointPolicy,
  GrpcPluginProber,
  KubernetesAuthenticator,
  KubernetesAuthorizer,
  TokenAuthority,
} from '@slicekeeper/admission';
import { KubeReviewClient, KubeTransport } from '@slicekeeper/kube';
import { runService } from '@slicekeeper/runtime';
import { KeyStatusReader, RegistrationStore } from '@slicekeeper/state';
import { systemClock } from '@slicekeeper/time';
import { openApiConnection } from './api-redis';
import { buildApp } from './app';
import { kubeconfigSource, loadConfig } from './config';
import type { RegistrationApiConfig } from './config';
import type { KubernetesIdentities } from './plugins/authentication';
import { ServingCertificate, readCertificatePair } from './serving-certificate';

/** TokenReview and SubjectAccessReview against the cluster, when AUTH_MODE asks for them. */
function kubernetesIdentities(
  config: RegistrationApiConfig,
): { identities: KubernetesIdentities; transport: KubeTransport } | undefined {
  if (config.AUTH_MODE === 'static') return undefined;
  const transport = new KubeTransport(kubeconfigSource(config));
  const reviews = new KubeReviewClient({ transport, requestTimeoutMs: config.REVIEW_TIMEOUT });
  return {
    transport,
    identities: {
      authenticator: new KubernetesAuthenticator({
        reviewer: reviews,
        audiences: config.TOKEN_AUDIENCE,
        ttlMs: config.TOKEN_REVIEW_CACHE_TTL,
        maxEntries: config.REVIEW_CACHE_SIZE,
        clock: systemClock,
      }),
      authorizer: new KubernetesAuthorizer({
        reviewer: reviews,
        ttlMs: config.ACCESS_REVIEW_CACHE_TTL,
        maxEntries: config.REVIEW_CACHE_SIZE,
        clock: systemClock,
      }),
    },
  };
}

void runService({
  service: 'registration-api',
  loadConfig: () => loadConfig(process.env),
  build: async ({ config, logger, registry, redis: connections, tracing }) => {
    const tokens =
      config.AUTH_MODE === 'kubernetes' || config.TOKEN_FILE === undefined
        ? undefined
        : await TokenAuthority.load(config.TOKEN_FILE);
    const kubernetes = kubernetesIdentities(config);
    const https =
      config.TLS_CERT_FILE === undefined || config.TLS_KEY_FILE === undefined
        ? undefined
        : {
            certFile: config.TLS_CERT_FILE,
            keyFile: config.TLS_KEY_FILE,
            pair: await readCertificatePair(config.TLS_CERT_FILE, config.TLS_KEY_FILE),
          };
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
      https: https?.pair,
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
      kubernetes: kubernetes?.identities,
      redis,
      redisPrefix: config.REDIS_PREFIX,
      registry,
      rateLimitMax: config.RATE_LIMIT_MAX,
      rateLimitWindowMs: config.RATE_LIMIT_WINDOW,
      removalGraceMs: config.REMOVAL_GRACE,
      tracing,
      traceUrlTemplate: config.TRACE_URL_TEMPLATE,
    });
    const certificate =
      https === undefined
        ? undefined
        : new ServingCertificate({
            certFile: https.certFile,
            keyFile: https.keyFile,
            current: https.pair,
            logger,
            apply: (pair) => {
              if (!(app.server instanceof TlsServer)) throw new Error('the API serves no TLS');
              app.server.setSecureContext(pair);
            },
          });

    return {
      // fastify serves /metrics, /healthz and /readyz itself, on the API's port.
      start: async () => {
        await app.listen({ host: config.HOST, port: config.PORT });
        certificate?.start();
      },
      // Stop intake and drain requests first (fastify answers 503 to new ones meanwhile), then
      // close the queue that in-flight requests were still using, and the cluster connection.
      close: [
        ...(certificate === undefined ? [] : [certificate]),
        app,
        syncQueue,
        ...(kubernetes === undefined
          ? []
          : [
              {
                close: () => {
                  kubernetes.transport.close();
                  return Promise.resolve();
                },
              },
            ]),
      ],
    };
  },
});
