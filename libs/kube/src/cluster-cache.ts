import type { SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { systemClock } from '@slicekeeper/time';
import type { BackoffOptions, Clock } from '@slicekeeper/time';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '@slicekeeper/slices';
import type { StoredResourceSlice } from '@slicekeeper/slices';
import { KubeTransport } from './kube-transport';
import type { KubeconfigSource } from './kubeconfig';
import { observedConditionOf } from './node-condition-json';
import type { ObservedCondition } from './node-condition-json';
import { Reflector } from './reflector';
import { sliceFromWire, slicesCollection } from './resource-api';
import type { ResourceApiVersion } from './resource-api';
import type { WatchEventType } from './reflector';
import {
  MalformedResponseError,
  nodeMetadataOf,
  toStoredResourceSlice,
} from './resource-slice-json';
import { SliceStore } from './slice-store';
import type { ReplaceResult, SliceChange } from './slice-store';
import { startEcho, takeWriteTrace } from './write-trace';

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
  /** The resource.k8s.io version to watch slices in (see `discoverResourceApi`). @defaultValue `'v1'` */
  apiVersion?: ResourceApiVersion;
  /**
   * Called for every change to a managed slice that is not the echo of one of our own writes
   * (see {@link ClusterCache.recordWrite}), with the key the slice belongs to: someone else
   * created, changed or deleted it, or a relist found a change the watch missed. Not called
   * for the first list.
   */
  onForeignChange?: (
    key: SliceKey,
    change: { type: WatchEventType; name: string; uid: string },
  ) => void;
  /**
   * Called when a Node appears, goes, or comes back with a new UID, from a watch event or a
   * relist; not for the first list, nor for a Node modified under the same UID.
   */
  onNode?: (change: NodeChange) => void;
  /**
   * Called with a Node's name when its `DRAResourcesPublished` condition (status or reason)
   * changed under the same UID, by a watch event or a relist, unless the change is one of our
   * own writes recorded with {@link ClusterCache.recordNodeCondition}; not for the first list.
   * Another replica's write shows up here, so that whoever evaluates the node next compares
   * with it (a cache that lags one write must not skip the next one).
   */
  onNodeCondition?: (name: string) => void;
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

const NODES = '/api/v1/nodes';
const MANAGED_LABEL_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** What the cache keeps of a Node: a few fields, however large its status. */
interface NodeState {
  name: string;
  uid: string;
  resourceVersion: string;
  /** Its `DRAResourcesPublished` condition; undefined when it has none. */
  published: ObservedCondition | undefined;
}

function toNodeState(json: unknown): NodeState {
  const node = nodeMetadataOf(json);
  if (node === undefined) {
    throw new MalformedResponseError('a Node without name, uid or resourceVersion');
  }
  return { ...node, published: observedConditionOf(json) };
}

/** A resourceVersion as the integer it is on every etcd-backed server, else undefined. */
function versionOf(resourceVersion: string): bigint | undefined {
  return /^\d+$/.test(resourceVersion) ? BigInt(resourceVersion) : undefined;
}

/** Whether `known` is a later version of a Node than `incoming` (our own write, recorded). */
function isNewer(known: NodeState, incoming: NodeState): boolean {
  if (known.uid !== incoming.uid) return false;
  const [a, b] = [versionOf(known.resourceVersion), versionOf(incoming.resourceVersion)];
  return a !== undefined && b !== undefined && a > b;
}

function sameCondition(
  a: ObservedCondition | undefined,
  b: ObservedCondition | undefined,
): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The syncer's view of the cluster, fed by two watches (see {@link Reflector}), so that a sync
 * reads nothing from the API server:
 * - the managed ResourceSlices (label `app.kubernetes.io/managed-by=slicekeeper`), indexed by
 *   key (node, driver; node '' for a cluster-scoped pool) and by pool (driver, pool name),
 *   overlaid with the results of our own writes until the watch delivers them (a mutation
 *   cache, see {@link SliceStore});
 * - the Nodes: name → UID and the `DRAResourcesPublished` condition, overlaid with our own
 *   writes of it until the watch delivers them. Whole Node objects are listed and watched (the
 *   condition is in `status`, which metadata-only lists leave out) and only those fields are
 *   kept: the cost is the bandwidth and parsing of Node status updates (a kubelet reports its
 *   status on change and every 5 minutes by default), not memory.
 *
 * Every replica keeps its own; nothing is shared through Redis. Changes made by anyone else
 * are reported through `onForeignChange`, `onNode` and `onNodeCondition`, so that they are
 * repaired at once.
 */
export class ClusterCache {
  private readonly transport: KubeTransport;
  private readonly ownsTransport: boolean;
  private readonly slices: SliceStore;
  private readonly nodes = new Map<string, NodeState>();
  private readonly sliceReflector: Reflector<StoredResourceSlice, ReplaceResult>;
  /** The resource.k8s.io version slices are watched in. */
  private apiVersion: ResourceApiVersion;
  private readonly nodeReflector: Reflector<NodeState, undefined>;
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
      clock,
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
    this.apiVersion = options.apiVersion ?? 'v1';
    this.sliceReflector = new Reflector({
      ...common,
      path: slicesCollection(this.apiVersion),
      resource: 'resourceslices',
      kind: 'ResourceSlices',
      labelSelector: MANAGED_LABEL_SELECTOR,
      decode: (json) => toStoredResourceSlice(sliceFromWire(json, this.apiVersion)),
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
      decode: toNodeState,
      onReplace: (items, _resourceVersion, initial) => {
        this.replaceNodes(items, initial);
        return undefined;
      },
      onEvent: (type, node) => {
        const known = this.nodes.get(node.name);
        // An event from before our own recorded write: the write's own event is on its way.
        if (type === 'MODIFIED' && known !== undefined && isNewer(known, node)) return;
        if (type === 'DELETED') this.nodes.delete(node.name);
        else this.nodes.set(node.name, node);
        // A Node modified under the same UID (status, labels) changes nothing we publish.
        if (type === 'MODIFIED' && known?.uid === node.uid) {
          if (!sameCondition(known.published, node.published)) this.reportCondition(node.name);
          return;
        }
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

  /** The keys of `node` ('' = cluster-scoped) with a managed slice in the view. */
  keysOfNode(node: string): SliceKey[] {
    return this.slices.keysOfNode(node);
  }

  /** The Node's UID; undefined when the watch knows no such Node. */
  nodeUid(name: string): string | undefined {
    return this.nodes.get(name)?.uid;
  }

  /**
   * The Node's `DRAResourcesPublished` condition, our own recorded writes included; undefined
   * when the Node has none or the watch knows no such Node (see {@link nodeUid}).
   */
  publishedCondition(name: string): ObservedCondition | undefined {
    return this.nodes.get(name)?.published;
  }

  /**
   * The condition a write of ours left on the Node at `resourceVersion`: shown by
   * {@link publishedCondition} at once, and its watch event (or any older one still on its way)
   * changes nothing and is not reported. Ignored for a Node the watch does not know.
   */
  recordNodeCondition(
    name: string,
    resourceVersion: string,
    condition: ObservedCondition | undefined,
  ): void {
    const known = this.nodes.get(name);
    if (known === undefined) return;
    const written = { ...known, resourceVersion, published: condition };
    if (isNewer(known, written)) return;
    this.nodes.set(name, written);
  }

  /**
   * The object a create or update returned: shown by {@link slicesOf} until the watch delivers
   * it (or something newer), and its watch event is not reported as foreign. A traced write's
   * object (`KubeSliceClient` with tracing on) starts a `watch echo` span, a child of the write's
   * span, that ends when the watch delivers the write (`slicekeeper.echo`: `received`; `early`
   * when it already had), when the cache forgets it unseen (`missed`) or closes (`closed`).
   */
  recordWrite(slice: StoredResourceSlice): void {
    const trace = takeWriteTrace(slice);
    const { name, resourceVersion } = slice.metadata;
    this.slices.recordWrite(
      slice,
      trace === undefined ? undefined : startEcho(trace, name, resourceVersion),
    );
  }

  /**
   * A slice we deleted: hidden from {@link slicesOf} until the watch delivers its deletion, and
   * that deletion is not reported as foreign.
   */
  recordDelete(target: { name: string; uid: string; resourceVersion: string }): void {
    this.slices.recordDelete(target);
  }

  /** See `SliceStore.forgetDelete`. */
  forgetDelete(name: string): void {
    this.slices.forgetDelete(name);
  }

  /**
   * Anti-entropy: lists the managed slices and the Nodes again from scratch, replaces the cache
   * with them, and reports every difference the watches had missed (onForeignChange, onNode,
   * onNodeCondition).
   * Resolves with the slice differences; rejects if a list fails (the watches go on).
   */
  async relist(): Promise<RelistResult> {
    const [slices] = await Promise.all([this.sliceReflector.relist(), this.nodeReflector.relist()]);
    return { added: slices.added, changed: slices.changed, removed: slices.removed };
  }

  /**
   * Watches slices in `version` from now on (the server started serving a newer one): lists
   * them again in it; the objects are the same, so nothing is reported as changed.
   */
  async useApiVersion(version: ResourceApiVersion): Promise<void> {
    if (version === this.apiVersion) return;
    this.apiVersion = version;
    await this.sliceReflector.usePath(slicesCollection(version));
  }

  /** Stops both watches and, unless it was shared, closes the connection pool. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([this.sliceReflector.close(), this.nodeReflector.close()]);
      this.slices.abandonEchoes();
      if (this.ownsTransport) this.transport.close();
    })();
    return this.closing;
  }

  private replaceNodes(items: NodeState[], initial: boolean): void {
    const listed = new Map(items.map((node) => [node.name, node]));
    const changes: NodeChange[] = [];
    const conditionChanges: string[] = [];
    if (!initial) {
      for (const [name, node] of listed) {
        const known = this.nodes.get(name);
        if (known === undefined) changes.push({ type: 'ADDED', name, uid: node.uid });
        else if (known.uid !== node.uid) changes.push({ type: 'MODIFIED', name, uid: node.uid });
        else if (isNewer(known, node)) listed.set(name, known);
        else if (!sameCondition(known.published, node.published)) conditionChanges.push(name);
      }
      for (const [name, known] of this.nodes) {
        if (!listed.has(name)) changes.push({ type: 'DELETED', name, uid: known.uid });
      }
    }
    this.nodes.clear();
    for (const [name, node] of listed) this.nodes.set(name, node);
    for (const change of changes) this.reportNode(change);
    for (const name of conditionChanges) this.reportCondition(name);
  }

  private reportSlice(change: SliceChange): void {
    try {
      this.options.onForeignChange?.(change.key, {
        type: change.type,
        name: change.name,
        uid: change.uid,
      });
    } catch (error) {
      this.options.logger.warn(
        { ...change.key, slice: change.name, err: errorMessage(error) },
        'onForeignChange failed',
      );
    }
  }

  private reportCondition(name: string): void {
    try {
      this.options.onNodeCondition?.(name);
    } catch (error) {
      this.options.logger.warn({ node: name, err: errorMessage(error) }, 'onNodeCondition failed');
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
