import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import type { SliceKey } from '@slicekeeper/contracts';
import { ManualClock } from '@slicekeeper/time/testing';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import { requestJson, waitFor } from '@slicekeeper/testing';
import { ClusterCache } from './cluster-cache';
import type { ClusterCacheOptions, NodeChange } from './cluster-cache';
import { KubeSliceClient } from './kube-slice-client';
import { KubeTransport } from './kube-transport';

const GPU = 'gpu.example.com';
const NET = 'net.example.com';
const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const NODES = '/api/v1/nodes';

/** A managed slice of `driver` on `node` ('' = all nodes), as the planner would build it. */
function slice(node: string, driver = GPU, index = 0): ResourceSlice {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      generateName: `${index.toString(16).padStart(5, '0')}-${driver}-${node}-`,
      labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' },
    },
    spec: {
      driver,
      pool: { name: node === '' ? 'fabric' : node, generation: 1, resourceSliceCount: 1 },
      ...(node === '' ? { allNodes: true } : { nodeName: node }),
      devices: [{ name: `dev-${index}`, attributes: { index: { int: index } } }],
    },
  };
}

interface ForeignChange {
  key: SliceKey;
  type: string;
  name: string;
}

let running: RunningKubeEmulator;
let client: KubeSliceClient;
let caches: ClusterCache[];
let foreign: ForeignChange[];
let nodeChanges: NodeChange[];
let requests: [string, string, number | 'error'][];
let warnings: string[];

function cache(
  options: Partial<ClusterCacheOptions> & { transport?: KubeTransport } = {},
): ClusterCache {
  const created = new ClusterCache({
    ...(options.transport === undefined
      ? { kubeconfig: { kind: 'yaml', text: running.kubeconfig } }
      : {}),
    logger: {
      debug: () => undefined,
      info: () => undefined,
      warn: (_fields: object, msg: string) => warnings.push(msg),
    } as unknown as ClusterCacheOptions['logger'],
    onForeignChange: (key, { type, name }) => foreign.push({ key, type, name }),
    onNode: (change) => nodeChanges.push(change),
    onRequest: (verb, resource, code) => requests.push([verb, resource, code]),
    backoff: { initialMs: 20, maxMs: 200 },
    ...options,
  } as ClusterCacheOptions);
  caches.push(created);
  return created;
}

/** Talks to the emulator directly: someone else's writes. */
function raw(method: string, path: string, body?: unknown): Promise<unknown> {
  return requestJson(running.url, method, path, body);
}

async function createNode(name: string): Promise<string> {
  const node = (await raw('POST', NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
  })) as {
    metadata: { uid: string };
  };
  return node.metadata.uid;
}

/** Someone else creates a managed slice. */
async function createForeign(node: string, driver = GPU, index = 0): Promise<StoredResourceSlice> {
  return (await raw('POST', SLICES, slice(node, driver, index))) as StoredResourceSlice;
}

function names(slices: readonly StoredResourceSlice[]): string[] {
  return slices.map((s) => s.metadata.name).sort();
}

function listCount(resource: string): number {
  return running.emulator.count({ verb: 'list', resource });
}

/** Waits until the cache's watches are down and both have scheduled their resume. */
async function waitForResumeScheduled(clock: ManualClock): Promise<void> {
  await waitFor(
    () =>
      running.emulator.watchCount() === 0 &&
      clock.pending().length === 2 &&
      clock.pending().every((ms) => ms <= 200),
    { description: 'both watches to schedule a resume' },
  );
}

beforeEach(async () => {
  running = await startKubeEmulator({ port: 0 });
  client = new KubeSliceClient({ kubeconfig: { kind: 'yaml', text: running.kubeconfig } });
  caches = [];
  foreign = [];
  nodeChanges = [];
  requests = [];
  warnings = [];
});

afterEach(async () => {
  await Promise.all(caches.map((c) => c.close()));
  await client.close();
  await running.close();
});

