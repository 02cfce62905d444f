import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { TerminalError, TransientError } from '@slicekeeper/errors';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import { requestJson, waitFor } from '@slicekeeper/testing';
import { ClusterCache } from './cluster-cache';
import { KubeSliceClient } from './kube-slice-client';
import type { KubeSliceClientOptions } from './kube-slice-client';
import { KubeTransport } from './kube-transport';

const GPU = 'gpu.example.com';
const NET = 'net.example.com';

/** A managed slice of `driver` on `node` ('' = all nodes), as the planner would build it. */
function slice(node: string, driver = GPU, index = 0): ResourceSlice {
  const prefix = `${index.toString(16).padStart(5, '0')}-${driver}-${node}-`;
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { generateName: prefix, labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' } },
    spec: {
      driver,
      pool: { name: node === '' ? 'fabric' : node, generation: 1, resourceSliceCount: 1 },
      ...(node === '' ? { allNodes: true } : { nodeName: node }),
      devices: [
        {
          name: `dev-${index}`,
          attributes: {
            index: { int: index },
            model: { string: 'H100' },
            driverVersion: { version: '1.2.3' },
          },
          capacity: { memory: { value: '80Gi' } },
        },
      ],
    },
  };
}

let running: RunningKubeEmulator;
let requests: [string, string, number | 'error'][];
const clients: KubeSliceClient[] = [];

function client(options: Partial<KubeSliceClientOptions> = {}): KubeSliceClient {
  const created = new KubeSliceClient({
    kubeconfig: { kind: 'yaml', text: running.kubeconfig },
    onRequest: (verb, resource, code) => requests.push([verb, resource, code]),
    ...options,
  });
  clients.push(created);
  return created;
}

/** Talks to the emulator directly, for setup a slicekeeper client would never do. */
function raw(method: string, path: string, body?: unknown): Promise<unknown> {
  return requestJson(running.url, method, path, body);
}

function names(slices: readonly StoredResourceSlice[]): string[] {
  return slices.map((s) => s.metadata.name).sort();
}

