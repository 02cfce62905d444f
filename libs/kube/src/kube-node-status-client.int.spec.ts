import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { requestJson, waitFor } from '@slicekeeper/testing';
import { ClusterCache } from './cluster-cache';
import type { ClusterCacheOptions } from './cluster-cache';
import { KubeNodeStatusClient } from './kube-node-status-client';
import { KubeTransport } from './kube-transport';
import type { NodeConditionWrite } from './node-condition-json';

const NODES = '/api/v1/nodes';

interface NodeConditionJson {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

let running: RunningKubeEmulator;
let transport: KubeTransport;
let client: KubeNodeStatusClient;
let requests: [string, string, number | 'error'][];
let caches: ClusterCache[];

function published(
  status: 'True' | 'False',
  reason: string,
  at: string,
  transition = true,
): NodeConditionWrite {
  return {
    type: 'DRAResourcesPublished',
    status,
    reason,
    message: `${reason} at ${at}`,
    lastHeartbeatTime: at,
    ...(transition ? { lastTransitionTime: at } : {}),
  };
}

async function createNode(name: string): Promise<void> {
  await requestJson(running.url, 'POST', NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
  });
}

/** The kubelet (someone else) writes a condition of its own. */
async function patchStatusAsSomeoneElse(name: string, condition: NodeConditionJson): Promise<void> {
  const response = await fetch(`${running.url}${NODES}/${name}/status`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/strategic-merge-patch+json' },
    body: JSON.stringify({ status: { conditions: [condition] } }),
  });
  if (!response.ok) throw new Error(`patch status: ${response.status} ${await response.text()}`);
}

async function conditionsOf(name: string): Promise<NodeConditionJson[]> {
  const node = (await requestJson(running.url, 'GET', `${NODES}/${name}`)) as {
    status?: { conditions?: NodeConditionJson[] };
  };
  return node.status?.conditions ?? [];
}

/** The Node's conditions by type: the order of a merged list is the server's business. */
async function conditionsByType(name: string): Promise<NodeConditionJson[]> {
  return (await conditionsOf(name)).sort((a, b) => a.type.localeCompare(b.type));
}

function cache(options: Partial<ClusterCacheOptions> = {}): ClusterCache {
  const created = new ClusterCache({
    transport,
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined },
    backoff: { initialMs: 20, maxMs: 200 },
    ...options,
  });
  caches.push(created);
  return created;
}

beforeEach(async () => {
  running = await startKubeEmulator({ port: 0 });
  transport = new KubeTransport({ kind: 'yaml', text: running.kubeconfig });
  requests = [];
  caches = [];
  client = new KubeNodeStatusClient({
    transport,
    onRequest: (verb, resource, code) => requests.push([verb, resource, code]),
  });
});

afterEach(async () => {
  await Promise.all(caches.map((c) => c.close()));
  transport.close();
  await running.close();
});

describe('KubeNodeStatusClient against the kube emulator', () => {
  it("sets its condition beside the kubelet's, keeping the transition time when told to", async () => {
    await createNode('node-a');
    const ready = {
      type: 'Ready',
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
      lastHeartbeatTime: '2026-11-21T12:00:00Z',
      lastTransitionTime: '2026-11-21T12:00:00Z',
    };
    await patchStatusAsSomeoneElse('node-a', ready);

    const first = await client.patchCondition(
      'node-a',
      published('False', 'Publishing', '2026-11-21T12:00:01Z'),
    );
    expect(first?.condition).toEqual({ kind: 'set', status: 'False', reason: 'Publishing' });
    const second = await client.patchCondition(
      'node-a',
      published('False', 'Invalid', '2026-11-21T12:00:02Z', false),
    );
    expect(second?.condition).toEqual({ kind: 'set', status: 'False', reason: 'Invalid' });
    expect(Number(second?.resourceVersion)).toBeGreaterThan(Number(first?.resourceVersion));

    expect(await conditionsByType('node-a')).toEqual([
      {
        type: 'DRAResourcesPublished',
        status: 'False',
        reason: 'Invalid',
        message: 'Invalid at 2026-11-21T12:00:02Z',
        lastHeartbeatTime: '2026-11-21T12:00:02Z',
        // The status stayed False: the transition is still the first write's.
        lastTransitionTime: '2026-11-21T12:00:01Z',
      },
      ready,
    ]);
    expect(requests).toEqual([
      ['patch', 'nodes/status', 200],
      ['patch', 'nodes/status', 200],
    ]);
  });

  it('answers undefined for a Node that does not exist', async () => {
    expect(
      await client.patchCondition('gone', published('True', 'Published', '2026-11-21T12:00:00Z')),
    ).toBeUndefined();
    expect(requests).toEqual([['patch', 'nodes/status', 404]]);
  });

  it('throws classified errors with context', async () => {
    await createNode('node-a');
    running.emulator.injectFault({ verb: 'patch', resource: 'nodes/status', status: 503 });
    running.emulator.injectFault({ verb: 'patch', resource: 'nodes/status', status: 403 });
    const write = published('True', 'Published', '2026-11-21T12:00:00Z');
    await expect(client.patchCondition('node-a', write)).rejects.toMatchObject({
      code: 'server-error',
      message: expect.stringMatching(/^patch status of Node "node-a": server-error: /) as unknown,
    });
    await expect(client.patchCondition('node-a', write)).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringMatching(/^patch status of Node "node-a": forbidden: /) as unknown,
    });
  });
});