describe('ClusterCache against the kube emulator', () => {
  it('lists the managed slices by key and the Node UIDs, then watches; reports nothing for it', async () => {
    const uidA = await createNode('node-a');
    const a1 = await client.createSlice(slice('node-a', GPU, 0));
    const a2 = await client.createSlice(slice('node-a', GPU, 1));
    const net = await client.createSlice(slice('node-a', NET, 0));
    const fabric = await client.createSlice(slice('', GPU, 0));
    await raw('POST', SLICES, { ...slice('node-a', GPU, 2), metadata: { name: 'unmanaged' } });

    const view = cache({ listPageSize: 2 });
    expect(view.synced).toBe(false);
    await view.start();

    expect(view.synced).toBe(true);
    expect(names(view.slicesOf({ node: 'node-a', driver: GPU }))).toEqual(names([a1, a2]));
    expect(names(view.slicesOf({ node: 'node-a', driver: NET }))).toEqual(names([net]));
    expect(names(view.slicesOf({ node: '', driver: GPU }))).toEqual(names([fabric]));
    expect(names(view.slicesOfPool(GPU, 'fabric'))).toEqual(names([fabric]));
    expect(view.keys()).toHaveLength(3);
    expect(view.nodeUid('node-a')).toBe(uidA);
    expect(view.nodeUid('node-b')).toBeUndefined();
    expect(foreign).toEqual([]);
    expect(nodeChanges).toEqual([]);
    await waitFor(() => running.emulator.watchCount() === 2, { description: 'two watches' });
    // The client counts a watch once its response headers are in, which can be after the
    // server registered it.
    await waitFor(() => requests.filter(([verb]) => verb === 'watch').length === 2, {
      description: 'two watches answered',
    });
    // Managed slices page by page, Nodes in one page, and a watch of each.
    const sliceLists = requests.filter(
      ([verb, resource]) => verb === 'list' && resource === 'resourceslices',
    );
    expect(sliceLists.length).toBeGreaterThan(1);
    expect(requests.filter((request) => !sliceLists.includes(request)).sort()).toEqual([
      ['list', 'nodes', 200],
      ['watch', 'nodes', 200],
      ['watch', 'resourceslices', 200],
    ]);
    expect(sliceLists.every(([, , code]) => code === 200)).toBe(true);
  });

  it("reports someone else's create, update and delete with the slice's key", async () => {
    const view = cache();
    await view.start();
    const created = await createForeign('node-b', NET);
    const key = { node: 'node-b', driver: NET };
    await waitFor(() => foreign.length === 1, { description: 'the create' });
    expect(names(view.slicesOf(key))).toEqual([created.metadata.name]);

    const path = `${SLICES}/${created.metadata.name}`;
    await raw('PUT', path, { ...created, spec: { ...created.spec, devices: [] } });
    await waitFor(() => foreign.length === 2, { description: 'the update' });
    await raw('DELETE', path);
    await waitFor(() => foreign.length === 3, { description: 'the delete' });

    expect(foreign).toEqual([
      { key, type: 'ADDED', name: created.metadata.name },
      { key, type: 'MODIFIED', name: created.metadata.name },
      { key, type: 'DELETED', name: created.metadata.name },
    ]);
    expect(view.slicesOf(key)).toEqual([]);
    expect(view.keys()).toEqual([]);
  });

  it('does not report our own creates, updates and deletes, and shows them at once', async () => {
    const view = cache();
    await view.start();
    const key = { node: 'node-a', driver: GPU };

    const created = await client.createSlice(slice('node-a'));
    view.recordWrite(created);
    expect(view.slicesOf(key)).toEqual([created]);
    const updated = await client.updateSlice({
      ...created,
      spec: { ...created.spec, pool: { ...created.spec.pool, generation: 2 } },
    });
    view.recordWrite(updated);
    expect(view.slicesOf(key)).toEqual([updated]);
    await client.deleteSlice(updated.metadata);
    view.recordDelete(updated.metadata);
    expect(view.slicesOf(key)).toEqual([]);

    // Events arrive in order: once someone else's later create is reported, our echoes are in.
    const marker = await createForeign('node-z');
    await waitFor(() => foreign.length > 0, { description: 'the marker' });
    expect(foreign).toEqual([
      { key: { node: 'node-z', driver: GPU }, type: 'ADDED', name: marker.metadata.name },
    ]);
    expect(view.slicesOf(key)).toEqual([]);
  });

  it('resumes a watch the server ended from the last resourceVersion, with no relist and no event lost', async () => {
    const clock = new ManualClock();
    const view = cache({ clock, requestTimeoutMs: 3_600_000 });
    await view.start();
    await waitFor(() => running.emulator.watchCount() === 2, { description: 'two watches' });

    expect(running.emulator.cutWatches()).toBe(2);
    await waitForResumeScheduled(clock);
    // While no watch is open: someone creates a slice and a Node, and we create one.
    const theirs = await createForeign('node-b');
    const uidB = await createNode('node-b');
    const ours = await client.createSlice(slice('node-a'));
    view.recordWrite(ours);
    expect(view.slicesOf({ node: 'node-a', driver: GPU })).toEqual([ours]);

    await clock.advance(200);
    await waitFor(() => foreign.length === 1 && nodeChanges.length === 1, {
      description: 'the missed events',
    });
    expect(foreign).toEqual([
      { key: { node: 'node-b', driver: GPU }, type: 'ADDED', name: theirs.metadata.name },
    ]);
    expect(nodeChanges).toEqual([{ type: 'ADDED', name: 'node-b', uid: uidB }]);
    expect(view.nodeUid('node-b')).toBe(uidB);
    // Once the watch delivered our create, there is still one copy.
    await waitFor(() => running.emulator.watchCount() === 2, { description: 'resumed watches' });
    const marker = await createForeign('node-z');
    await waitFor(() => foreign.some((c) => c.name === marker.metadata.name), {
      description: 'the marker',
    });
    expect(names(view.slicesOf({ node: 'node-a', driver: GPU }))).toEqual([ours.metadata.name]);
    expect(listCount('resourceslices')).toBe(1);
    expect(listCount('nodes')).toBe(1);
    expect(running.emulator.count({ verb: 'watch', resource: 'resourceslices' })).toBe(2);
  });

  it('lists again when the resume gets 410 Expired, and loses no event', async () => {
    const clock = new ManualClock();
    const before = await createForeign('node-a');
    const view = cache({ clock, requestTimeoutMs: 3_600_000 });
    await view.start();
    await waitFor(() => running.emulator.watchCount() === 2, { description: 'two watches' });

    running.emulator.cutWatches();
    await waitForResumeScheduled(clock);
    const theirs = await createForeign('node-b');
    await raw('DELETE', `${SLICES}/${before.metadata.name}`);
    const uidC = await createNode('node-c');
    running.emulator.forgetHistory();

    // The resumes get 410 and back off, then list again.
    await waitFor(
      async () => {
        await clock.advance(200);
        return (
          listCount('resourceslices') === 2 && listCount('nodes') === 2 && foreign.length === 2
        );
      },
      { description: 'the relists' },
    );
    expect(foreign.sort((x, y) => x.type.localeCompare(y.type))).toEqual([
      { key: { node: 'node-b', driver: GPU }, type: 'ADDED', name: theirs.metadata.name },
      { key: { node: 'node-a', driver: GPU }, type: 'DELETED', name: before.metadata.name },
    ]);
    expect(nodeChanges).toEqual([{ type: 'ADDED', name: 'node-c', uid: uidC }]);
    expect(names(view.slicesOf({ node: 'node-b', driver: GPU }))).toEqual([theirs.metadata.name]);
    expect(view.slicesOf({ node: 'node-a', driver: GPU })).toEqual([]);
    expect(
      running.emulator.count({ verb: 'watch', resource: 'resourceslices' }),
    ).toBeGreaterThanOrEqual(3);
  });

  it('reports a Node added, deleted and re-created under a new UID, not one merely modified', async () => {
    const view = cache();
    await view.start();
    const first = await createNode('node-a');
    await waitFor(() => view.nodeUid('node-a') === first, { description: 'the new Node' });
    // A label change: a MODIFIED event under the same UID, which changes nothing we publish.
    const node = (await raw('GET', `${NODES}/node-a`)) as { metadata: Record<string, unknown> };
    await raw('PUT', `${NODES}/node-a`, {
      ...node,
      metadata: { ...node.metadata, labels: { zone: 'b' } },
    });
    await raw('DELETE', `${NODES}/node-a`);
    await waitFor(() => view.nodeUid('node-a') === undefined, { description: 'the deletion' });
    const second = await createNode('node-a');
    await waitFor(() => view.nodeUid('node-a') === second, { description: 'the new UID' });

    expect(second).not.toBe(first);
    expect(nodeChanges).toEqual([
      { type: 'ADDED', name: 'node-a', uid: first },
      { type: 'DELETED', name: 'node-a', uid: first },
      { type: 'ADDED', name: 'node-a', uid: second },
    ]);
  });

  it('relists on demand (anti-entropy): nothing to report when the watch missed nothing', async () => {
    const view = cache();
    await createForeign('node-a');
    await view.start();
    await createForeign('node-b');
    await waitFor(() => foreign.length === 1, { description: 'the create' });

    await expect(view.relist()).resolves.toEqual({ added: 0, changed: 0, removed: 0 });
    expect(foreign).toHaveLength(1);
    expect(listCount('resourceslices')).toBe(2);
    expect(listCount('nodes')).toBe(2);
    expect(view.keys()).toHaveLength(2);
  });

  it('relists on demand (anti-entropy) and reports what the watch had missed, once', async () => {
    const clock = new ManualClock();
    const view = cache({ clock, requestTimeoutMs: 3_600_000 });
    await view.start();
    await waitFor(() => running.emulator.watchCount() === 2, { description: 'two watches' });
    running.emulator.cutWatches();
    await waitForResumeScheduled(clock);
    const missed = await createForeign('node-b');

    // The relist does not wait for the backoff; the watches resume from its version after it.
    await expect(view.relist()).resolves.toEqual({ added: 1, changed: 0, removed: 0 });
    expect(foreign).toEqual([
      { key: { node: 'node-b', driver: GPU }, type: 'ADDED', name: missed.metadata.name },
    ]);
    await waitFor(() => running.emulator.watchCount() === 2, { description: 'resumed watches' });
    const marker = await createForeign('node-z');
    await waitFor(() => foreign.length === 2, { description: 'the marker' });
    expect(foreign[1]?.name).toBe(marker.metadata.name);
  });

  it('uses a shared transport without closing it; close() ends the watches, idempotently', async () => {
    const transport = new KubeTransport({ kind: 'yaml', text: running.kubeconfig });
    try {
      const view = cache({ transport });
      await view.start();
      await waitFor(() => running.emulator.watchCount() === 2, { description: 'two watches' });
      const closing = view.close();
      expect(view.close()).toBe(closing);
      await closing;
      await waitFor(() => running.emulator.watchCount() === 0, { description: 'watches closed' });
      const version = await transport.request({
        method: 'GET',
        path: '/version',
        signal: new AbortController().signal,
      });
      expect(version.status).toBe(200);
      expect(warnings).toEqual([]);
    } finally {
      transport.close();
    }
  });
});
