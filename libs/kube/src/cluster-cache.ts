import type { SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { systemClock } from '@slicekeeper/runtime';
import type { BackoffOptions, Clock } from '@slicekeeper/runtime';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '@slicekeeper/slices';
import type { StoredResourceSlice } from '@slicekeeper/slices';
import { KubeTransport } from './kube-transport';
import type { KubeconfigSource } from './kube-transport';
import { Reflector } from './reflector';
import type { WatchEventType } from './reflector';
import {
  MalformedResponseError,
  nodeMetadataOf,
  toStoredResourceSlice,
} from './resource-slice-json';
import { SliceStore } from './slice-store';
import type { ReplaceResult, SliceChange } from './slice-store';

/** A change to a Node: its name and UID (for DELETED, the UID it had). */
export interface NodeChange {
  type: WatchEventType;
  name: string;
  uid: string;
}

/** What an anti-entropy relist found that the watch had not delivered. */
export interface RelistResult {
  added: number;
  changed: number;
  removed: number;
}

export type ClusterCacheOptions = (
  | {
      /** Where to connect; the cache opens its own connection pool. */
      kubeconfig: KubeconfigSource;
    }
  | {
      /** A connection shared with other clients; the cache does not close it. */
      transport: KubeTransport;
    }
) & {
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /**
   * Called for every change to a managed slice that is not the echo of one of our own writes
   * (see {@link ClusterCache.recordWrite}), with the key the slice belongs to: someone else
   * created, changed or deleted it, or a relist found a change the watch missed. Not called
   * for the first list.
   */
  onForeignChange?: (key: SliceKey, change: { type: WatchEventType; name: string }) => void;
  /**
   * Called when a Node appears, goes, or comes back with a new UID, from a watch event or a
   * relist; not for the first list, nor for a Node modified under the same UID.
   */
  onNode?: (change: NodeChange) => void;
  /**
   * Called once per list page and per watch with the verb (list/watch), the resource
   * (resourceslices/nodes) and the HTTP status, or 'error' when no response came; for the
   * `slicekeeper_kube_requests_total` metric, as KubeSliceClient's.
   */
  onRequest?: (verb: string, resource: string, code: number | 'error') => void;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** Uniform in [0, 1); injected for tests. @defaultValue Math.random */
  random?: () => number;
  /**
   * Longest time a recorded write or delete overrides the watch, ms.
   * @defaultValue 60000 (upstream's)
   */
  mutationTtlMs?: number;
  /** Retry delays of a failed list or watch. @defaultValue 800 ms doubling to 30 s, jittered */
  backoff?: BackoffOptions;
  /** Objects per list page. @defaultValue 500 */
  listPageSize?: number;
  /** Timeout of one list page, and of a watch until its response starts, ms. @defaultValue 60000 */
  requestTimeoutMs?: number;
  /**
   * The server ends each watch after between this and twice this, ms, and the watch resumes.
   * @defaultValue 300000
   */
  minWatchTimeoutMs?: number;
};

const RESOURCE_SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const NODES = '/api/v1/nodes';
const MANAGED_LABEL_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** Nodes as metadata only: a Node's status (images, conditions) can be tens of KB. */
const NODE_LIST_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const NODE_WATCH_ACCEPT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

interface NodeMetadata {
  name: string;
  uid: string;
  resourceVersion: string;
}

function toNodeMetadata(json: unknown): NodeMetadata {
  const node = nodeMetadataOf(json);
  if (node === undefined) {
    throw new MalformedResponseError('a Node without name, uid or resourceVersion');
  }
  return node;
}

/**
 * The syncer's view of the cluster, fed by two watches (see {@link Reflector}), so that a sync
 * reads nothing from the API server:
 * - the managed ResourceSlices (label `app.kubernetes.io/managed-by=slicekeeper`), indexed by
 *   key (node, driver; node '' for a cluster-scoped pool) and by pool (driver, pool name),
 *   overlaid with the results of our own writes until the watch delivers them (a mutation
 *   cache, see {@link SliceStore});
 * - the Nodes, as metadata only: name → UID.
 *
 * Every replica keeps its own; nothing is shared through Redis. Changes made by anyone else
 * are reported through `onForeignChange` and `onNode`, so that they are repaired at once.
 */
export class ClusterCache {
  private readonly transport: KubeTransport;
  private readonly ownsTransport: boolean;
  private readonly slices: SliceStore;
  private readonly nodes = new Map<string, NodeMetadata>();
  private readonly sliceReflector: Reflector<StoredResourceSlice, ReplaceResult>;
  private readonly nodeReflector: Reflector<NodeMetadata, undefined>;
  private starting: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  /** @throws TerminalError (code 'config') when the kubeconfig cannot be loaded. */
  constructor(private readonly options: ClusterCacheOptions) {
    if ('transport' in options) {
      this.transport = options.transport;
      this.ownsTransport = false;
    } else {
      this.transport = new KubeTransport(options.kubeconfig);
      this.ownsTransport = true;
    }
    const clock = options.clock ?? systemClock;
    this.slices = new SliceStore({
      now: () => clock.now(),
      ...(options.mutationTtlMs === undefined ? {} : { mutationTtlMs: options.mutationTtlMs }),
    });
    const common = {
      transport: this.transport,
      logger: options.logger,
      clock,
      ...(options.onRequest === undefined ? {} : { onRequest: options.onRequest }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
      ...(options.listPageSize === undefined ? {} : { listPageSize: options.listPageSize }),
      ...(options.requestTimeoutMs === undefined
        ? {}
        : { requestTimeoutMs: options.requestTimeoutMs }),
      ...(options.minWatchTimeoutMs === undefined
        ? {}
        : { minWatchTimeoutMs: options.minWatchTimeoutMs }),
    };
    this.sliceReflector = new Reflector({
      ...common,
      path: RESOURCE_SLICES,
      resource: 'resourceslices',
      kind: 'ResourceSlices',
      labelSelector: MANAGED_LABEL_SELECTOR,
      decode: toStoredResourceSlice,
      onReplace: (items, resourceVersion, initial) => {
        const result = this.slices.replace(items, resourceVersion, initial);
        for (const change of result.changes) this.reportSlice(change);
        return result;
      },
      onEvent: (type, slice) => {
        const change = this.slices.apply(type, slice);
        if (change !== undefined) this.reportSlice(change);
      },
      onProgress: (resourceVersion) => {
        this.slices.observe(resourceVersion);
      },
    });
    this.nodeReflector = new Reflector({
      ...common,
      path: NODES,
      resource: 'nodes',
      kind: 'Nodes',
      listAccept: NODE_LIST_ACCEPT,
      watchAccept: NODE_WATCH_ACCEPT,
      decode: toNodeMetadata,
      onReplace: (items, _resourceVersion, initial) => {
        this.replaceNodes(items, initial);
        return undefined;
      },
      onEvent: (type, node) => {
        const known = this.nodes.get(node.name);
        if (type === 'DELETED') this.nodes.delete(node.name);
        else this.nodes.set(node.name, node);
        // A Node modified under the same UID (status, labels) changes nothing we publish.
        if (type === 'MODIFIED' && known?.uid === node.uid) return;
        this.reportNode({ type, name: node.name, uid: node.uid });
      },
    });
  }

  /**
   * Starts both watches; resolves once both first lists are in. Failing lists are retried with
   * backoff meanwhile (and logged); rejects only if closed first.
   */
  start(): Promise<void> {
    this.starting ??= Promise.all([this.sliceReflector.start(), this.nodeReflector.start()]).then(
      () => undefined,
    );
    return this.starting;
  }

  /** Whether both first lists are in (for /readyz). */
  get synced(): boolean {
    return this.sliceReflector.synced && this.nodeReflector.synced;
  }

  /** The key's managed slices by name, our own recent writes and deletes included. */
  slicesOf(key: SliceKey): StoredResourceSlice[] {
    return this.slices.slicesOf(key);
  }

  /** The managed slices of a pool (driver and pool name), as {@link slicesOf}. */
  slicesOfPool(driver: string, pool: string): StoredResourceSlice[] {
    return this.slices.slicesOfPool(driver, pool);
  }

  /** Every key with a managed slice in the view. */
  keys(): SliceKey[] {
    return this.slices.keys();
  }

  /** The Node's UID; undefined when the watch knows no such Node. */
  nodeUid(name: string): string | undefined {
    return this.nodes.get(name)?.uid;
  }

  /**
   * The object a create or update returned: shown by {@link slicesOf} until the watch delivers
   * it (or something newer), and its watch event is not reported as foreign.
   */
  recordWrite(slice: StoredResourceSlice): void {
    this.slices.recordWrite(slice);
  }

  /**
   * A slice we deleted: hidden from {@link slicesOf} until the watch delivers its deletion, and
   * that deletion is not reported as foreign.
   */
  recordDelete(target: { name: string; uid: string; resourceVersion: string }): void {
    this.slices.recordDelete(target);
  }

  /**
   * Anti-entropy: lists the managed slices and the Nodes again from scratch, replaces the cache
   * with them, and reports every difference the watches had missed (onForeignChange, onNode).
   * Resolves with the slice differences; rejects if a list fails (the watches go on).
   */
  async relist(): Promise<RelistResult> {
    const [slices] = await Promise.all([this.sliceReflector.relist(), this.nodeReflector.relist()]);
    return { added: slices.added, changed: slices.changed, removed: slices.removed };
  }

  /** Stops both watches and, unless it was shared, closes the connection pool. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([this.sliceReflector.close(), this.nodeReflector.close()]);
      if (this.ownsTransport) this.transport.close();
    })();
    return this.closing;
  }

  private replaceNodes(items: NodeMetadata[], initial: boolean): void {
    const listed = new Map(items.map((node) => [node.name, node]));
    const changes: NodeChange[] = [];
    if (!initial) {
      for (const [name, node] of listed) {
        const known = this.nodes.get(name);
        if (known === undefined) changes.push({ type: 'ADDED', name, uid: node.uid });
        else if (known.uid !== node.uid) changes.push({ type: 'MODIFIED', name, uid: node.uid });
      }
      for (const [name, known] of this.nodes) {
        if (!listed.has(name)) changes.push({ type: 'DELETED', name, uid: known.uid });
      }
    }
    this.nodes.clear();
    for (const [name, node] of listed) this.nodes.set(name, node);
    for (const change of changes) this.reportNode(change);
  }

  private reportSlice(change: SliceChange): void {
    try {
      this.options.onForeignChange?.(change.key, { type: change.type, name: change.name });
    } catch (error) {
      this.options.logger.warn(
        { ...change.key, slice: change.name, err: errorMessage(error) },
        'onForeignChange failed',
      );
    }
  }

  private reportNode(change: NodeChange): void {
    try {
      this.options.onNode?.(change);
    } catch (error) {
      this.options.logger.warn({ node: change.name, err: errorMessage(error) }, 'onNode failed');
    }
  }
}
