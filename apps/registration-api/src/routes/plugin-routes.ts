import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { RedisClient } from '@slicekeeper/queue';
import { admitPlugin } from '@slicekeeper/admission';
import type {
  AdmittedPlugin,
  EndpointPolicy,
  PluginProber,
  Principal,
  TokenAuthority,
} from '@slicekeeper/admission';
import { keyId, pluginPath, registrationSchema } from '@slicekeeper/contracts';
import type { Registration, SliceKey, SyncReason } from '@slicekeeper/contracts';
import { RegistrationRefusedError, apiRateLimitNamespace } from '@slicekeeper/state';
import type { KeyStatusReader, RegistrationStore } from '@slicekeeper/state';
import { parseDurationMs } from '@slicekeeper/config';
import { HttpError } from '../http-error';
import type { ApiMetrics } from '../plugins/api-metrics';
import {
  authentication,
  authorizeDriver,
  authorizeNode,
  principalOf,
} from '../plugins/authentication';
import type { KubernetesIdentities } from '../plugins/authentication';
import { errorResponses } from '../schemas/error';
import {
  listPluginsQuerySchema,
  pluginListSchema,
  pluginParamsSchema,
  pluginStatusSchema,
  registerPluginBodySchema,
  removePluginQuerySchema,
  removedSchema,
} from '../schemas/plugins';
import type { PluginStatus } from '../schemas/plugins';

/** What the routes need of the sync queue: asking for a key's sync. */
export interface SyncRequester {
  enqueue(key: SliceKey, reason: SyncReason): Promise<void>;
}

export interface PluginRoutesOptions {
  store: RegistrationStore;
  statusReader: KeyStatusReader;
  syncQueue: SyncRequester;
  prober: PluginProber;
  endpointPolicy: EndpointPolicy;
  /** Static tokens (compose, npm start); undefined with AUTH_MODE=kubernetes. */
  tokens?: TokenAuthority | undefined;
  /** ServiceAccount tokens and RBAC; undefined with AUTH_MODE=static. */
  kubernetes?: KubernetesIdentities | undefined;
  metrics: ApiMetrics;
  /** Shared rate-limit counters live here, so that every replica enforces the same limit. */
  redis: RedisClient;
  redisPrefix: string;
  /** Requests per token per window. */
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /**
   * How long a removed plugin's slices stay unless it registers again, ms, when the request does
   * not say (`?grace=`).
   */
  removalGraceMs: number;
  /** ResourcePublisher versions slicekeeper speaks; the contracts' list unless a test narrows it. */
  supportedVersions?: readonly string[];
}

const TAGS = ['plugins'];
const SECURITY = [{ bearer: [] }];

/**
 * The plugin registry API under /v1. Every route needs a bearer token; a node-bound token (a
 * static one, or a ServiceAccount token with a node claim) can only act on its own node, and a
 * Kubernetes identity only on the drivers RBAC grants it (SubjectAccessReview on
 * `plugins.slicekeeper.dev`). Checks run cheapest first — token, rate limit, body, node
 * binding, RBAC on a declared driver, endpoint allowlist — so that nothing invalid or
 * unauthorized ever reaches Redis or a dial; a driver the request does not name is checked
 * against RBAC once GetInfo has told it, before anything is stored.
 */
