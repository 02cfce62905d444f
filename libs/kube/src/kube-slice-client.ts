import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import { SlicekeeperError, TerminalError, TransientError } from '@slicekeeper/errors';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '@slicekeeper/slices';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import { classifyKubeError, responseStatusOf } from './classify-kube-error';
import type { KubeErrorCode } from './classify-kube-error';
import { KubeTransport } from './kube-transport';
import type { KubeRequest, KubeconfigSource } from './kube-transport';
import { nameAndUidOf, parseJson, toListPage, toStoredResourceSlice } from './resource-slice-json';

export interface KubeSliceClientOptions {
  kubeconfig: KubeconfigSource;
  /** How long a Node's UID is cached, ms. @defaultValue 30000 */
  nodeUidTtlMs?: number;
  /**
   * How long "this Node does not exist" is cached, ms: short, because a joining Node appears
   * soon and its driver's slices should follow quickly. @defaultValue 2000
   */
  nodeMissTtlMs?: number;
  /** Injected for tests. @defaultValue Date.now */
  now?: () => number;
  /**
   * Called once per API request with the verb (list/get/create/update/delete), the resource
   * (resourceslices/nodes; `version` for ping) and the HTTP status (or 'error' when no response
   * came), for metrics.
   */
  onRequest?: (verb: string, resource: string, code: number | 'error') => void;
  /** Per-request timeout, ms, from sending until the whole body is read. @defaultValue 30000 */
  requestTimeoutMs?: number;
  /**
   * Page size of the per-key list; a key has a handful of slices, so one page is the rule.
   * @defaultValue 500
   */
  listPageSize?: number;
}

type Verb = 'list' | 'get' | 'create' | 'update' | 'delete';

interface CachedNodeUid {
  uid: string | undefined;
  /** ms since the epoch, by the injected clock. */
  expiresAt: number;
  /** When the answer was read, ms (the client's clock). */
  fetchedAt: number;
}