describe("ClusterCache's view of the DRAResourcesPublished condition", () => {
  it("lists and watches it, and reports a change by someone else, not the kubelet's heartbeats", async () => {
    await createNode('node-a');
    await client.patchCondition('node-a', published('True', 'Published', '2026-11-21T12:00:00Z'));
    const changed: string[] = [];
    const view = cache({ onNodeCondition: (name) => changed.push(name) });
    await view.start();
    expect(view.publishedCondition('node-a')).toEqual({
      kind: 'set',
      status: 'True',
      reason: 'Published',
    });

    // Other conditions, and our condition's heartbeat alone, change nothing we look at.
    await patchStatusAsSomeoneElse('node-a', {
      type: 'Ready',
      status: 'True',
      reason: 'KubeletReady',
    });
    await client.patchCondition(
      'node-a',
      published('True', 'Published', '2026-11-21T12:00:05Z', false),
    );
    // Another replica's write (this cache did not record it).
    await client.patchCondition('node-a', published('False', 'Invalid', '2026-11-21T12:00:06Z'));
    await waitFor(() => view.publishedCondition('node-a')?.kind === 'set' && changed.length > 0, {
      description: 'the condition change',
    });
    expect(view.publishedCondition('node-a')).toEqual({
      kind: 'set',
      status: 'False',
      reason: 'Invalid',
    });
    expect(changed).toEqual(['node-a']);
  });

  it('shows our own recorded write at once; a watch event older than it changes nothing', async () => {
    await createNode('node-a');
    const changed: string[] = [];
    const view = cache({ onNodeCondition: (name) => changed.push(name) });
    await view.start();
    expect(view.publishedCondition('node-a')).toBeUndefined();

    // A write of ours at a resourceVersion the watch has not delivered yet.
    view.recordNodeCondition('node-a', '999999', {
      kind: 'set',
      status: 'True',
      reason: 'Published',
    });
    expect(view.publishedCondition('node-a')).toEqual({
      kind: 'set',
      status: 'True',
      reason: 'Published',
    });
    await patchStatusAsSomeoneElse('node-a', {
      type: 'DRAResourcesPublished',
      status: 'False',
      reason: 'Publishing',
    });
    // Events arrive in order: once node-b shows, node-a's event was handled.
    await createNode('node-b');
    await waitFor(() => view.nodeUid('node-b') !== undefined, { description: 'node-b' });
    expect(view.publishedCondition('node-a')).toEqual({
      kind: 'set',
      status: 'True',
      reason: 'Published',
    });
    expect(changed).toEqual([]);

    // A write recorded for a Node the cache does not know is ignored.
    view.recordNodeCondition('node-z', '1', { kind: 'set', status: 'True', reason: 'Published' });
    expect(view.nodeUid('node-z')).toBeUndefined();
    expect(view.publishedCondition('node-z')).toBeUndefined();
  });

  it('names the field of a condition it cannot read, and keeps the Node', async () => {
    await createNode('node-a');
    await patchStatusAsSomeoneElse('node-a', {
      type: 'Ready',
      status: 'True',
      reason: 'KubeletReady',
    });
    await patchStatusAsSomeoneElse('node-a', {
      type: 'DRAResourcesPublished',
      status: 'Maybe',
      reason: 'Guessing',
    });
    const index = (await conditionsOf('node-a')).findIndex(
      (c) => c.type === 'DRAResourcesPublished',
    );
    const view = cache();
    await view.start();
    expect(view.nodeUid('node-a')).toEqual(expect.any(String));
    expect(view.publishedCondition('node-a')).toEqual({
      kind: 'malformed',
      problem: `status.conditions[${index}].status: must be True, False or Unknown, not "Maybe"`,
    });
  });
});