export async function pluginRoutes(
  app: FastifyInstance,
  options: PluginRoutesOptions,
): Promise<void> {
  const { store, statusReader, metrics } = options;
  await app.register(authentication, { tokens: options.tokens, kubernetes: options.kubernetes });
  await app.register(rateLimit, {
    global: true,
    max: options.rateLimitMax,
    timeWindow: options.rateLimitWindowMs,
    redis: options.redis,
    nameSpace: apiRateLimitNamespace(options.redisPrefix),
    keyGenerator: (request) => principalOf(request).name,
    errorResponseBuilder: (_request, context) =>
      new HttpError(
        429,
        'rate-limited',
        `rate limit of ${context.max} requests per ${context.after} exceeded; retry in ${Math.ceil(context.ttl / 1000)}s`,
      ),
  });
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.post(
    '/plugins',
    {
      schema: {
        tags: TAGS,
        security: SECURITY,
        summary: 'Register a plugin endpoint',
        description:
          'Dials the endpoint, asks the plugin who it is (Registration.GetInfo), checks it, stores the registration and tells the plugin (NotifyRegistrationStatus). With `probedOnNode` (an agent on the node did the dial, GetInfo and the telling) nothing is dialled: the endpoint is checked as written and the declared driver and versions are used. 201 when new, 200 when the endpoint was registered already.',
        body: registerPluginBodySchema,
        response: {
          200: registrationSchema,
          201: registrationSchema,
          ...errorResponses(409, 422, 502),
        },
      },
    },
    async (request, reply) => {
      const { node, endpoint, driver, supportedVersions, probedOnNode } = request.body;
      const principal = authorizeNode(request, node);
      if (probedOnNode === true) refuseProbeUnlessBound(principal, node);
      if (driver !== undefined) await authorizeDriver(request, 'create', driver);
      // A probed plugin's socket is on another node: its real path was checked there. (The
      // schema requires driver and supportedVersions with probedOnNode.)
      const how =
        probedOnNode === true && driver !== undefined && supportedVersions !== undefined
          ? { kind: 'probed' as const, declared: { driver, supportedVersions } }
          : { kind: 'dial' as const, admitted: await options.endpointPolicy.admit(endpoint) };
      const log = request.log.child({ node, endpoint });
      let result;
      try {
        const common = {
          policy: options.endpointPolicy,
          ...(options.supportedVersions === undefined
            ? {}
            : { supportedVersions: options.supportedVersions }),
          register: async (plugin: AdmittedPlugin) => {
            // Cached when the request named the driver; asked now when only GetInfo did.
            await authorizeDriver(request, 'create', plugin.driver);
            const key = { node, driver: plugin.driver };
            await checkEndpointFree(store, key, plugin.endpoint);
            try {
              return await store.add({
                ...key,
                endpoint: plugin.endpoint,
                version: plugin.version,
              });
            } catch (error) {
              if (error instanceof RegistrationRefusedError) {
                throw new HttpError(409, error.reason, error.message);
              }
              throw error;
            }
          },
        };
        result =
          how.kind === 'probed'
            ? await admitPlugin({ ...common, probedOnNode: true, endpoint, declared: how.declared })
            : await admitPlugin({
                ...common,
                endpoint: how.admitted,
                declared: {
                  ...(driver === undefined ? {} : { driver }),
                  ...(supportedVersions === undefined ? {} : { supportedVersions }),
                },
                prober: options.prober,
              });
      } catch (error) {
        metrics.registrations.inc({ node, result: 'refused' });
        throw error;
      }
      const { registration, created } = result.registered;
      // Publish at once, even when the inventory is unchanged (a restarted driver whose slices
      // were withdrawn); a no-op sync when its slices are still there.
      await options.syncQueue.enqueue(
        { node: registration.node, driver: registration.driver },
        'registered',
      );
      if (result.notifyError !== undefined) {
        log.warn({ err: result.notifyError }, 'plugin not told of its registration');
      }
      metrics.registrations.inc({ node, result: created ? 'created' : 'refreshed' });
      log.info(
        {
          driver: registration.driver,
          version: registration.version,
          created,
          ...(how.kind === 'probed' ? { probedOnNode: true } : {}),
        },
        'registered',
      );
      return reply
        .code(created ? 201 : 200)
        .header('location', pluginPath(registration))
        .send(registration);
    },
  );

  routes.delete(
    '/plugins/:node/:driver',
    {
      schema: {
        tags: TAGS,
        security: SECURITY,
        summary: 'Remove a plugin',
        description:
          "Removes the driver's registration on the node (one endpoint with ?endpoint=). When none is left, its slices are withdrawn after the removal grace (?grace=, default REMOVAL_GRACE), even when no watcher runs, unless the plugin registers again before; nothing of it is published again until it does.",
        params: pluginParamsSchema,
        querystring: removePluginQuerySchema,
        response: { 200: removedSchema, ...errorResponses(404) },
      },
    },
    async (request) => {
      const key = { node: request.params.node, driver: request.params.driver };
      authorizeNode(request, key.node);
      await authorizeDriver(request, 'delete', key.driver);
      const { endpoint, grace } = request.query;
      const removed = await store.remove(key, {
        ...(endpoint === undefined ? {} : { endpoint }),
        graceMs:
          (grace === undefined ? undefined : parseDurationMs(grace)) ?? options.removalGraceMs,
      });
      if (removed.length === 0) {
        throw new HttpError(
          404,
          'not-found',
          request.query.endpoint === undefined
            ? `plugin ${keyId(key)} is not registered`
            : `endpoint ${request.query.endpoint} of plugin ${keyId(key)} is not registered`,
        );
      }
      await options.syncQueue.enqueue(key, 'removed');
      metrics.removals.inc({ node: key.node }, removed.length);
      request.log.info({ ...key, endpoints: removed.map((r) => r.endpoint) }, 'removed');
      return { removed };
    },
  );

  routes.get(
    '/plugins',
    {
      schema: {
        tags: TAGS,
        security: SECURITY,
        summary: 'List plugins with their status',
        description:
          'Pages through registered plugins (node, driver) in key order, optionally of one node and/or driver. A node-bound token sees its own node only.',
        querystring: listPluginsQuerySchema,
        response: { 200: pluginListSchema, ...errorResponses() },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { driver, after, limit } = request.query;
      let node = request.query.node;
      if (principal.scope.kind === 'node') node ??= principal.scope.node;
      if (principal.scope.kind === 'cluster') node ??= '';
      if (node !== undefined) authorizeNode(request, node);
      await authorizeDriver(request, 'get', driver);
      const page = await store.list({
        limit,
        ...(node === undefined ? {} : { node }),
        ...(driver === undefined ? {} : { driver }),
        ...(after === undefined ? {} : { after }),
      });
      const items = await Promise.all(
        groupByKey(page.items).map(({ key, registrations }) =>
          statusOf(statusReader, key, registrations),
        ),
      );
      return page.next === undefined ? { items } : { items, next: page.next };
    },
  );

  routes.get(
    '/plugins/:node/:driver',
    {
      schema: {
        tags: TAGS,
        security: SECURITY,
        summary: 'A plugin and its status',
        description:
          "The driver's registrations on the node, the watcher's stream state, a summary of the latest inventory and the syncer's last outcome.",
        params: pluginParamsSchema,
        response: { 200: pluginStatusSchema, ...errorResponses(404) },
      },
    },
    async (request) => {
      const key = { node: request.params.node, driver: request.params.driver };
      authorizeNode(request, key.node);
      await authorizeDriver(request, 'get', key.driver);
      const registrations = await store.get(key);
      if (registrations.length === 0) {
        throw new HttpError(404, 'not-found', `plugin ${keyId(key)} is not registered`);
      }
      return statusOf(statusReader, key, registrations);
    },
  );
}

/**
 * Throws 403 unless `principal` is bound to `node` (a node-bound static token, or a
 * ServiceAccount token whose node claim is `node`): with `probedOnNode` the API stores an
 * endpoint it has not dialled, trusting that the caller checked the socket's real path on that
 * node — which only an agent of that node can have done. `authorizeNode` has already refused
 * another node.
 */
function refuseProbeUnlessBound(principal: Principal, node: string): void {
  if (principal.scope.kind === 'node') return;
  const who =
    principal.scope.kind === 'admin'
      ? `an admin token ("${principal.name}")`
      : `the token of ${principal.name}, which has no node claim,`;
  throw new HttpError(
    403,
    'forbidden',
    `probedOnNode is accepted only from a token bound to ${node === '' ? 'a node' : `node "${node}"`}, whose agent dialled the socket there; ${who} may not vouch for a socket it cannot see — register without probedOnNode and the API dials the plugin itself`,
  );
}

/**
 * Refuses (409) an endpoint that another driver on the node already has: one socket cannot be
 * two drivers. (The limits on endpoints per driver and drivers per node are the store's, checked
 * atomically with the write; this check only guards against a driver that changed its name.)
 */
async function checkEndpointFree(
  store: RegistrationStore,
  key: SliceKey,
  endpoint: string,
): Promise<void> {
  let after: string | undefined;
  do {
    const page = await store.list({ node: key.node, ...(after === undefined ? {} : { after }) });
    const taken = page.items.find((r) => r.endpoint === endpoint && r.driver !== key.driver);
    if (taken !== undefined) {
      throw new HttpError(
        409,
        'endpoint-in-use',
        `endpoint ${endpoint} is registered for driver ${taken.driver} ${key.node === '' ? 'of the cluster-scoped key' : `on node ${key.node}`}; remove it first`,
      );
    }
    after = page.next;
  } while (after !== undefined);
}

function groupByKey(registrations: Registration[]) {
  const groups = new Map<string, { key: SliceKey; registrations: Registration[] }>();
  for (const registration of registrations) {
    const key = { node: registration.node, driver: registration.driver };
    const group = groups.get(keyId(key)) ?? { key, registrations: [] };
    group.registrations.push(registration);
    groups.set(keyId(key), group);
  }
  return [...groups.values()];
}

async function statusOf(
  reader: KeyStatusReader,
  key: SliceKey,
  registrations: Registration[],
): Promise<PluginStatus> {
  return { ...key, registrations, ...(await reader.read(key)) };
}