/** Ask for a Node's metadata only: its status (images, conditions) can be tens of KB. */
const NODE_METADATA_ACCEPT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/** The same for a list of Nodes. */
const NODE_LIST_METADATA_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** Who owns the fields we write, in managedFields (else the HTTP library's user agent). */
const FIELD_MANAGER = 'slicekeeper';

const MANAGED_LABEL_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

const RESOURCE_SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const NODES = '/api/v1/nodes';

/** `path` with the query parameters that are set. */
function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** The path of one named object of a collection. */
function objectPath(collection: string, name: string): string {
  return `${collection}/${encodeURIComponent(name)}`;
}

/** A field selector value with `\`, `,` and `=` escaped (apimachinery `fields.EscapeValue`). */
function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** Our per-request timeout fired; classified as 'timeout'. */
class RequestTimeoutError extends Error {
  override readonly name = 'TimeoutError';

  constructor(timeoutMs: number, cause: unknown) {
    super(`no complete response within ${timeoutMs} ms`, { cause });
  }
}

function hasCode(error: unknown, code: KubeErrorCode): boolean {
  return error instanceof SlicekeeperError && error.code === code;
}

/**
 * The only code in slicekeeper that talks to the Kubernetes API: lists, creates, updates and
 * deletes managed ResourceSlices and reads Node UIDs. Works with a kubeconfig (file or text,
 * http or https) or the pod's service account. One keep-alive connection pool serves every call.
 * Every method throws only classified errors (see {@link classifyKubeError}) with context, e.g.
 * `update ResourceSlice "x": conflict: …`.
 */
/**
 * From this many cached Nodes on, Nodes are confirmed before creates by listing them all at
 * once, at most once per BULK_CONFIRM_INTERVAL_MS, instead of a GET each.
 */
const BULK_CONFIRM_MIN_NODES = 64;
const BULK_CONFIRM_INTERVAL_MS = 1000;

export class KubeSliceClient {
  private readonly transport: KubeTransport;
  private readonly now: () => number;
  private readonly nodeUidTtlMs: number;
  private readonly nodeMissTtlMs: number;
  private readonly requestTimeoutMs: number;
  private readonly listPageSize: number;
  private readonly onRequest: KubeSliceClientOptions['onRequest'];
  private readonly nodeUids = new Map<string, CachedNodeUid>();
  /** When every Node was last listed into the cache, ms (the client's clock). */
  private nodesListedAt = -Infinity;
  private nodeListing: Promise<void> | undefined;
  private readonly nodeLookups = new Map<string, Promise<string | undefined>>();
  private closing: Promise<void> | undefined;

  /** @throws TerminalError (code 'config') when the kubeconfig cannot be loaded. */
  constructor(options: KubeSliceClientOptions) {
    this.transport = new KubeTransport(options.kubeconfig);
    this.now = options.now ?? Date.now;
    this.nodeUidTtlMs = options.nodeUidTtlMs ?? 30_000;
    this.nodeMissTtlMs = options.nodeMissTtlMs ?? 2_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.listPageSize = options.listPageSize ?? 500;
    this.onRequest = options.onRequest;
  }

  /**
   * The key's managed slices in their JSON shape: fieldSelector
   * `spec.nodeName=<node>,spec.driver=<driver>` (`spec.nodeName=` for the cluster-scoped key,
   * node ''), labelSelector `app.kubernetes.io/managed-by=slicekeeper`; follows `continue` pages,
   * and lists again from the start once if a continue token expires.
   */
  async listSlices(key: SliceKey): Promise<StoredResourceSlice[]> {
    const fieldSelector = `spec.nodeName=${escapeFieldValue(key.node)},spec.driver=${escapeFieldValue(key.driver)}`;
    const context = `list ResourceSlices of "${keyId(key)}"`;
    for (let attempt = 1; ; attempt++) {
      try {
        const slices: StoredResourceSlice[] = [];
        for await (const page of this.pages(context, fieldSelector, this.listPageSize)) {
          slices.push(...page);
        }
        return slices;
      } catch (error) {
        if (attempt >= 2 || !hasCode(error, 'expired')) throw error;
      }
    }
  }

  /**
   * Every managed slice of the cluster, page by page (for the janitor). Empty pages are skipped.
   * @param pageSize - slices per request. @defaultValue 500
   */
  listManagedSlices(pageSize = 500): AsyncIterable<StoredResourceSlice[]> {
    return this.pages('list managed ResourceSlices', undefined, pageSize);
  }

  /**
   * The Node's UID, or undefined when the Node does not exist (404). Cached for nodeUidTtlMs, a
   * miss for nodeMissTtlMs; concurrent lookups of one Node share one request. With `maxAgeMs`,
   * a cached answer older than that is looked up again (before creating slices the Node owns).
   */
  async getNodeUid(
    node: string,
    { maxAgeMs }: { maxAgeMs?: number } = {},
  ): Promise<string | undefined> {
    if (node === '') {
      throw new TerminalError('get Node "": a cluster-scoped key has no Node', {
        code: 'bad-request',
      });
    }
    const cached = this.nodeUids.get(node);
    const now = this.now();
    // How old an answer may be: the TTL, or less when the caller is about to create slices.
    const freshFor = maxAgeMs ?? this.nodeUidTtlMs;
    if (cached !== undefined && cached.expiresAt > now && now - cached.fetchedAt <= freshFor) {
      return cached.uid;
    }
    // A cold cache (a start, a resync after a quiet spell) would cost one GET per key, and so
    // would confirming many Nodes before creates: read every Node's metadata in a few pages
    // instead, at most once per `freshFor` (and per second). A Node the listing did not
    // refresh (it may have just joined, or been deleted) is read on its own below.
    const bulk = maxAgeMs === undefined || this.nodeUids.size >= BULK_CONFIRM_MIN_NODES;
    if (bulk && now - this.nodesListedAt >= Math.max(freshFor, BULK_CONFIRM_INTERVAL_MS)) {
      this.nodeListing ??= this.listNodeUids().finally(() => {
        this.nodeListing = undefined;
      });
      await this.nodeListing;
    }
    const listed = this.nodeUids.get(node);
    if (bulk && listed?.uid !== undefined && listed.fetchedAt >= this.nodesListedAt) {
      return listed.uid;
    }
    const pending = this.nodeLookups.get(node);
    if (pending !== undefined) return pending;
    // Compared by identity below, after the first await, when it is assigned.
    let lookup: Promise<string | undefined> | undefined = undefined;
    lookup = (async () => {
      try {
        const uid = await this.readNodeUid(node);
        // A forgetNode() while we waited means this answer may be stale: do not cache it.
        if (this.nodeLookups.get(node) === lookup) {
          const ttl = uid === undefined ? this.nodeMissTtlMs : this.nodeUidTtlMs;
          this.nodeUids.set(node, { uid, fetchedAt: this.now(), expiresAt: this.now() + ttl });
        }
        return uid;
      } finally {
        if (this.nodeLookups.get(node) === lookup) this.nodeLookups.delete(node);
      }
    })();
    this.nodeLookups.set(node, lookup);
    return lookup;
  }

  /**
   * Caches the UID of every Node, read as metadata page by page. A Node it does not list is
   * left to a GET (it may have just joined). A failure (e.g. no `list nodes` permission) only
   * costs the optimisation.
   */
  private async listNodeUids(): Promise<void> {
    const startedAt = this.now();
    this.nodesListedAt = startedAt;
    let token: string | undefined;
    try {
      do {
        const page = toListPage(
          await this.request('list', 'nodes', 'list Nodes', {
            method: 'GET',
            path: withQuery(NODES, { limit: 500, continue: token }),
            accept: NODE_LIST_METADATA_ACCEPT,
          }),
          'NodeList',
        );
        for (const item of page.items) {
          const node = nameAndUidOf(item);
          if (node === undefined || this.nodeLookups.has(node.name)) continue;
          this.nodeUids.set(node.name, {
            uid: node.uid,
            fetchedAt: startedAt,
            expiresAt: startedAt + this.nodeUidTtlMs,
          });
        }
        token = page.continueToken;
      } while (token !== undefined);
    } catch {
      // Per-Node GETs still work; the next bulk read waits for the TTL.
    }
  }

  /** Drops a cached Node UID (the syncer calls it when a write reveals the Node changed). */
  forgetNode(node: string): void {
    this.nodeUids.delete(node);
    this.nodeLookups.delete(node);
  }

  /** POST; the API server names the slice from `metadata.generateName`. */
  async createSlice(slice: ResourceSlice): Promise<StoredResourceSlice> {
    const name = slice.metadata.name ?? slice.metadata.generateName ?? '';
    const context = `create ResourceSlice "${name}"`;
    const created = await this.request('create', 'resourceslices', context, {
      method: 'POST',
      path: withQuery(RESOURCE_SLICES, { fieldManager: FIELD_MANAGER }),
      body: slice,
    });
    return this.read(context, () => toStoredResourceSlice(created));
  }

  /** PUT with the object's metadata.resourceVersion as precondition (a stale one: 'conflict'). */
  async updateSlice(slice: StoredResourceSlice): Promise<StoredResourceSlice> {
    const { name } = slice.metadata;
    const context = `update ResourceSlice "${name}"`;
    const updated = await this.request('update', 'resourceslices', context, {
      method: 'PUT',
      path: withQuery(objectPath(RESOURCE_SLICES, name), { fieldManager: FIELD_MANAGER }),
      body: slice,
    });
    return this.read(context, () => toStoredResourceSlice(updated));
  }

  /**
   * DELETE with preconditions {uid, resourceVersion}: a slice that changed or was replaced
   * meanwhile is not deleted ('conflict'); 404 = already gone = success.
   */
  async deleteSlice(target: { name: string; uid: string; resourceVersion: string }): Promise<void> {
    try {
      await this.request('delete', 'resourceslices', `delete ResourceSlice "${target.name}"`, {
        method: 'DELETE',
        path: objectPath(RESOURCE_SLICES, target.name),
        body: { preconditions: { uid: target.uid, resourceVersion: target.resourceVersion } },
      });
    } catch (error) {
      if (!hasCode(error, 'not-found')) throw error;
    }
  }

  /** Resolves when the API server answers GET /version; for /readyz. */
  async ping(): Promise<void> {
    await this.request('get', 'version', 'get API server version', {
      method: 'GET',
      path: '/version',
    });
  }

  /** Closes pooled connections; later calls fail with 'connection'. Idempotent. */
  close(): Promise<void> {
    this.closing ??= Promise.resolve().then(() => {
      this.transport.close();
    });
    return this.closing;
  }

  private async *pages(
    context: string,
    fieldSelector: string | undefined,
    limit: number,
  ): AsyncGenerator<StoredResourceSlice[]> {
    let token: string | undefined;
    do {
      const answer = await this.request('list', 'resourceslices', context, {
        method: 'GET',
        path: withQuery(RESOURCE_SLICES, {
          labelSelector: MANAGED_LABEL_SELECTOR,
          fieldSelector,
          limit,
          continue: token,
        }),
      });
      const list = this.read(context, () => toListPage(answer, 'ResourceSliceList'));
      const page = this.read(context, () => list.items.map(toStoredResourceSlice));
      token = list.continueToken;
      if (page.length > 0) yield page;
    } while (token !== undefined);
  }

  /** What `read` makes of an answer; a malformed answer is classified with `context`. */
  private read<T>(context: string, read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw classifyKubeError(error, context, { now: this.now });
    }
  }

  private async readNodeUid(node: string): Promise<string | undefined> {
    if (node === '') {
      throw new TerminalError('get Node "": a cluster-scoped key has no Node', {
        code: 'bad-request',
      });
    }
    try {
      const read = await this.request('get', 'nodes', `get Node "${node}"`, {
        method: 'GET',
        path: objectPath(NODES, node),
        accept: NODE_METADATA_ACCEPT,
      });
      const uid = nameAndUidOf(read)?.uid;
      if (uid === undefined) {
        throw new TransientError(`get Node "${node}": the API server returned no uid`, {
          code: 'error',
        });
      }
      return uid;
    } catch (error) {
      if (hasCode(error, 'not-found')) return undefined;
      throw error;
    }
  }

  /**
   * Sends one API request with our connection pool, credentials and timeout (until the whole
   * body is read), reports it to onRequest, and returns the response as JSON; classifies any
   * failure.
   */
  private async request(
    verb: Verb,
    resource: string,
    context: string,
    request: Omit<KubeRequest, 'signal'>,
  ): Promise<unknown> {
    const abort = new AbortController();
    const timer = setTimeout(() => {
      abort.abort();
    }, this.requestTimeoutMs);
    let body: string;
    try {
      const response = await this.transport.request({ ...request, signal: abort.signal });
      this.onRequest?.(verb, resource, response.status);
      body = response.body;
    } catch (error) {
      this.onRequest?.(verb, resource, responseStatusOf(error) ?? 'error');
      const cause = abort.signal.aborted
        ? new RequestTimeoutError(this.requestTimeoutMs, error)
        : error;
      throw classifyKubeError(cause, context, { now: this.now });
    } finally {
      clearTimeout(timer);
    }
    return this.read(context, () => parseJson(body));
  }
}
