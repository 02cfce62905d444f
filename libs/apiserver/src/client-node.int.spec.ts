import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  ResourceV1Api,
  makeInformer,
} from '@kubernetes/client-node';
import type {
  Informer,
  KubernetesObject,
  ObjectCache,
  V1ResourceSlice,
} from '@kubernetes/client-node';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';

/** @kubernetes/client-node 1.4 against the emulator, as slicekeeper's kube adapter uses it. */

function slice(name: string, node: string, driver: string, generation = 1): V1ResourceSlice {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' } },
    spec: {
      driver,
      nodeName: node,
      pool: { name: node, generation, resourceSliceCount: 1 },
      devices: [
        {
          name: 'gpu-0',
          attributes: { model: { string: 'a100' } },
          capacity: { memory: { value: '40Gi' } },
        },
      ],
    },
  };
}

let running: RunningKubeEmulator;
let core: CoreV1Api;
let resource: ResourceV1Api;
let kubeconfig: KubeConfig;

beforeEach(async () => {
  running = await startKubeEmulator({ port: 0 });
  kubeconfig = new KubeConfig();
  kubeconfig.loadFromString(running.kubeconfig);
  core = kubeconfig.makeApiClient(CoreV1Api);
  resource = kubeconfig.makeApiClient(ResourceV1Api);
});

afterEach(async () => {
  await running.close();
});

/** Resolves with the first object an informer reports for `verb` that satisfies `accept`. */
function next<T extends KubernetesObject>(
  informer: Informer<T>,
  verb: 'add' | 'update' | 'delete',
  accept: (obj: T) => boolean,
): Promise<T> {
  return new Promise((resolve) => {
    const handler = (obj: T) => {
      if (!accept(obj)) return;
      informer.off(verb, handler);
      resolve(obj);
    };
    informer.on(verb, handler);
  });
}

describe('@kubernetes/client-node against the emulator', () => {
  it('creates slices, lists them by node and driver, replaces and deletes one', async () => {
    await resource.createResourceSlice({ body: slice('a-gpu', 'node-a', 'gpu.example.com') });
    await resource.createResourceSlice({ body: slice('a-net', 'node-a', 'net.example.com') });
    await resource.createResourceSlice({ body: slice('b-gpu', 'node-b', 'gpu.example.com') });

    const listed = await resource.listResourceSlice({
      fieldSelector: 'spec.nodeName=node-a,spec.driver=gpu.example.com',
    });
    expect(listed.items.map((s) => s.metadata?.name)).toEqual(['a-gpu']);
    const current = listed.items[0];
    if (current === undefined) throw new Error('no slice listed');

    current.spec.pool.generation = 2;
    const replaced = await resource.replaceResourceSlice({ name: 'a-gpu', body: current });
    expect(replaced.metadata?.generation).toBe(2);
    expect(replaced.spec.pool.generation).toBe(2);

    const deleted = await resource.deleteResourceSlice({ name: 'a-gpu' });
    expect(deleted.metadata?.name).toBe('a-gpu');
    const left = await resource.listResourceSlice({ fieldSelector: 'spec.nodeName=node-a' });
    expect(left.items.map((s) => s.metadata?.name)).toEqual(['a-net']);
  });

  it('answers a replace with a stale resourceVersion with 409 Conflict', async () => {
    const created = await resource.createResourceSlice({
      body: slice('stale', 'node-a', 'gpu.example.com'),
    });
    const metadata = created.metadata ?? {};
    metadata.labels = { round: '1' };
    await resource.replaceResourceSlice({ name: 'stale', body: created });

    // `created` still carries the resourceVersion from before the first replace.
    metadata.labels = { round: '2' };
    const stale = resource.replaceResourceSlice({ name: 'stale', body: created });
    await expect(stale).rejects.toBeInstanceOf(ApiException);
    const error = (await stale.catch((e: unknown) => e)) as ApiException<string>;
    expect(error.code).toBe(409);
    expect(JSON.parse(error.body) as unknown).toMatchObject({ reason: 'Conflict', code: 409 });
  });

  it('feeds an informer: adds, updates and deletes, including slices collected with their Node', async () => {
    const informer: Informer<V1ResourceSlice> & ObjectCache<V1ResourceSlice> = makeInformer(
      kubeconfig,
      '/apis/resource.k8s.io/v1/resourceslices',
      () => resource.listResourceSlice(),
    );
    await informer.start();
    try {
      const node = await core.createNode({
        body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } },
      });
      const owned = slice('owned', 'node-a', 'gpu.example.com');
      owned.metadata = {
        name: 'owned',
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'Node',
            name: 'node-a',
            uid: node.metadata?.uid ?? '',
            controller: true,
          },
        ],
      };

      const added = next(informer, 'add', (s) => s.metadata?.name === 'owned');
      await resource.createResourceSlice({ body: owned });
      expect((await added).spec.driver).toBe('gpu.example.com');

      const updated = next(informer, 'update', (s) => s.metadata?.name === 'owned');
      const live = await resource.readResourceSlice({ name: 'owned' });
      live.spec.pool.generation = 2;
      await resource.replaceResourceSlice({ name: 'owned', body: live });
      expect((await updated).spec.pool.generation).toBe(2);
      expect(informer.get('owned')?.spec.pool.generation).toBe(2);

      // Deleting the Node lets the garbage collector delete the slice it owns.
      const collected = next(informer, 'delete', (s) => s.metadata?.name === 'owned');
      await core.deleteNode({ name: 'node-a' });
      await collected;
      expect(informer.list()).toEqual([]);
    } finally {
      await informer.stop();
    }
  });
});
