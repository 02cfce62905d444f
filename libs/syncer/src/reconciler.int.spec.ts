import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { ClusterCache, KubeSliceClient, KubeTransport } from '@slicekeeper/kube';
import { createMetricsRegistry } from '@slicekeeper/observability';
import { RegistrationStore, SyncRecords } from '@slicekeeper/state';
import { redisKeys } from '@slicekeeper/state/testing';
import type { RedisKeys } from '@slicekeeper/state/testing';
import { uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { Reconciler } from './reconciler';
import { SyncerMetrics } from './syncer-metrics';
import { silentLogger } from './testing/fakes';

const key = { node: '', driver: 'gpu.example.com' };
const context = { jobId: 'job-1', attempt: 1, reason: 'snapshot' } as const;

function snapshot(generation: number, devices: readonly string[] = ['a'], taint = false): string {
  return JSON.stringify({
    generation,
    receivedAt: new Date().toISOString(),
    endpoint: 'unix:///run/driver.sock',
    inventory: {
      pools: [
        {
          name: 'fabric',
          scope: { kind: 'all-nodes' },
          devices: devices.map((name) => ({
            name,
            ...(taint ? { taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }] } : {}),
          })),
        },
      ],
    },
  });
}

/** The reconciler with its real parts: Redis records, the emulator, a watch-fed cache. */
describe('Reconciler (Redis, kube emulator, watch-fed cache)', () => {
  const db = useRedisServer();
  let kube: RunningKubeEmulator;
  let transport: KubeTransport;
  let cluster: ClusterCache;
  let api: KubeSliceClient;
  let keys: RedisKeys;
  let prefix: string;
  let registrations: RegistrationStore;
  let metrics: SyncerMetrics;
  let reconciler: Reconciler;

  beforeAll(async () => {
    // DRADeviceTaints off, as in kube-apiserver 1.34: taints are dropped on write.
    kube = await startKubeEmulator({ port: 0 });
    transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    api = new KubeSliceClient({ transport });
    cluster = new ClusterCache({ transport, logger: silentLogger });
    await cluster.start();
  });
  afterAll(async () => {
    await cluster.close();
    await api.close();
    transport.close();
    await kube.close();
  });
  beforeEach(async () => {
    prefix = uniquePrefix('reconciler');
    keys = redisKeys(prefix);
    metrics = new SyncerMetrics(createMetricsRegistry('test'));
    reconciler = new Reconciler({
      records: new SyncRecords({ redis: db.redis, prefix }),
      cluster,
      api,
      logger: silentLogger,
      metrics,
    });
    for (const slice of cluster.slicesOf(key)) await api.deleteSlice(slice.metadata);
    await waitFor(() => cluster.slicesOf(key).length === 0, { description: 'no slices' });
    registrations = new RegistrationStore({ redis: db.redis, prefix });
    await register();
  });

  const register = () =>
    registrations.add({
      ...key,
      endpoint: 'unix:///run/driver.sock',
      version: 'v1.ResourcePublisher',
    });
  /** What the watcher's store does: a new generation and the snapshot. */
  const store = async (devices: readonly string[]) => {
    const generation = await db.redis.incr(keys.snapshotGeneration(key));
    await db.redis.set(keys.snapshot(key), snapshot(generation, devices));
  };
  const deletes = () => kube.emulator.count({ verb: 'delete', resource: 'resourceslices' });

  const writes = () =>
    ['create', 'update', 'delete'].reduce(
      (sum, verb) => sum + kube.emulator.count({ verb, resource: 'resourceslices' }),
      0,
    );
  const reads = () =>
    kube.emulator.count({ verb: 'list', resource: 'resourceslices' }) +
    kube.emulator.count({ verb: 'get' });

  it('publishes, changes and resyncs without reading the API', async () => {
    const before = reads();
    await db.redis.set(keys.snapshot(key), snapshot(1, ['a']));
    expect((await reconciler.reconcile(key, context)).status).toMatchObject({ outcome: 'synced' });
    // The next change comes before the watch has delivered the create: it is an update of the
    // slice we created, never a second create.
    await db.redis.set(keys.snapshot(key), snapshot(2, ['a', 'b']));
    expect((await reconciler.reconcile(key, context)).status).toMatchObject({
      outcome: 'synced',
      writes: 1,
    });
    await reconciler.reconcile(key, { ...context, reason: 'resync' });
    expect(kube.emulator.count({ verb: 'create', resource: 'resourceslices' })).toBe(1);
    expect(reads() - before).toBe(0);
    expect(await api.listSlices(key)).toHaveLength(1);
  });

  it('reports the fields the server drops, once, and does not rewrite them on resyncs', async () => {
    await db.redis.set(keys.snapshot(key), snapshot(1, ['a', 'b'], true));
    const { status } = await reconciler.reconcile(key, context);
    expect(status).toMatchObject({
      outcome: 'synced',
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
    });
    const [published] = await api.listSlices(key);
    expect(published?.spec.devices?.every((d) => d.taints === undefined)).toBe(true);
    const after = writes();
    for (let i = 0; i < 3; i++) {
      await waitFor(() => cluster.slicesOf(key).length === 1, { description: 'cached' });
      const resync = await reconciler.reconcile(key, { ...context, reason: 'resync' });
      expect(resync.status).toMatchObject({ outcome: 'synced', writes: 0 });
      expect(resync.status?.droppedFields).toEqual(status?.droppedFields);
    }
    expect(writes()).toBe(after);
    const dropped = await metrics.droppedFields.get();
    expect(dropped.values).toEqual([
      expect.objectContaining({ labels: { gate: 'DRADeviceTaints' }, value: 2 }),
    ]);
  });

  const outcomes: {
    name: string;
    arrange: () => Promise<unknown>;
    expected: { outcome: string; error?: unknown };
    retried: boolean;
  }[] = [
    {
      name: 'synced',
      arrange: () => db.redis.set(keys.snapshot(key), snapshot(1)),
      expected: { outcome: 'synced' },
      retried: false,
    },
    {
      name: 'synced after Redis forgot its scripts',
      arrange: async () => {
        await db.redis.set(keys.snapshot(key), snapshot(1));
        await db.redis.script('FLUSH');
      },
      expected: { outcome: 'synced' },
      retried: false,
    },
    {
      name: 'corrupt snapshot',
      arrange: () => db.redis.set(keys.snapshot(key), JSON.stringify({ generation: 'one' })),
      expected: { outcome: 'corrupt', error: expect.stringMatching(/corrupt snapshot/) as unknown },
      retried: false,
    },
    {
      name: 'snapshot that is not JSON',
      arrange: () => db.redis.set(keys.snapshot(key), '{"generation":'),
      expected: { outcome: 'corrupt', error: expect.stringMatching(/not JSON/) as unknown },
      retried: false,
    },
    {
      name: 'synced over a status that is not JSON',
      arrange: async () => {
        await db.redis.set(keys.snapshot(key), snapshot(1));
        await db.redis.set(keys.syncStatus(key), 'not json');
      },
      expected: { outcome: 'synced' },
      retried: false,
    },
    {
      name: 'failed read',
      arrange: async () => {
        await db.redis.del(keys.registrations(key));
        await db.redis.set(keys.registrations(key), 'not a hash');
      },
      expected: { outcome: 'retrying', error: expect.stringMatching(/WRONGTYPE/) as unknown },
      retried: true,
    },
  ];
  it.each(outcomes)(
    "records the outcome and releases the key's guard: $name",
    async ({ arrange, expected, retried }) => {
      await arrange();
      const { status, requeueAfter } = await reconciler.reconcile(key, context);
      expect(status).toMatchObject(expected);
      expect(requeueAfter !== undefined).toBe(retried);
      expect(await db.redis.exists(keys.syncGuard(key))).toBe(0);
    },
  );

  it('deletes nothing while Redis has lost the key, and withdraws once a record asks for it', async () => {
    await store(['a']);
    expect((await reconciler.reconcile(key, context)).status?.outcome).toBe('synced');
    const before = deletes();

    // Redis came back empty: every record is gone, the sync of a job that was running, a
    // slice's watch event or a resync finds nothing.
    await db.redis.del(...(await db.redis.keys(`${prefix}*`)));
    for (const reason of ['snapshot', 'slice-changed', 'resync'] as const) {
      expect((await reconciler.reconcile(key, { ...context, reason })).outcome).toBe('idle');
    }
    // The watcher wrote the registration back; the snapshot is still on its way.
    await register();
    expect((await reconciler.reconcile(key, { ...context, reason: 'slice-changed' })).outcome).toBe(
      'idle',
    );
    expect(deletes()).toBe(before);
    expect(await api.listSlices(key)).toHaveLength(1);

    // The snapshot is back, then the watcher withdraws it (the driver said Unimplemented).
    await store(['a']);
    await reconciler.reconcile(key, context);
    await db.redis.del(keys.snapshot(key));
    expect(
      (await reconciler.reconcile(key, { ...context, reason: 'stream-lost' })).status,
    ).toMatchObject({ outcome: 'withdrawn', writes: 1 });
    expect(await api.listSlices(key)).toHaveLength(0);
  });

  it("refuses to sync while another job holds the key's guard, and leaves that guard alone", async () => {
    await db.redis.set(keys.syncGuard(key), 'job-0', 'PX', 60_000);
    await db.redis.set(keys.snapshot(key), snapshot(1));
    expect((await reconciler.reconcile(key, context)).outcome).toBe('busy');
    expect((await metrics.overlaps.get()).values[0]?.value).toBe(1);
    expect(await db.redis.get(keys.syncGuard(key))).toBe('job-0');
    expect(await db.redis.get(keys.syncStatus(key))).toBeNull();
  });
});
