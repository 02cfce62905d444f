import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { stringify as toYaml } from 'yaml';
import { z } from 'zod';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import { ApiError, apiErrors } from './api-error';
import {
  aggregatedDiscovery,
  discoveryETag,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  versionInfo,
} from './api-catalog';
import { ApiHandler } from './api-handler';
import type { ApiResult, ResponseFormat, WatchResult } from './api-handler';
import { readDataFile, writeDataFile } from './data-file';
import { EmulatorHooks } from './emulator-hooks';
import type {
  CountersSnapshot,
  FaultSpec,
  LatencySpec,
  RequestInfo,
  RequestLogEntry,
  RequestMatcher,
} from './emulator-hooks';
import { DEFAULT_EVENT_TTL_MS, coreEventType, eventsV1EventType } from './event-types';
import { GarbageCollector } from './garbage-collector';
import { ObjectStore, objectKey } from './object-store';
import type { JsonObject } from './object-schema';
import { openApiDocument, openApiRoot } from './openapi';
import { DEFAULT_KUBE_RELEASE, releaseGateDefaults, releaseInfo } from './kube-release';
import type { KubeRelease } from './kube-release';
import { IdentityHandler, identityRoute } from './identity-handler';
import type { IdentityRoute } from './identity-handler';
import { IDENTITY_TYPES } from './identity-types';
import { PROTOBUF_TYPE, decodeProtobufBody } from './protobuf-bodies';
import type { AuthorizationAttributes } from './rbac-authorizer';
import { ServiceAccountTokens } from './service-account-tokens';
import { leaseType } from './read-only-types';
import { podType } from './pod-type';
import { resourceSliceVersions } from './resource-slice-versions';
import { RESOURCE_TYPES, nodeType, resourceSliceType } from './resource-types';
import { unmodelledRouteError } from './unmodelled-routes';
import type { FeatureGates, ResourceType } from './resource-types';
import {
  ANONYMOUS,
  authenticate,
  bearerToken,
  mayAccessPath,
  mayAccessResource,
  readTokenFile,
} from './token-auth';
import type { User, Verb } from './token-auth';

/** The subset of a pino logger the emulator writes to. */
export interface EmulatorLogger {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface KubeEmulatorOptions {
  /** TCP port; 0 picks a free one. @defaultValue 0 */
  port?: number;
  /** Interface to bind. The emulator has no TLS and is meant for loopback only. @defaultValue '127.0.0.1' */
  host?: string;
  /**
   * A kube-apiserver static token file (`token,user,uid,"group1,group2"` per line). When set,
   * every request needs a known bearer token (or a ServiceAccount token this server signed);
   * users in `system:masters` may write, others only read. When unset, every request without a
   * ServiceAccount token is allowed. ServiceAccount tokens and impersonated users are always
   * authorized by RBAC.
   */
  tokenFile?: string;
  /**
   * The issuer of the ServiceAccount tokens it signs (`--service-account-issuer`), also the API
   * audience a token without another audience is for. @defaultValue 'https://kubernetes.default.svc.cluster.local'
   */
  serviceAccountIssuer?: string;
  /**
   * A PEM RSA private key the ServiceAccount tokens are signed with, so that tokens outlive a
   * restart (with `dataFile`, as on a real server); created with a new key when missing. Unset:
   * a new key per process.
   */
  serviceAccountSigningKeyFile?: string;
  /** Change events kept for watches that resume and for older list versions. @defaultValue 10000 */
  historySize?: number;
  /**
   * Where the emulator reads the time (creation timestamps, managed fields, Age).
   * @defaultValue systemClock
   */
  clock?: Pick<Clock, 'now'>;
  /**
   * The Kubernetes release to pass for: `/version`, the resource.k8s.io versions served and the
   * feature gates' defaults. @defaultValue '1.34'
   */
  release?: KubeRelease;
  /** DRA feature gates; a gate left out has the release's default. */
  featureGates?: FeatureGates;
  /**
   * Where the stored objects persist across restarts. On start, an existing file is loaded
   * (objects keep names, UIDs, resourceVersions, generations and managed fields; new writes go on
   * from its resourceVersion; watch history starts empty, so older resourceVersions get 410); on
   * `close()`, every object and the resourceVersion are written to it (temp file, then rename).
   * A file that cannot be read fails `start()` naming it. Unset: nothing persists.
   */
  dataFile?: string;
  /** Delay before the garbage collector acts on a Node deletion, ms. @defaultValue 0 */
  garbageCollectionDelayMs?: number;
  /**
   * Whether kube-controller-manager's garbage collector runs. Off, the emulator is a
   * kube-apiserver alone: the `orphan` and `foregroundDeletion` finalizers stay until a client
   * removes them, and a Node's slices outlive it. @defaultValue true
   */
  garbageCollection?: boolean;
  /**
   * How long an Event lives after its last write, ms (kube-apiserver's `--event-ttl`); expiry is
   * judged by `clock`. @defaultValue 3600000 (1 h)
   */
  eventTtlMs?: number;
  logger?: EmulatorLogger;
}

export interface ResetOptions {
  /** Keep stored objects and history; clear only counters, log, faults and latency. @defaultValue false */
  keepObjects?: boolean;
}

/**
 * The namespaces a new cluster has. The emulator serves no Namespace resource; these exist and
 * no other does (creates elsewhere get NamespaceLifecycle's 404).
 */
const SYSTEM_NAMESPACES: ReadonlySet<string> = new Set([
  'default',
  'kube-system',
  'kube-public',
  'kube-node-lease',
]);
/** How often expired Events are looked for when no request comes in, ms. */
const EXPIRY_SWEEP_INTERVAL_MS = 5_000;
const MAX_BODY_BYTES = 3 * 1024 * 1024;
const DISCOVERY_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

const matcherSchema = {
  verb: z.string().optional(),
  resource: z.string().optional(),
  name: z.string().optional(),
};
const faultSchema = z.strictObject({
  ...matcherSchema,
  status: z.number().int().min(400).max(599),
  times: z.number().int().positive().optional(),
  durationMs: z.number().int().positive().optional(),
  retryAfterSeconds: z.number().int().nonnegative().optional(),
  message: z.string().optional(),
});
const latencySchema = z.strictObject({
  ...matcherSchema,
  ms: z.number().nonnegative(),
  times: z.number().int().positive().optional(),
});

interface Route {
  kind: 'resource';
  type: ResourceType;
  /** Empty for a cluster-scoped type, or a namespaced one listed across namespaces. */
  namespace: string;
  name: string;
  subresource: string;
  watchPath: boolean;
}

interface MediaRange {
  type: string;
  params: Map<string, string>;
}

function parseAccept(header: string | undefined): MediaRange[] {
  if (header === undefined || header.trim() === '') return [{ type: '*/*', params: new Map() }];
  return header.split(',').map((part) => {
    const [type = '', ...params] = part.split(';').map((s) => s.trim());
    const map = new Map<string, string>();
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq > 0) map.set(p.slice(0, eq).trim(), p.slice(eq + 1).trim());
    }
    return { type: type.toLowerCase(), params: map };
  });
}

