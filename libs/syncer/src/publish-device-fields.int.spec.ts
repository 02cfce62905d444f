import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import type { Device, SliceKey } from '@slicekeeper/contracts';
import {
  ClusterCache,
  KubeSliceClient,
  KubeTransport,
  resourceApiVersions,
  sliceFromWire,
} from '@slicekeeper/kube';
import type { ResourceApiVersion } from '@slicekeeper/kube';
import { RegistrationStore, SyncRecords } from '@slicekeeper/state';
import { redisKeys } from '@slicekeeper/state/testing';
import type { RedisKeys } from '@slicekeeper/state/testing';
import { devicesEqual, publishedDevices } from '@slicekeeper/slices';
import type { ResourceSlice } from '@slicekeeper/slices';
import { uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { Reconciler } from './reconciler';
import { silentLogger } from './testing/fakes';

const key: SliceKey = { node: '', driver: 'fabric.example.com' };
const context = { jobId: 'job-1', attempt: 1, reason: 'snapshot' } as const;

/**
 * The `fabric` profile of issue 26: a cluster-level pool whose devices choose their own nodes
 * (DRAPartitionableDevices), with binding conditions, consumable capacity, list attributes and
 * KEP-5517's 1.37 field passed through.
 */
function fabricDevices(nodeAllocatable: unknown): Device[] {
  return [
    {
      name: 'accel-0',
      nodeName: 'node-1',
      attributes: {
        model: { string: 'X1' },
        'resource.kubernetes.io/pcieRoots': { strings: ['a'] },
      },
      bindsToNode: true,
      bindingConditions: ['fabric.example.com/attached'],
      bindingFailureConditions: ['fabric.example.com/attach-failed'],
      passThrough: { nodeAllocatableResources: nodeAllocatable },
    },
    {
      name: 'link-0',
      allNodes: true,
      allowMultipleAllocations: true,
      attributes: { numaNodes: { ints: [0, 1] } },
      capacity: {
        bandwidth: {
          value: '100Gi',
          requestPolicy: { default: '1Gi', validRange: { min: '1Gi', max: '100Gi', step: '1Gi' } },
        },
        queues: { value: '16', requestPolicy: { default: '4', validValues: ['4', '8'] } },
      },
    },
    {
      name: 'accel-1',
      nodeSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'example.com/rack', operator: 'In', values: ['7'] }] },
        ],
      },
      taints: [{ key: 'fabric.example.com/maintenance', effect: 'NoSchedule' }],
    },
  ];
}

const WELL_FORMED = { cpu: { mapping: { deviceMultiplier: '8' } } };

function snapshot(generation: number, devices: Device[]): string {
  return JSON.stringify({
    generation,
    receivedAt: new Date().toISOString(),
    endpoint: 'unix:///run/driver.sock',
    inventory: { pools: [{ name: 'fabric', scope: { kind: 'per-device' }, devices }] },
  });
}

/**
 * A 1.37 server with every gate of these fields on: each field reaches the server as sent, in
 * every version slicekeeper speaks, and what the server refuses comes back with its path.
 */
describe('every device field of 2026, gates on: reconciler, Redis, kube emulator', () => {
  const db = useRedisServer();
  let kube: RunningKubeEmulator;
  let transport: KubeTransport;
  let cluster: ClusterCache;
  let keys: RedisKeys;
  let prefix: string;

  beforeAll(async () => {
    kube = await startKubeEmulator({
      port: 0,
      release: '1.37',
      featureGates: { DRAListTypeAttributes: true, DRANodeAllocatableResources: true },
    });
    transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    cluster = new ClusterCache({ transport, logger: silentLogger });
    await cluster.start();
  });
  afterAll(async () => {
    await cluster.close();
    transport.close();
    await kube.close();
  });
  beforeEach(async () => {
    prefix = uniquePrefix('device-fields');
    keys = redisKeys(prefix);
    const cleanup = new KubeSliceClient({ transport });
    for (const slice of cluster.slicesOf(key)) await cleanup.deleteSlice(slice.metadata);
    await cleanup.close();
    await waitFor(() => cluster.slicesOf(key).length === 0, { description: 'no slices' });
    await new RegistrationStore({ redis: db.redis, prefix }).add({
      ...key,
      endpoint: 'unix:///run/driver.sock',
      version: 'v1.ResourcePublisher',
    });
  });

  function reconcilerSpeaking(version: ResourceApiVersion): {
    reconciler: Reconciler;
    api: KubeSliceClient;
  } {
    const api = new KubeSliceClient({ transport, apiVersion: version });
    const reconciler = new Reconciler({
      records: new SyncRecords({ redis: db.redis, prefix }),
      cluster,
      api,
      logger: silentLogger,
    });
    return { reconciler, api };
  }

  async function readAs(version: ResourceApiVersion, name: string): Promise<ResourceSlice> {
    const res = await fetch(
      `${kube.url}/apis/resource.k8s.io/${version}/resourceslices/${encodeURIComponent(name)}`,
    );
    return sliceFromWire(await res.json(), version) as ResourceSlice;
  }

  it.each(resourceApiVersions)(
    'publishes every field as sent through %s, read back alike in every version, and a resync writes nothing',
    async (version) => {
      const { reconciler, api } = reconcilerSpeaking(version);
      const devices = fabricDevices(WELL_FORMED);
      await db.redis.set(keys.snapshot(key), snapshot(1, devices));
      const first = await reconciler.reconcile(key, context);
      expect(first.status).toMatchObject({ outcome: 'synced', writes: 1 });
      expect(first.status?.droppedFields).toBeUndefined();

      const [stored] = await api.listSlices(key);
      if (stored === undefined) throw new Error('nothing published');
      // upstream syncPool's name and layout of a pool without a node: no owner, no node part.
      expect(stored.metadata.name.startsWith('00000-fabric.example.com-')).toBe(true);
      expect(stored.metadata.ownerReferences).toBeUndefined();
      expect(stored.spec.perDeviceNodeSelection).toBe(true);
      expect(stored.spec.nodeName).toBeUndefined();
      expect(devicesEqual(stored.spec.devices, publishedDevices(devices))).toBe(true);
      for (const other of resourceApiVersions) {
        const read = await readAs(other, stored.metadata.name);
        expect(devicesEqual(read.spec.devices, publishedDevices(devices))).toBe(true);
      }

      await waitFor(() => cluster.slicesOf(key).length === 1, { description: 'cached' });
      const resync = await reconciler.reconcile(key, { ...context, reason: 'resync' });
      expect(resync.status).toMatchObject({ outcome: 'synced', writes: 0 });
      await api.close();
    },
  );

  it("a malformed pass-through member comes back as invalid with the server's field path", async () => {
    const { reconciler, api } = reconcilerSpeaking('v1');
    await db.redis.set(keys.snapshot(key), snapshot(1, fabricDevices({ cpu: {} })));
    const { status } = await reconciler.reconcile(key, context);
    expect(status?.outcome).toBe('invalid');
    expect(status?.error).toContain('spec.devices[0].nodeAllocatableResources[cpu]');
    expect(status?.problems).toEqual([
      {
        field: 'spec.devices[0].nodeAllocatableResources[cpu]',
        message: expect.stringContaining('mapping or overhead') as unknown,
      },
    ]);
    expect(await api.listSlices(key)).toEqual([]);
    await api.close();
  });
});
