import { randomUUID } from 'node:crypto';
import helmet from '@fastify/helmet';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { RedisClient } from '@slicekeeper/queue';
import type { Registry } from 'prom-client';
import type { EndpointPolicy, PluginProber, TokenAuthority } from '@slicekeeper/admission';
import type { Logger } from '@slicekeeper/observability';
import type { KeyStatusReader, RegistrationStore } from '@slicekeeper/state';
import type { Tracing } from '@slicekeeper/telemetry';
import { boundedProber } from './bounded-prober';
import { ApiMetrics } from './plugins/api-metrics';
import { apiDocs } from './plugins/api-docs';
import type { KubernetesIdentities } from './plugins/authentication';
import { answerClientError, answerFrameworkError, errorHandler } from './plugins/error-handler';
import { requestSpans } from './plugins/request-spans';
import { healthRoutes } from './routes/health-routes';
import { pluginRoutes } from './routes/plugin-routes';
import type { SyncRequester } from './routes/plugin-routes';
import { uiRoutes } from './routes/ui-routes';
import { MAX_PARAM_LENGTH } from './schemas/plugins';
import { tracedProber } from './traced-prober';
import { tracedSyncRequester } from './traced-sync-requester';

/** The dependencies of the API, built by main.ts (or a test) and injected. */
export interface AppOptions {
  store: RegistrationStore;
  statusReader: KeyStatusReader;
  syncQueue: SyncRequester;
  prober: PluginProber;
  endpointPolicy: EndpointPolicy;
  /** Static bearer tokens (compose, npm start); at least one of `tokens` and `kubernetes`. */
  tokens?: TokenAuthority | undefined;
  /** ServiceAccount tokens verified by TokenReview, actions authorized by SubjectAccessReview. */
  kubernetes?: KubernetesIdentities | undefined;
  /** For the shared rate-limit counters and the readiness check. */
  redis: RedisClient;
  /** slicekeeper's Redis prefix (rate-limit counters go under it). */
  redisPrefix: string;
  registry: Registry;
  /** Requests per token per window, shared by all replicas. @defaultValue 600 */
  rateLimitMax?: number;
  /** @defaultValue 60000 */
  rateLimitWindowMs?: number;
  /**
   * How long a removed plugin's slices stay unless it registers again, ms (kubelet waits 30 s
   * before wiping a deregistered plugin's slices, for restarts). @defaultValue 30000
   */
  removalGraceMs?: number;
  /** Plugin API versions spoken. @defaultValue the contracts' `SUPPORTED_PLUGIN_VERSIONS` */
  supportedVersions?: readonly string[];
  /** How long `/readyz` waits for Redis to answer, ms. @defaultValue 2000 */
  readinessTimeoutMs?: number;
  /** A link to a trace, `{traceId}` standing for its id: the status page links traces with it. */
  traceUrlTemplate?: string | undefined;
  /**
   * The service's spans (tracing on): a SERVER span per request, CLIENT spans for the calls to a
   * plugin, a PRODUCER span per sync enqueued. None: no span, no hook.
   */
  tracing?: Tracing | undefined;
}

/** Options of the fastify server itself, which a plugin cannot set. */
export interface ServerOptions {
  logger: Logger;
  /** Largest request body, bytes; larger ones get 413. @defaultValue 16384 */
  bodyLimitBytes?: number;
  /** Trust X-Forwarded-For (only behind a proxy that sets it). @defaultValue false */
  trustProxy?: boolean;
  /**
   * Serve HTTPS with this certificate and key (PEM); plain HTTP without. A new pair is applied
   * with `setSecureContext` on the server (see `ServingCertificate`).
   */
  https?: { cert: Buffer; key: Buffer } | undefined;
}

/** The probes kubelet and Prometheus call every few seconds: no span, they would bury the rest. */
const UNTRACED_ROUTES = ['/healthz', '/readyz', '/metrics'];

/** A request id the caller may pass in `x-request-id`, to follow a request across services. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * The root plugin: the whole API, given its dependencies. Tests build it with {@link buildApp}
 * and use `inject`; main.ts builds it the same way and listens.
 */
export const registrationApi = fp(
  async (app: FastifyInstance, options: AppOptions) => {
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    // JSON only: a text body is refused with 415 instead of reaching the schemas as a string.
    app.removeContentTypeParser('text/plain');
    const metrics = new ApiMetrics(options.registry);
    const { tracing } = options;

    // First, so that every later hook runs inside the request's span.
    if (tracing !== undefined) {
      await app.register(requestSpans, { tracing, untracedRoutes: UNTRACED_ROUTES });
    }
    app.addHook('onRequest', (request, reply, done) => {
      void reply.header('x-request-id', request.id);
      done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.requests.inc({ method: request.method, route, code: String(reply.statusCode) });
      metrics.requestSeconds.observe({ method: request.method, route }, reply.elapsedTime / 1000);
      done();
    });

    await app.register(errorHandler);
    await app.register(helmet, { global: true });
    await app.register(apiDocs);
    await app.register(healthRoutes, {
      pingRedis: () => options.redis.ping(),
      registry: options.registry,
      ...(options.readinessTimeoutMs === undefined
        ? {}
        : { readinessTimeoutMs: options.readinessTimeoutMs }),
    });
    await app.register(pluginRoutes, {
      prefix: '/v1',
      store: options.store,
      statusReader: options.statusReader,
      syncQueue:
        tracing === undefined ? options.syncQueue : tracedSyncRequester(options.syncQueue, tracing),
      prober:
        tracing === undefined
          ? boundedProber(options.prober)
          : tracedProber(boundedProber(options.prober), tracing),
      endpointPolicy: options.endpointPolicy,
      tokens: options.tokens,
      kubernetes: options.kubernetes,
      metrics,
      redis: options.redis,
      redisPrefix: options.redisPrefix,
      rateLimitMax: options.rateLimitMax ?? 600,
      rateLimitWindowMs: options.rateLimitWindowMs ?? 60_000,
      removalGraceMs: options.removalGraceMs ?? 30_000,
      ...(options.supportedVersions === undefined
        ? {}
        : { supportedVersions: options.supportedVersions }),
    });
    // The status page: files only, outside /v1 and its authentication; its script reads /v1.
    await app.register(uiRoutes, { traceUrlTemplate: options.traceUrlTemplate });
  },
  { name: 'registration-api' },
);

/**
 * Creates the fastify server with the API registered: request ids (the caller's `x-request-id`
 * when well-formed, else a UUID) on every log line, the body limit, poisoned JSON refused, and
 * the errors fastify answers before any hook runs (router refusals, unparsable HTTP, requests
 * during shutdown) in the API's error shape.
 */
export function buildApp(options: AppOptions & ServerOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimitBytes ?? 16_384,
    trustProxy: options.trustProxy ?? false,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // fastify's own 503 while closing has its own body; the error handler answers it instead.
    return503OnClosing: false,
    ...(options.https === undefined ? {} : { https: options.https }),
  });
  void app.register(registrationApi, options);
  return app as unknown as FastifyInstance;
}