/** What a promise rejected with (fails the test if it resolved). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as Error,
  );
}

beforeEach(async () => {
  running = await startKubeEmulator({ port: 0 });
  requests = [];
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await running.close();
});

describe('KubeSliceClient against the kube emulator', () => {
  it("lists a key's managed slices only: its node, its driver, our label", async () => {
    const api = client();
    const a1 = await api.createSlice(slice('node-a', GPU, 0));
    const a2 = await api.createSlice(slice('node-a', GPU, 1));
    await api.createSlice(slice('node-a', NET, 0));
    await api.createSlice(slice('node-b', GPU, 0));
    const fabric = await api.createSlice(slice('', GPU, 0));
    const foreign = slice('node-a', GPU, 2);
    foreign.metadata = { name: 'drivers-own-slice' };
    await raw('POST', '/apis/resource.k8s.io/v1/resourceslices', foreign);

    expect(names(await api.listSlices({ node: 'node-a', driver: GPU }))).toEqual(names([a1, a2]));
    expect(names(await api.listSlices({ node: '', driver: GPU }))).toEqual([fabric.metadata.name]);
    expect(await api.listSlices({ node: 'node-c', driver: GPU })).toEqual([]);
    expect(requests.filter(([verb]) => verb === 'list')).toEqual([
      ['list', 'resourceslices', 200],
      ['list', 'resourceslices', 200],
      ['list', 'resourceslices', 200],
    ]);
  });

  it("follows continue tokens through a key's list, page by page", async () => {
    const api = client({ listPageSize: 2 });
    const created: StoredResourceSlice[] = [];
    for (let i = 0; i < 5; i++) created.push(await api.createSlice(slice('node-a', GPU, i)));
    await api.createSlice(slice('node-b', NET, 0));
    await raw('POST', '/apis/resource.k8s.io/v1/resourceslices', {
      ...slice('node-a'),
      metadata: { name: 'unmanaged' },
    });

    running.emulator.reset({ keepObjects: true });
    expect(names(await api.listSlices({ node: 'node-a', driver: GPU }))).toEqual(names(created));
    expect(running.emulator.count({ verb: 'list', resource: 'resourceslices' })).toBe(3);
  });

  it('creates, updates with the resourceVersion as precondition, and refuses a stale update', async () => {
    const api = client();
    const created = await api.createSlice(slice('node-a'));
    expect(created.metadata.name).toMatch(/^00000-gpu\.example\.com-node-a-[a-z0-9]{5}$/);
    expect(created.metadata.uid).not.toBe('');

    const bumped = structuredClone(created);
    bumped.spec.pool.generation = 2;
    const updated = await api.updateSlice(bumped);
    expect(updated.spec.pool.generation).toBe(2);
    expect(updated.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);

    const stale = structuredClone(created);
    stale.spec.pool.generation = 3;
    const error = await rejection(api.updateSlice(stale));
    expect(error).toBeInstanceOf(TransientError);
    expect(error).toMatchObject({ code: 'conflict' });
    expect(error.message).toMatch(
      new RegExp(
        `^update ResourceSlice "${created.metadata.name}": conflict: .*the object has been modified`,
      ),
    );
    expect((await api.listSlices({ node: 'node-a', driver: GPU }))[0]?.spec.pool.generation).toBe(
      2,
    );
  });

  it('deletes with uid and resourceVersion preconditions; a missing slice is already deleted', async () => {
    const api = client();
    const created = await api.createSlice(slice('node-a'));
    const { name, uid, resourceVersion } = created.metadata;

    const wrongUid = await rejection(
      api.deleteSlice({ name, uid: 'another-uid', resourceVersion }),
    );
    expect(wrongUid).toBeInstanceOf(TransientError);
    expect(wrongUid).toMatchObject({ code: 'conflict' });
    expect(wrongUid.message).toMatch(new RegExp(`^delete ResourceSlice "${name}": conflict: `));
    const changed = await api.updateSlice({
      ...created,
      metadata: { ...created.metadata, annotations: { a: 'b' } },
    });
    const staleVersion = await rejection(api.deleteSlice({ name, uid, resourceVersion }));
    expect(staleVersion).toMatchObject({ code: 'conflict' });
    expect(await api.listSlices({ node: 'node-a', driver: GPU })).toHaveLength(1);

    await api.deleteSlice({ name, uid, resourceVersion: changed.metadata.resourceVersion });
    expect(await api.listSlices({ node: 'node-a', driver: GPU })).toEqual([]);
    await expect(api.deleteSlice({ name, uid, resourceVersion })).resolves.toBeUndefined();
    expect(requests.filter(([verb]) => verb === 'delete').map(([, , code]) => code)).toEqual([
      409, 409, 200, 404,
    ]);
  });

  it('round-trips the JSON shape value for value: timestamps, quantities, typed attributes', async () => {
    // Device taints are alpha in 1.34: the API server drops them unless the gate is on.
    await running.close();
    running = await startKubeEmulator({ port: 0, featureGates: { DRADeviceTaints: true } });
    const api = client();
    const sent = slice('node-a');
    sent.spec.devices = [
      {
        name: 'gpu-0',
        attributes: {
          index: { int: 0 },
          uuid: { string: 'GPU-0000' },
          driverVersion: { version: '550.54.15' },
          migCapable: { bool: true },
        },
        capacity: {
          memory: { value: '80Gi' },
          multiprocessors: { value: '132' },
          power: { value: '700' },
        },
        taints: [
          {
            key: 'example.com/unhealthy',
            value: 'ecc',
            effect: 'NoSchedule',
            timeAdded: '2025-03-04T05:06:07Z',
          },
        ],
      },
    ];
    const created = await api.createSlice(sent);
    const [listed] = await api.listSlices({ node: 'node-a', driver: GPU });
    if (listed === undefined) throw new Error('nothing listed');
    const stored = (await raw(
      'GET',
      `/apis/resource.k8s.io/v1/resourceslices/${listed.metadata.name}`,
    )) as StoredResourceSlice & {
      metadata: { creationTimestamp: string };
    };

    // Equal values (key order aside, which JSON does not define), and the strings byte for byte.
    expect(created.spec.devices).toEqual(sent.spec.devices);
    expect(listed).toEqual(created);
    expect(listed).toEqual(stored);
    const strings = (s: StoredResourceSlice) => {
      const device = s.spec.devices?.[0];
      return [
        device?.taints?.[0]?.timeAdded,
        device?.capacity?.memory?.value,
        device?.capacity?.power?.value,
      ];
    };
    expect(strings(listed)).toEqual(['2025-03-04T05:06:07Z', '80Gi', '700']);
    expect(strings(stored)).toEqual(strings(listed));
    expect((listed.metadata as { creationTimestamp?: unknown }).creationTimestamp).toBe(
      stored.metadata.creationTimestamp,
    );

    const plannedUpdate = structuredClone(listed);
    plannedUpdate.spec.pool.generation = 2;
    const updated = await api.updateSlice(plannedUpdate);
    const storedAfter = (await raw(
      'GET',
      `/apis/resource.k8s.io/v1/resourceslices/${listed.metadata.name}`,
    )) as StoredResourceSlice;
    expect(updated.spec).toEqual(plannedUpdate.spec);
    expect(storedAfter.spec).toEqual(plannedUpdate.spec);
    expect(strings(storedAfter)).toEqual(['2025-03-04T05:06:07Z', '80Gi', '700']);
    expect(storedAfter.spec.devices?.[0]?.attributes?.index).toEqual({ int: 0 });
  });

  it('classifies what the API server answers: throttling, server errors, invalid slices', async () => {
    const api = client();
    running.emulator.injectFault({
      verb: 'create',
      resource: 'resourceslices',
      status: 429,
      retryAfterSeconds: 3,
    });
    const throttled = await rejection(api.createSlice(slice('node-a')));
    expect(throttled).toBeInstanceOf(TransientError);
    expect(throttled).toMatchObject({ code: 'throttled', retryAfterMs: 3000 });
    expect(throttled.message).toMatch(
      /^create ResourceSlice "00000-gpu\.example\.com-node-a-": throttled: /,
    );

    running.emulator.injectFault({ verb: 'list', resource: 'resourceslices', status: 500 });
    const failed = await rejection(api.listSlices({ node: 'node-a', driver: GPU }));
    expect(failed).toBeInstanceOf(TransientError);
    expect(failed).toMatchObject({ code: 'server-error' });
    expect(failed.message).toMatch(
      /^list ResourceSlices of "node-a\/gpu\.example\.com": server-error: /,
    );

    const stored = await api.createSlice(slice('node-a'));
    running.emulator.injectFault({
      verb: 'delete',
      resource: 'resourceslices',
      status: 503,
      retryAfterSeconds: 1,
    });
    const unavailable = await rejection(api.deleteSlice(stored.metadata));
    expect(unavailable).toBeInstanceOf(TransientError);
    expect(unavailable).toMatchObject({ code: 'server-error', retryAfterMs: 1000 });
    expect(unavailable.message).toMatch(
      new RegExp(`^delete ResourceSlice "${stored.metadata.name}": server-error: `),
    );

    const invalid = slice('node-a');
    invalid.spec.devices = [{ name: 'GPU_0' }];
    const rejected = await rejection(api.createSlice(invalid));
    expect(rejected).toBeInstanceOf(TerminalError);
    expect(rejected).toMatchObject({ code: 'invalid' });
    expect(rejected.message).toContain('spec.devices[0].name');

    expect(requests).toEqual([
      ['create', 'resourceslices', 429],
      ['list', 'resourceslices', 500],
      ['create', 'resourceslices', 201],
      ['delete', 'resourceslices', 503],
      ['create', 'resourceslices', 422],
    ]);
  });

  it('turns a slow answer into a timeout and a closed port into a connection error', async () => {
    const api = client({ requestTimeoutMs: 200 });
    running.emulator.addLatency({ verb: 'list', resource: 'resourceslices', ms: 1_000, times: 1 });
    const slow = await rejection(api.listSlices({ node: 'node-a', driver: GPU }));
    expect(slow).toBeInstanceOf(TransientError);
    expect(slow).toMatchObject({ code: 'timeout' });
    expect(slow.message).toBe(
      'list ResourceSlices of "node-a/gpu.example.com": timeout: no complete response within 200 ms',
    );
    expect(await api.listSlices({ node: 'node-a', driver: GPU })).toEqual([]);

    const { kubeconfig } = running;
    await running.close();
    const offline = await rejection(
      client({ kubeconfig: { kind: 'yaml', text: kubeconfig } }).ping(),
    );
    expect(offline).toBeInstanceOf(TransientError);
    expect(offline).toMatchObject({ code: 'connection' });
    expect(offline.message).toMatch(/^get API server version: connection: .*ECONNREFUSED/);
    expect(requests.slice(-1)).toEqual([['get', 'version', 'error']]);
  });

  it('loads a kubeconfig file and pings the API server', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'slicekeeper-kube-'));
    try {
      const withFile = await startKubeEmulator({
        port: 0,
        kubeconfigPath: join(dir, 'kubeconfig'),
      });
      try {
        const api = client({ kubeconfig: { kind: 'file', path: join(dir, 'kubeconfig') } });
        await expect(api.ping()).resolves.toBeUndefined();
        expect(withFile.emulator.count({ resource: '/version' })).toBe(1);
      } finally {
        await withFile.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('leaves a transport it was given open: the ClusterCache and other clients on it go on', async () => {
    const transport = new KubeTransport({ kind: 'yaml', text: running.kubeconfig });
    const watches: number[] = [];
    const foreign: string[] = [];
    const warnings: string[] = [];
    const cache = new ClusterCache({
      transport,
      logger: {
        debug: () => undefined,
        info: () => undefined,
        warn: (...args: unknown[]) => warnings.push(String(args[1])),
      },
      onRequest: (verb, _resource, code) => {
        if (verb === 'watch') watches.push(code === 'error' ? 0 : code);
      },
      onForeignChange: (_key, change) => foreign.push(change.name),
    });
    try {
      const first = new KubeSliceClient({ transport });
      const created = await first.createSlice(slice('node-a'));
      await cache.start();
      await waitFor(() => watches.length === 2, { description: 'both watches to open' });

      await first.close();
      // Were the pool closed, the open watches would break and be opened again.
      const second = new KubeSliceClient({ transport });
      await expect(second.ping()).resolves.toBeUndefined();
      await second.close();
      await raw('DELETE', `/apis/resource.k8s.io/v1/resourceslices/${created.metadata.name}`);
      await waitFor(() => foreign.includes(created.metadata.name), {
        description: 'the watch to report the foreign delete',
      });
      expect(watches).toEqual([200, 200]);
      expect(warnings).toEqual([]);
      expect(running.emulator.watchCount()).toBe(2);
    } finally {
      await cache.close();
      transport.close();
    }
  });

  it("sends the kubeconfig's bearer token and reuses kept-alive connections", async () => {
    const seen: (string | undefined)[] = [];
    let connections = 0;
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"major":"1","minor":"34"}');
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const text = JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}` } }],
        users: [{ name: 'u', user: { token: 'secret-token' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      });
      const api = client({ kubeconfig: { kind: 'yaml', text } });
      for (let i = 0; i < 20; i++) await api.ping();
      expect(seen).toEqual(Array.from({ length: 20 }, () => 'Bearer secret-token'));
      expect(connections).toBe(1);
      await api.close();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('writes as field manager "slicekeeper"', async () => {
    const api = client();
    const created = await api.createSlice(slice('node-a'));
    const updated = await api.updateSlice({
      ...created,
      metadata: { ...created.metadata, annotations: { a: 'b' } },
    });
    const managers = (
      updated.metadata as { managedFields?: { manager: string }[] }
    ).managedFields?.map((f) => f.manager);
    expect(managers).toEqual(['slicekeeper']);
  });
});