function isJsonRange(range: MediaRange): boolean {
  return (
    range.type === 'application/json' || range.type === '*/*' || range.type === 'application/*'
  );
}

/** Picks the response format for a resource request, as the server's content negotiation does. */
/** Go's `http.NotFound`: a plain-text 404 that is no Status. @returns the code sent */
function pageNotFound(res: ServerResponse): number {
  res.writeHead(404, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end('404 page not found\n');
  return 404;
}

function negotiate(accept: MediaRange[]): ResponseFormat | undefined {
  for (const range of accept) {
    const as = range.params.get('as');
    if (as === undefined) {
      if (isJsonRange(range)) return 'json';
      if (range.type === 'application/yaml') return 'yaml';
      continue;
    }
    if (range.params.get('g') !== 'meta.k8s.io' || range.type !== 'application/json') continue;
    if (as === 'Table') return 'table';
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList') return 'metadata';
  }
  return undefined;
}

function wantsAggregatedDiscovery(accept: MediaRange[]): boolean | undefined {
  for (const range of accept) {
    if (
      range.params.get('g') === 'apidiscovery.k8s.io' &&
      range.params.get('as') === 'APIGroupDiscoveryList'
    ) {
      if (range.params.get('v') === 'v2') return true;
      continue;
    }
    if (isJsonRange(range) && !range.params.has('as')) return false;
  }
  return undefined;
}

function verbFor(method: string, route: Route, query: URLSearchParams): Verb | undefined {
  if (route.subresource !== '') {
    // A subresource is read, replaced and patched; other methods are not routed (405).
    if (method === 'GET') return 'get';
    if (method === 'PUT') return 'update';
    return method === 'PATCH' ? 'patch' : undefined;
  }
  const hasName = route.name !== '';
  const watchParam = query.get('watch');
  const watch = route.watchPath || watchParam === 'true' || watchParam === '1';
  switch (method) {
    case 'GET':
      if (watch) return 'watch';
      return hasName ? 'get' : 'list';
    case 'POST':
      return hasName || route.watchPath ? undefined : 'create';
    case 'PUT':
      return hasName && !route.watchPath ? 'update' : undefined;
    case 'PATCH':
      return hasName && !route.watchPath ? 'patch' : undefined;
    case 'DELETE':
      if (route.watchPath) return undefined;
      return hasName ? 'delete' : 'deletecollection';
    default:
      return undefined;
  }
}

/** The attributes of a non-resource request that are not about a resource. */
const NO_RESOURCE = {
  namespace: '',
  apiGroup: '',
  resource: '',
  subresource: '',
  name: '',
} as const;

/**
 * `responsewriters.Forbidden`: `<resource> "<name>" is forbidden: User "u" cannot <verb> resource
 * "<resource[/subresource]>" in API group "<group>" in the namespace "<ns>"` (or `at the cluster
 * scope`), with the authorizer's reason after a colon when it gave one.
 */
function forbiddenError(
  user: User,
  attrs: Omit<AuthorizationAttributes, 'user' | 'resourceRequest' | 'path'>,
  reason: string,
) {
  const resource =
    attrs.subresource === '' ? attrs.resource : `${attrs.resource}/${attrs.subresource}`;
  const scope =
    attrs.namespace === '' ? 'at the cluster scope' : `in the namespace "${attrs.namespace}"`;
  const message = `User "${user.name}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" ${scope}`;
  return apiErrors.forbidden(
    { group: attrs.apiGroup, name: attrs.resource },
    attrs.name,
    reason === '' ? message : `${message}: ${reason}`,
  );
}

/**
 * An HTTP server that behaves like kube-apiserver 1.34 for Nodes, resource.k8s.io/v1
 * ResourceSlices and Events (core/v1 and events.k8s.io/v1, in the four system namespaces):
 * discovery, CRUD with the real preconditions and Status errors, selectors, pagination, watches
 * with bookmarks and bounded history, server-side apply, the Node `/status` subresource, garbage
 * collection of a Node's slices, the Event TTL, optional static token auth, and test hooks. Each
 * release's device fields are kept, dropped or validated per DRA feature gate as its
 * ResourceSlice strategy and validation do (see the package README's table). Identities as the
 * real server has them: ServiceAccounts, Pods (objects only, for token binding), the RBAC kinds,
 * TokenRequest, TokenReview, the access reviews, and RBAC enforced on ServiceAccount tokens and
 * impersonated users. Leases are served for reads only, and there are none (what `kubectl
 * describe node` needs).
 *
 * The hooks are methods here and, for other processes, JSON endpoints under `/_emulator/`
 * (never a Kubernetes path, no auth):
 * - `GET /_emulator/counters` → {@link CountersSnapshot} (requests by verb, resource and code)
 * - `GET /_emulator/requests` → `{ items: RequestLogEntry[] }`, in order of arrival
 * - `POST /_emulator/faults` with a {@link FaultSpec} → 201; the next `times` matching requests
 *   fail, or every one for `durationMs`
 * - `POST /_emulator/latency` with a {@link LatencySpec} → 201
 * - `POST /_emulator/reset[?keepObjects=true]` → counters, log, faults (and objects) cleared
 * - `POST /_emulator/forget-history` → older resourceVersions expire (410) from now on
 * - `POST /_emulator/cut-watches` → `{ ok, watches }`: every open watch ends, as at its timeout
 */
export class KubeEmulator {
  private readonly options: KubeEmulatorOptions;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly store: ObjectStore;
  private readonly hooks: EmulatorHooks;
  private readonly gc: GarbageCollector;
  private readonly api: ApiHandler;
  private readonly openStreams = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private readonly tokens: ReadonlyMap<string, User> | undefined;
  private readonly serviceAccountTokens: ServiceAccountTokens;
  private readonly identity: IdentityHandler;
  private server: Server | undefined;
  private address = '';
  private closing: Promise<void> | undefined;
  private readonly release: KubeRelease;
  /** The resource types of the served group versions (one per version of a resource). */
  private readonly servedTypes: readonly ResourceType[];
  private readonly eventTtlMs: number;
  private expirySweep: NodeJS.Timeout | undefined;

  constructor(options: KubeEmulatorOptions = {}) {
    this.options = options;
    this.release = options.release ?? DEFAULT_KUBE_RELEASE;
    const sliceVersions = resourceSliceVersions(this.release);
    this.servedTypes = [
      nodeType,
      coreEventType,
      podType,
      eventsV1EventType,
      leaseType,
      ...IDENTITY_TYPES,
      ...releaseInfo(this.release).resourceVersions.flatMap((v) => {
        const type = sliceVersions.get(v);
        return type === undefined ? [] : [type];
      }),
    ];
    this.clock = options.clock ?? systemClock;
    this.hooks = new EmulatorHooks(() => this.clock.now());
    this.store = new ObjectStore(
      options.historySize === undefined ? {} : { historySize: options.historySize },
    );
    // events.k8s.io/v1 Events are the core/v1 ones: one table.
    for (const type of [...RESOURCE_TYPES, coreEventType, podType, leaseType, ...IDENTITY_TYPES])
      this.store.register(type.resource, type.indexing);
    this.eventTtlMs = options.eventTtlMs ?? DEFAULT_EVENT_TTL_MS;
    this.tokens = options.tokenFile === undefined ? undefined : readTokenFile(options.tokenFile);
    const now = () => this.clock.now();
    this.serviceAccountTokens = new ServiceAccountTokens({
      ...(options.serviceAccountIssuer === undefined
        ? {}
        : { issuer: options.serviceAccountIssuer }),
      ...(options.serviceAccountSigningKeyFile === undefined
        ? {}
        : { signingKeyFile: options.serviceAccountSigningKeyFile }),
    });
    this.identity = new IdentityHandler({
      store: this.store,
      tokens: this.serviceAccountTokens,
      now,
      staticUser: (token) => this.tokens?.get(token),
    });
    this.gc = new GarbageCollector({
      store: this.store,
      owner: nodeType,
      dependent: resourceSliceType,
      now,
      collectDangling: options.garbageCollection !== false,
      ...(options.garbageCollectionDelayMs === undefined
        ? {}
        : { delayMs: options.garbageCollectionDelayMs }),
    });
    this.api = new ApiHandler({
      store: this.store,
      now,
      featureGates: { ...releaseGateDefaults(this.release), ...options.featureGates },
      sliceLayout: { separateCounterSets: releaseInfo(this.release).minor >= 35 },
      onDeleted: (type, deleted, propagation) => {
        if (options.garbageCollection !== false) this.gc.onDeleted(type, deleted, propagation);
      },
      openStreams: this.openStreams,
      eventTtlMs: this.eventTtlMs,
      namespaceExists: (namespace) => SYSTEM_NAMESPACES.has(namespace),
    });
  }

  /** The base URL, e.g. `http://127.0.0.1:41234`; set once started. */
  get url(): string {
    if (this.address === '') throw new Error('the kube emulator is not started');
    return `http://${this.address}`;
  }

  /** Loads the data file, if any, and starts listening. @returns the base URL */
  async start(): Promise<string> {
    if (this.server !== undefined) return this.url;
    if (this.options.dataFile !== undefined) {
      const snapshot = await readDataFile(this.options.dataFile);
      if (snapshot !== undefined) {
        try {
          this.store.restore(snapshot);
          // etcd leases are not in the data file: restored Events get a full TTL from now.
          const expiresAt = this.clock.now() + this.eventTtlMs;
          for (const event of this.store.list(coreEventType.resource).items)
            this.store.setExpiry(coreEventType.resource, event.key, expiresAt);
        } catch (error) {
          throw new Error(
            `kube emulator data file ${this.options.dataFile}: ${(error as Error).message}`,
            { cause: error },
          );
        }
      }
    }
    const server = createServer({ keepAlive: true }, (req, res) => {
      this.onRequest(req, res);
    });
    server.keepAliveTimeout = 65_000;
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Expired Events are also removed between requests, so that watchers see them go.
    this.expirySweep = setInterval(() => {
      this.store.expire(this.clock.now());
    }, EXPIRY_SWEEP_INTERVAL_MS);
    this.expirySweep.unref();
    const info = server.address() as AddressInfo;
    this.address =
      info.family === 'IPv6' ? `[${info.address}]:${info.port}` : `${info.address}:${info.port}`;
    return this.url;
  }

  /**
   * Stops intake, ends open watches, closes connections, then writes the data file if one is
   * set. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.gc.close();
      clearInterval(this.expirySweep);
      const server = this.server;
      if (server === undefined) return;
      const closed = new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      this.store.terminateWatches();
      for (const res of this.openStreams) res.end();
      server.closeIdleConnections();
      setTimeout(() => {
        for (const socket of this.sockets) socket.destroy();
      }, 1000).unref();
      await closed;
      if (this.options.dataFile !== undefined) {
        await writeDataFile(this.options.dataFile, this.store.exportSnapshot(), this.release);
      }
    })();
    return this.closing;
  }

  /** The token written to kubeconfigs: the first `system:masters` user's, if a token file is used. */
  adminToken(): string | undefined {
    if (this.tokens === undefined) return undefined;
    for (const [token, user] of this.tokens)
      if (user.groups.includes('system:masters')) return token;
    return this.tokens.keys().next().value;
  }

  counters(): CountersSnapshot {
    return this.hooks.counters();
  }

  /** Sum of the request counters that match (e.g. `{ verb: 'create', resource: 'resourceslices' }`). */
  count(filter: RequestMatcher & { code?: number } = {}): number {
    return this.hooks.count(filter);
  }

  requestLog(): readonly RequestLogEntry[] {
    return this.hooks.requestLog();
  }

  /**
   * Fails the next `times` requests matching the spec with `status` (and optional Retry-After),
   * or, with `durationMs`, every matching request for that long.
   */
  injectFault(spec: FaultSpec): void {
    this.hooks.injectFault(faultSchema.parse(spec));
  }

  /** Delays matching requests by `ms` before they are handled. */
  addLatency(spec: LatencySpec): void {
    this.hooks.addLatency(latencySchema.parse(spec));
  }

  /** Clears counters, request log, faults and latency, and unless `keepObjects`, every object and watch. */
  reset(options: ResetOptions = {}): void {
    this.hooks.reset();
    if (options.keepObjects !== true) this.store.reset();
  }

  /**
   * Discards change history, as etcd compaction does: watches and exact lists from older
   * resourceVersions get 410 Expired (`too old resource version: <rv> (<oldest>)` for a watch),
   * as kube-apiserver answers for a compacted resourceVersion.
   */
  forgetHistory(): void {
    this.store.forgetHistory();
  }

  /**
   * Ends every open watch stream the way kube-apiserver ends one at its `timeoutSeconds` (or on
   * a restart): the response completes cleanly, with no ERROR event, and a client resumes from
   * the last resourceVersion it saw. @returns how many watches were ended
   */
  cutWatches(): number {
    const open = this.store.watcherCount();
    this.store.terminateWatches();
    return open;
  }

  /**
   * The stored Events as core/v1 shows them (with `kind` and `apiVersion`), in list order:
   * namespace, then name. Expired ones are gone first, as for any request.
   * @param namespace only this namespace's; all when unset
   */
  events(namespace?: string): JsonObject[] {
    this.store.expire(this.clock.now());
    const listed = this.store.list(
      coreEventType.resource,
      namespace === undefined ? {} : { namespace },
    );
    return listed.items.map((stored) => stored.object);
  }

  /** Open watch streams (benchmarks check fan-out with it). */
  watchCount(): number {
    return this.store.watcherCount();
  }

  // -------------------------------------------------------------------------------------------

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      this.dispatch(req, res, body, tooLarge).catch((error: unknown) => {
        this.options.logger?.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'request failed',
        );
        if (!res.headersSent)
          this.sendError(
            res,
            apiErrors.internal(error instanceof Error ? error.message : String(error)),
          );
        else res.end();
      });
    });
  }

  private route(path: string): Route | 'nonresource' | undefined {
    const parts = path.split('/').filter((p) => p !== '');
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === 'api' && parts.length >= 3) {
      group = '';
      version = parts[1] ?? '';
      rest = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 4) {
      group = parts[1] ?? '';
      version = parts[2] ?? '';
      rest = parts.slice(3);
    } else {
      return 'nonresource';
    }
    let watchPath = false;
    if (rest[0] === 'watch') {
      watchPath = true;
      rest = rest.slice(1);
    }
    let namespace = '';
    const namespacePath = rest[0] === 'namespaces' && rest.length >= 3;
    if (namespacePath) {
      namespace = decodeURIComponent(rest[1] ?? '');
      rest = rest.slice(2);
    }
    const [resource = '', name = '', subresource = '', ...extra] = rest;
    const type = this.servedTypes.find(
      (t) => t.group === group && t.version === version && t.resource === resource,
    );
    if (type === undefined || extra.length > 0) return undefined;
    // A cluster-scoped type has no namespaced path; a namespaced one has, besides its
    // namespaced paths, only the collection across namespaces.
    if (namespacePath ? !type.namespaced : type.namespaced && name !== '') return undefined;
    if (subresource !== '' && (subresource !== 'status' || type.status === undefined || watchPath))
      return undefined;
    return {
      kind: 'resource',
      type,
      namespace,
      name: decodeURIComponent(name),
      subresource,
      watchPath,
    };
  }

  private async dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    tooLarge: boolean,
  ): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const path = url.pathname;
    if (path === '/_emulator' || path.startsWith('/_emulator/')) {
      this.emulatorRoute(req.method ?? 'GET', path, url.searchParams, body, res);
      return;
    }
    const method = req.method ?? 'GET';
    const route = this.route(path);
    const identity = identityRoute(method, path);
    const resourceName =
      route !== undefined && route !== 'nonresource'
        ? `${route.type.resource}${route.subresource === '' ? '' : `/${route.subresource}`}`
        : path;
    const verb =
      route !== undefined && route !== 'nonresource'
        ? verbFor(method, route, url.searchParams)
        : undefined;
    // The identity endpoints count (and take faults) as the creates they are: `tokenreviews`,
    // `subjectaccessreviews`, `serviceaccounts/token`.
    const info: RequestInfo =
      identity === undefined
        ? {
            verb: verb ?? method.toLowerCase(),
            resource: resourceName,
            name: route !== undefined && route !== 'nonresource' ? route.name : '',
          }
        : {
            verb: 'create',
            resource:
              identity.subresource === ''
                ? identity.resource
                : `${identity.resource}/${identity.subresource}`,
            name: identity.name,
          };
    const delay = this.hooks.takeLatency(info);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    let code = 500;
    let writtenRv: string | undefined;
    try {
      const authenticated = this.authenticate(req.headers.authorization);
      if (authenticated === undefined) throw apiErrors.unauthorized();
      const user = this.impersonate(authenticated, req.headers);
      if (tooLarge)
        throw new ApiError(
          413,
          'RequestEntityTooLarge',
          `Request entity too large: limit is ${MAX_BODY_BYTES}`,
        );
      const fault = this.hooks.takeFault(info);
      if (fault !== undefined)
        throw apiErrors.injected(fault.status, fault.message, fault.retryAfterSeconds);
      const accept = parseAccept(req.headers.accept);
      let contentType =
        (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      let payload = body;
      // kubectl's typed clients write the identity kinds in protobuf; they read JSON back.
      if (
        contentType === PROTOBUF_TYPE &&
        (identity !== undefined ||
          (route !== undefined && route !== 'nonresource' && IDENTITY_TYPES.includes(route.type)))
      ) {
        payload = Buffer.from(JSON.stringify(decodeProtobufBody(body)));
        contentType = 'application/json';
      }
      if (identity !== undefined) {
        code = this.identityRequest(identity, user, contentType, payload, res);
        return;
      }
      if (route === 'nonresource') {
        if (user.rbac === true) {
          const decision = this.identity.authorize({
            ...NO_RESOURCE,
            user,
            verb: method.toLowerCase(),
            resourceRequest: false,
            path,
          });
          if (!decision.allowed)
            throw apiErrors.forbiddenPath(
              `forbidden: User "${user.name}" cannot ${method.toLowerCase()} path "${path}"${decision.reason === '' ? '' : `: ${decision.reason}`}`,
            );
        } else if (!mayAccessPath(user, path)) {
          throw apiErrors.forbiddenPath(
            `forbidden: User "${user.name}" cannot ${method.toLowerCase()} path "${path}"`,
          );
        }
        code = this.nonResource(method, path, accept, res, req.headers['if-none-match']);
        return;
      }
      if (route === undefined) {
        if (this.unservedGroup(path)) {
          code = pageNotFound(res);
          return;
        }
        throw (
          unmodelledRouteError(
            method,
            path,
            this.release,
            (gv, resource, ns, name) =>
              (gv === 'v1' && resource === 'namespaces' && SYSTEM_NAMESPACES.has(name)) ||
              this.servedTypes.some(
                (t) =>
                  t.apiVersion === gv &&
                  t.resource === resource &&
                  this.store.get(resource, objectKey(ns, name)) !== undefined,
              ),
          ) ?? apiErrors.pathNotFound()
        );
      }
      if (verb === undefined) throw apiErrors.methodNotAllowed();
      // Across namespaces, a namespaced collection is only listed and watched.
      if (route.type.namespaced && route.namespace === '' && verb !== 'list' && verb !== 'watch')
        throw apiErrors.methodNotAllowed();
      // Events past their TTL are gone before anything reads or writes.
      this.store.expire(this.clock.now());
      this.authorizeResource(user, {
        verb,
        namespace: route.namespace,
        apiGroup: route.type.group,
        resource: route.type.resource,
        subresource: route.subresource,
        name: route.name,
      });
      const format = negotiate(accept);
      if (format === undefined) {
        throw apiErrors.notAcceptable([
          'application/json',
          'application/yaml',
          'application/vnd.kubernetes.protobuf',
        ]);
      }
      const pending = this.api.handle({
        type: route.type,
        verb,
        namespace: route.namespace,
        name: route.name,
        subresource: route.subresource,
        query: url.searchParams,
        contentType,
        body: payload,
        userAgent: req.headers['user-agent'] ?? '',
        format,
      });
      // Most requests are answered synchronously; awaiting only when needed saves a tick.
      const result: ApiResult | WatchResult = pending instanceof Promise ? await pending : pending;
      if ('watch' in result) {
        code = 200;
        result.watch(res);
        return;
      }
      code = result.code;
      writtenRv = verb === 'get' || verb === 'list' ? undefined : result.resourceVersion;
      this.send(res, result, format);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      code = error.code;
      this.sendError(res, error);
    } finally {
      this.hooks.record(info, code, writtenRv);
    }
  }

  /**
   * The request's user: a ServiceAccount token this server signed (verified as TokenReview
   * does, with the API audiences), else the static token file's. Undefined is 401: a token of
   * this issuer that fails verification, or one the file does not know.
   */
  private authenticate(authorization: string | undefined): User | undefined {
    const token = bearerToken(authorization);
    if (token !== undefined) {
      const verified = this.serviceAccountTokens.verify(
        token,
        undefined,
        this.clock.now(),
        this.identity.lookup,
      );
      if (verified.ok) return { ...verified.user, rbac: true };
      if (verified.error !== undefined) return undefined;
    }
    return authenticate(this.tokens, authorization);
  }

  /**
   * The impersonation filter (endpoints/filters/impersonation.go): `Impersonate-User`,
   * `-Group` and `-Uid` replace the user when the requester may `impersonate` each of them; a
   * ServiceAccount username brings its groups, and a user other than anonymous gets
   * `system:authenticated`.
   */
  private impersonate(requester: User, headers: IncomingMessage['headers']): User {
    const header = (name: string): string[] => {
      const value = headers[name];
      if (value === undefined) return [];
      return (Array.isArray(value) ? value : [value])
        .flatMap((v) => v.split(','))
        .map((v) => v.trim());
    };
    const [name] = header('impersonate-user');
    const groups = header('impersonate-group');
    const [uid] = header('impersonate-uid');
    if (name === undefined) {
      if (groups.length > 0 || uid !== undefined)
        throw apiErrors.internal('requested impersonation without a user');
      return requester;
    }
    const check = (
      attrs: Omit<AuthorizationAttributes, 'user' | 'verb' | 'resourceRequest' | 'path'>,
    ) => {
      const decision = this.identity.authorize({
        ...attrs,
        user: requester,
        verb: 'impersonate',
        resourceRequest: true,
        path: '',
      });
      if (!decision.allowed)
        throw forbiddenError(requester, { ...attrs, verb: 'impersonate' }, decision.reason);
    };
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(name);
    const impersonatedGroups: string[] = [];
    if (sa !== null) {
      check({
        namespace: sa[1] ?? '',
        apiGroup: '',
        resource: 'serviceaccounts',
        subresource: '',
        name: sa[2] ?? '',
      });
      impersonatedGroups.push('system:serviceaccounts', `system:serviceaccounts:${sa[1] ?? ''}`);
    } else {
      check({ namespace: '', apiGroup: '', resource: 'users', subresource: '', name });
    }
    for (const group of groups) {
      check({ namespace: '', apiGroup: '', resource: 'groups', subresource: '', name: group });
      impersonatedGroups.push(group);
    }
    if (uid !== undefined)
      check({
        namespace: '',
        apiGroup: 'authentication.k8s.io',
        resource: 'uids',
        subresource: '',
        name: uid,
      });
    if (name !== ANONYMOUS.name && !impersonatedGroups.includes('system:authenticated'))
      impersonatedGroups.push('system:authenticated');
    return { name, uid: uid ?? '', groups: impersonatedGroups, rbac: true };
  }

  /** Authorizes a resource request: the authorizer chain for RBAC users, the two roles for static ones. */
  private authorizeResource(
    user: User,
    attrs: Omit<AuthorizationAttributes, 'user' | 'resourceRequest' | 'path'>,
    selfReview = false,
  ): void {
    if (user.rbac === true) {
      const decision = this.identity.authorize({ ...attrs, user, resourceRequest: true, path: '' });
      if (!decision.allowed) throw forbiddenError(user, attrs, decision.reason);
      return;
    }
    if (!mayAccessResource(user, attrs.verb as Verb, selfReview))
      throw forbiddenError(user, attrs, '');
  }

  /** A POST to TokenRequest, TokenReview or an access review: authorized, then answered. */
  private identityRequest(
    route: IdentityRoute,
    user: User,
    contentType: string,
    body: Buffer,
    res: ServerResponse,
  ): number {
    this.authorizeResource(
      user,
      {
        verb: 'create',
        namespace: route.namespace,
        apiGroup: route.group,
        resource: route.resource,
        subresource: route.subresource,
        name: route.name,
      },
      route.kind === 'selfsubjectaccessreview' || route.kind === 'selfsubjectreview',
    );
    const result = this.identity.handle(route, user, body, contentType);
    const json = JSON.stringify(result.body);
    res.writeHead(result.code, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Content-Length': String(Buffer.byteLength(json)),
    });
    res.end(json);
    return result.code;
  }

  private send(res: ServerResponse, result: ApiResult, format: ResponseFormat): void {
    const headers: Record<string, string | string[]> = { 'Cache-Control': 'no-cache, private' };
    let body = result.body;
    let contentType = result.contentType;
    if (format === 'yaml' && contentType === 'application/json') {
      body = toYaml(JSON.parse(body));
      contentType = 'application/yaml';
    }
    headers['Content-Type'] = contentType;
    headers['Content-Length'] = String(Buffer.byteLength(body));
    if (result.warnings.length > 0)
      headers.Warning = result.warnings.map((w) => `299 - ${JSON.stringify(w)}`);
    res.writeHead(result.code, headers);
    res.end(body);
  }

  private sendError(res: ServerResponse, error: ApiError): void {
    const body = JSON.stringify(error.body);
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Content-Length': String(Buffer.byteLength(body)),
    };
    if (error.retryAfterSeconds !== undefined && error.retryAfterSeconds > 0)
      headers['Retry-After'] = String(error.retryAfterSeconds);
    res.writeHead(error.code, headers);
    res.end(body);
  }

  private nonResource(
    method: string,
    path: string,
    accept: MediaRange[],
    res: ServerResponse,
    ifNoneMatch?: string,
  ): number {
    const send = (body: unknown, contentType = 'application/json') => {
      res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-cache, private' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
      return 200;
    };
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    if (trimmed === '/healthz' || trimmed === '/livez' || trimmed === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return 200;
    }
    if (method !== 'GET') throw apiErrors.methodNotAllowed();
    const parts = trimmed.split('/').filter((p) => p !== '');
    if (trimmed === '/version') return send(versionInfo(this.release));
    if (trimmed === '/openapi/v3') return send(openApiRoot(this.servedTypes));
    if (trimmed.startsWith('/openapi/v3/')) {
      const doc = openApiDocument(this.servedTypes, trimmed.slice('/openapi/v3/'.length));
      if (doc !== undefined) return send(doc);
    }
    if (trimmed === '/api' || trimmed === '/apis') {
      const aggregated = wantsAggregatedDiscovery(accept);
      if (aggregated === true) {
        // `ServeHTTPWithETag` (endpoints/discovery/aggregated/etag.go): ETag, Vary and a 304
        // for a client that already has this document.
        const json = JSON.stringify(aggregatedDiscovery(trimmed === '/api', this.release));
        const etag = discoveryETag(json);
        const cache = { ETag: etag, Vary: 'Accept', 'Cache-Control': 'public' };
        if (ifNoneMatch === etag) {
          res.writeHead(304, cache);
          res.end();
          return 304;
        }
        res.writeHead(200, { ...cache, 'Content-Type': DISCOVERY_V2 });
        res.end(json);
        return 200;
      }
      if (aggregated === undefined && !accept.some(isJsonRange)) {
        throw apiErrors.notAcceptable([
          'application/json',
          'application/yaml',
          'application/vnd.kubernetes.protobuf',
        ]);
      }
      return send(trimmed === '/api' ? apiVersions(this.address) : apiGroupList(this.release));
    }
    if (parts[0] === 'api' && parts.length === 2) {
      const list = apiResourceList(parts[1] ?? '', this.release);
      if (list !== undefined) return send(list);
    }
    if (parts[0] === 'apis' && parts.length === 2) {
      const group = apiGroup(parts[1] ?? '', this.release);
      if (group !== undefined) return send(group);
    }
    if (parts[0] === 'apis' && parts.length === 3) {
      const list = apiResourceList(`${parts[1] ?? ''}/${parts[2] ?? ''}`, this.release);
      if (list !== undefined) return send(list);
    }
    if (this.unservedGroup(trimmed)) return pageNotFound(res);
    throw apiErrors.pathNotFound();
  }

  /**
   * Whether a path names an API group this server does not serve: no group's handler claims it,
   * so it reaches the handler chain's last resort, the mux's NotFound.
   */
  private unservedGroup(path: string): boolean {
    const parts = path.split('/').filter((p) => p !== '');
    return (
      parts[0] === 'apis' &&
      parts.length >= 2 &&
      apiGroup(parts[1] ?? '', this.release) === undefined
    );
  }

  private emulatorRoute(
    method: string,
    path: string,
    query: URLSearchParams,
    body: Buffer,
    res: ServerResponse,
  ): boolean {
    const reply = (code: number, value: unknown): true => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(value));
      return true;
    };
    const parse = (): unknown => {
      try {
        return body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as unknown);
      } catch {
        return undefined;
      }
    };
    try {
      const route = `${method} ${path}`;
      if (route === 'GET /_emulator/counters') return reply(200, this.counters());
      if (route === 'GET /_emulator/requests') return reply(200, { items: this.requestLog() });
      if (route === 'POST /_emulator/faults') {
        this.hooks.injectFault(faultSchema.parse(parse()));
        return reply(201, { ok: true });
      }
      if (route === 'POST /_emulator/latency') {
        this.hooks.addLatency(latencySchema.parse(parse()));
        return reply(201, { ok: true });
      }
      if (route === 'POST /_emulator/reset') {
        this.reset({ keepObjects: query.get('keepObjects') === 'true' });
        return reply(200, { ok: true });
      }
      if (route === 'POST /_emulator/cut-watches') {
        return reply(200, { ok: true, watches: this.cutWatches() });
      }
      if (route === 'POST /_emulator/forget-history') {
        this.forgetHistory();
        return reply(200, { ok: true, resourceVersion: String(this.store.resourceVersion) });
      }
      return reply(404, { error: `no emulator hook ${route}` });
    } catch (error) {
      return reply(400, {
        error: error instanceof z.ZodError ? z.prettifyError(error) : String(error),
      });
    }
  }
}
