import { inParallel } from './in-parallel';

/** A quantity as the API writes it, e.g. `{ value: '80Gi' }`. */
interface QuantityValue {
  value: string;
}

/** What the scenarios read of a ResourceSlice (resource.k8s.io/v1). */
export interface ResourceSlice {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec: {
    driver: string;
    nodeName?: string;
    pool: { name: string; generation: number; resourceSliceCount: number };
    devices?: {
      name: string;
      attributes?: Record<string, { int?: number; string?: string; version?: string }>;
      capacity?: Record<string, QuantityValue>;
      consumesCounters?: { counterSet: string; counters: Record<string, QuantityValue> }[];
      taints?: { key: string; value?: string; effect: string; timeAdded?: string }[];
    }[];
    sharedCounters?: { name: string; counters: Record<string, QuantityValue> }[];
  };
}

/** The resource.k8s.io versions a ResourceSlice can be read in (which ones depends on the release). */
export type ResourceSliceVersion = 'v1' | 'v1beta2' | 'v1beta1';

/**
 * A ResourceSlice read in `version`, in v1's shape: v1beta2 has v1's fields; v1beta1 keeps every
 * field of a device but its name under `basic`. The harness's own reading, independent of the
 * syncer's conversion.
 */
export function sliceAsV1(slice: ResourceSlice, version: ResourceSliceVersion): ResourceSlice {
  if (version !== 'v1beta1' || slice.spec.devices === undefined) return slice;
  const devices = slice.spec.devices as unknown as { name: string; basic?: object }[];
  return {
    ...slice,
    spec: {
      ...slice.spec,
      devices: devices.map(({ basic, ...rest }) => ({ ...rest, ...basic })),
    },
  };
}

/** One answered request, from the emulator's request log. */
export interface LoggedRequest {
  seq: number;
  verb: string;
  resource: string;
  name: string;
  code: number;
  /** When it was answered, ms since the epoch. */
  at: number;
}

/** How many requests of one verb, resource and status code were answered. */
export interface RequestCount {
  verb: string;
  resource: string;
  code: number;
  count: number;
}

export interface Fault {
  verb?: string;
  resource?: string;
  name?: string;
  status: number;
  times?: number;
  durationMs?: number;
  retryAfterSeconds?: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** Whether a logged request changed a ResourceSlice (a successful write). */
export function isSliceWrite(request: LoggedRequest): boolean {
  return (
    request.resource === 'resourceslices' &&
    WRITE_VERBS.has(request.verb) &&
    request.code >= 200 &&
    request.code < 300
  );
}

/**
 * The kube emulator as the scenarios see it from outside its process: its ResourceSlices and
 * Nodes over the Kubernetes API, and its test hooks (`/_emulator/`) over HTTP.
 */
export class EmulatorClient {
  constructor(readonly url: string) {}

  /**
   * Every ResourceSlice, optionally of one node and driver (field selectors, as a client would),
   * read in `version` (@defaultValue `'v1'`; a 1.32 or 1.33 emulator serves no v1) and returned
   * in v1's shape.
   */
  async slices(
    filter: { node?: string; driver?: string; version?: ResourceSliceVersion } = {},
  ): Promise<ResourceSlice[]> {
    const version = filter.version ?? 'v1';
    const selectors = [
      ...(filter.node === undefined ? [] : [`spec.nodeName=${filter.node}`]),
      ...(filter.driver === undefined ? [] : [`spec.driver=${filter.driver}`]),
    ];
    const query = selectors.length === 0 ? '' : `?fieldSelector=${selectors.join(',')}`;
    const path = `/apis/resource.k8s.io/${version}/resourceslices${query}`;
    const body = (await this.json('GET', path)) as { items: ResourceSlice[] };
    return body.items.map((slice) => sliceAsV1(slice, version));
  }

  /** Creates the Nodes, `parallel` requests at a time (thousands take a few seconds at 32). */
  async createNodes(names: readonly string[], parallel = 1): Promise<void> {
    await inParallel(names, parallel, async (name) => {
      await this.json('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, labels: { 'kubernetes.io/hostname': name } },
      });
    });
  }

  async nodeUid(name: string): Promise<string> {
    const node = (await this.json('GET', `/api/v1/nodes/${name}`)) as { metadata: { uid: string } };
    return node.metadata.uid;
  }

  /** Requests answered since the start or the last `clearLog()`, oldest first (up to 10,000). */
  async requests(): Promise<LoggedRequest[]> {
    const body = (await this.json('GET', '/_emulator/requests')) as { items: LoggedRequest[] };
    return body.items;
  }

  /** Requests answered since the start or the last `clearLog()`, counted by verb, resource and code. */
  async counters(): Promise<RequestCount[]> {
    const body = (await this.json('GET', '/_emulator/counters')) as { counts: RequestCount[] };
    return body.counts;
  }

  /** Successful ResourceSlice writes in the request log. */
  async sliceWrites(): Promise<LoggedRequest[]> {
    return (await this.requests()).filter(isSliceWrite);
  }

  /** Clears the counters and the request log (and any faults); objects stay. */
  async clearLog(): Promise<void> {
    await this.json('POST', '/_emulator/reset?keepObjects=true');
  }

  /** Ends every open watch, as kube-apiserver does at a watch's timeout. @returns how many */
  async cutWatches(): Promise<number> {
    const body = (await this.json('POST', '/_emulator/cut-watches')) as { watches: number };
    return body.watches;
  }

  /** From now on, a watch that resumes from an older resourceVersion gets 410 Expired. */
  async forgetHistory(): Promise<void> {
    await this.json('POST', '/_emulator/forget-history');
  }

  async injectFault(fault: Fault): Promise<void> {
    await this.json('POST', '/_emulator/faults', fault);
  }

  async addLatency(latency: { verb?: string; resource?: string; ms: number }): Promise<void> {
    await this.json('POST', '/_emulator/latency', latency);
  }

  private async json(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await fetch(new URL(path, this.url), {
      method,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      signal: AbortSignal.timeout(10_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  }
}
