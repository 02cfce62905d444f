import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import { SlicekeeperError } from '@slicekeeper/errors';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '@slicekeeper/slices';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import { classifyKubeError } from './classify-kube-error';
import type { KubeErrorCode } from './classify-kube-error';
import { callKube } from './kube-request';
import type { OnKubeRequest } from './kube-request';
import { KubeTransport, withQuery } from './kube-transport';
import type { KubeRequest } from './kube-transport';
import type { KubeconfigSource } from './kubeconfig';
import { sliceFromWire, sliceToWire, slicesCollection } from './resource-api';
import type { ResourceApiVersion } from './resource-api';
import { FIELD_MANAGER, toListPage, toStoredResourceSlice } from './resource-slice-json';
import { carryWriteTrace } from './write-trace';

export type KubeSliceClientOptions = (
  | { kubeconfig: KubeconfigSource }
  /** Shared with the `ClusterCache` of the same process: one connection pool, one auth. */
  | { transport: KubeTransport }
) & {
  /**
   * Called once per API request with the verb (list/get/create/update/delete), the resource
   * (resourceslices/nodes; `version` for ping) and the HTTP status (or 'error' when no response
   * came), for metrics.
   */
  onRequest?: OnKubeRequest;
  /** Per-request timeout, ms, from sending until the whole body is read. @defaultValue 30000 */
  requestTimeoutMs?: number;
  /**
   * Page size of the per-key list; a key has a handful of slices, so one page is the rule.
   * @defaultValue 500
   */
  listPageSize?: number;
  /** The resource.k8s.io version to speak (see `discoverResourceApi`). @defaultValue `'v1'` */
  apiVersion?: ResourceApiVersion;
};

type Verb = 'list' | 'get' | 'create' | 'update' | 'delete';

const MANAGED_LABEL_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** The path of one named object of a collection. */
function objectPath(collection: string, name: string): string {
  return `${collection}/${encodeURIComponent(name)}`;
}

/** A field selector value with `\`, `,` and `=` escaped (apimachinery `fields.EscapeValue`). */
function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (c) => `\\${c}`);
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
export class KubeSliceClient {
  private readonly transport: KubeTransport;
  private readonly ownsTransport: boolean;
  private readonly requestTimeoutMs: number;
  private readonly listPageSize: number;
  private readonly onRequest: KubeSliceClientOptions['onRequest'];
  private apiVersion: ResourceApiVersion;
  private collection: string;
  private closing: Promise<void> | undefined;

  /** @throws TerminalError (code 'config') when the kubeconfig cannot be loaded. */
  constructor(options: KubeSliceClientOptions) {
    this.ownsTransport = !('transport' in options);
    this.transport =
      'transport' in options ? options.transport : new KubeTransport(options.kubeconfig);
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.listPageSize = options.listPageSize ?? 500;
    this.onRequest = options.onRequest;
    this.apiVersion = options.apiVersion ?? 'v1';
    this.collection = slicesCollection(this.apiVersion);
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
   * POST; the API server names the slice from `metadata.generateName`. With tracing on, the
   * returned slice carries its write's span to `ClusterCache.recordWrite` (the watch echo).
   */
  async createSlice(slice: ResourceSlice): Promise<StoredResourceSlice> {
    const name = slice.metadata.name ?? slice.metadata.generateName ?? '';
    const context = `create ResourceSlice "${name}"`;
    const created = await this.request('create', 'resourceslices', context, name, {
      method: 'POST',
      path: withQuery(this.collection, { fieldManager: FIELD_MANAGER }),
      body: sliceToWire(slice, this.apiVersion),
    });
    return this.stored(context, created);
  }

  /**
   * PUT with the object's metadata.resourceVersion as precondition (a stale one: 'conflict').
   * Traced as {@link createSlice}.
   */
  async updateSlice(slice: StoredResourceSlice): Promise<StoredResourceSlice> {
    const { name } = slice.metadata;
    const context = `update ResourceSlice "${name}"`;
    const updated = await this.request('update', 'resourceslices', context, name, {
      method: 'PUT',
      path: withQuery(objectPath(this.collection, name), { fieldManager: FIELD_MANAGER }),
      body: sliceToWire(slice, this.apiVersion),
    });
    return this.stored(context, updated);
  }

  /**
   * DELETE with preconditions {uid, resourceVersion}: a slice that changed or was replaced
   * meanwhile is not deleted ('conflict'); 404 = already gone = success.
   */
  async deleteSlice(target: { name: string; uid: string; resourceVersion: string }): Promise<void> {
    try {
      const context = `delete ResourceSlice "${target.name}"`;
      await this.request('delete', 'resourceslices', context, target.name, {
        method: 'DELETE',
        path: objectPath(this.collection, target.name),
        body: { preconditions: { uid: target.uid, resourceVersion: target.resourceVersion } },
      });
    } catch (error) {
      if (!hasCode(error, 'not-found')) throw error;
    }
  }

  /** Resolves when the API server answers GET /version; for /readyz. */
  async ping(): Promise<void> {
    await this.request('get', 'version', 'get API server version', undefined, {
      method: 'GET',
      path: '/version',
    });
  }

  /**
   * Closes pooled connections, unless the transport is shared; later calls fail with
   * 'connection'. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= Promise.resolve().then(() => {
      if (this.ownsTransport) this.transport.close();
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
      const answer = await this.request('list', 'resourceslices', context, undefined, {
        method: 'GET',
        path: withQuery(this.collection, {
          labelSelector: MANAGED_LABEL_SELECTOR,
          fieldSelector,
          limit,
          continue: token,
        }),
      });
      const list = this.read(context, () => toListPage(answer, 'ResourceSliceList'));
      const page = this.read(context, () => list.items.map((item) => this.decode(item)));
      token = list.continueToken;
      if (page.length > 0) yield page;
    } while (token !== undefined);
  }

  /** Speaks `version` from now on (the server started serving a newer one). */
  useApiVersion(version: ResourceApiVersion): void {
    this.apiVersion = version;
    this.collection = slicesCollection(version);
  }

  /** A slice as the server sent it, in the planner's (v1) shape. */
  private decode(json: unknown): StoredResourceSlice {
    return toStoredResourceSlice(sliceFromWire(json, this.apiVersion));
  }

  /** A write's answer, decoded; it carries the write's span when traced. */
  private stored(context: string, answer: unknown): StoredResourceSlice {
    const slice = this.read(context, () => this.decode(answer));
    carryWriteTrace(answer, slice);
    return slice;
  }

  /** What `read` makes of an answer; a malformed answer is classified with `context`. */
  private read<T>(context: string, read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw classifyKubeError(error, context);
    }
  }

  /** One API request (see {@link callKube}). */
  private request(
    verb: Verb,
    resource: string,
    context: string,
    name: string | undefined,
    request: Omit<KubeRequest, 'signal'>,
  ): Promise<unknown> {
    return callKube({
      transport: this.transport,
      timeoutMs: this.requestTimeoutMs,
      onRequest: this.onRequest,
      verb,
      resource,
      context,
      name,
      request,
    });
  }
}
