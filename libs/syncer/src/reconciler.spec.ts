import { MAX_STATUS_PROBLEMS, syncStatusSchema } from '@slicekeeper/contracts';
import type { Device, InventorySnapshot, SyncReason } from '@slicekeeper/contracts';
import { Registry } from 'prom-client';
import { CorruptRecordError } from '@slicekeeper/state';
import { Reconciler } from './reconciler';
import type { KeyEventInput } from './key-events';
import { SyncerMetrics } from './syncer-metrics';
import { FakeCluster, FakeRecords, silentLogger } from './testing/fakes';
import type { FakeServerOptions } from './testing/fakes';

const key = { node: 'node-a', driver: 'gpu.example.com' };
const NODE_UID = 'a3f0c1d2-0000-4000-8000-000000000001';

function gpu(index: number, taint = false): Device {
  return {
    name: `gpu-${index}`,
    attributes: { index: { int: index } },
    capacity: { memory: { value: '80Gi' } },
    ...(taint ? { taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' as const }] } : {}),
  };
}

function snapshot(generation: number, devices: Device[]): InventorySnapshot {
  return {
    generation,
    receivedAt: '2026-11-24T12:00:00.000Z',
    endpoint: 'unix:///run/gpu.sock',
    inventory: { pools: [{ name: 'node-a', scope: { kind: 'node' }, devices }] },
  };
}

function setup(server: FakeServerOptions = {}) {
  const records = new FakeRecords();
  const cluster = new FakeCluster(server);
  cluster.nodes.set('node-a', NODE_UID);
  const reconciler = new Reconciler({ records, cluster, api: cluster, logger: silentLogger });
  let job = 0;
  const sync = (reason: SyncReason = 'snapshot') =>
    reconciler.reconcile(key, { jobId: `job-${++job}`, attempt: 1, reason });
  const devices = () =>
    cluster.slicesOf(key).flatMap((s) => (s.spec.devices ?? []).map((d) => d.name));
  return { records, cluster, sync, devices };
}

describe('Reconciler', () => {
  it('measures the first publish of each snapshot generation from its arrival, and tells every status', async () => {
    const records = new FakeRecords();
    const cluster = new FakeCluster();
    cluster.nodes.set('node-a', NODE_UID);
    const registry = new Registry();
    const told: KeyEventInput[] = [];
    const reconciler = new Reconciler({
      records,
      cluster,
      api: cluster,
      logger: silentLogger,
      metrics: new SyncerMetrics(registry),
      // 1.5 s after the snapshot arrived.
      clock: { now: () => Date.parse('2026-11-24T12:00:01.500Z') },
      events: { report: (input) => told.push(input) },
    });
    const sync = (reason: SyncReason) =>
      reconciler.reconcile(key, { jobId: 'job', attempt: 1, reason });
    records.records.snapshot = snapshot(1, [gpu(0)]);
    await sync('snapshot');
    await sync('resync');
    const text = await registry.metrics();
    expect(text).toMatch(/^slicekeeper_publish_latency_seconds_count 1$/m);
    expect(text).toMatch(/^slicekeeper_publish_latency_seconds_sum 1\.5$/m);
    expect(told.map((t) => [t.previous?.outcome, t.status.outcome, t.registered])).toEqual([
      [undefined, 'synced', true],
      ['synced', 'synced', true],
    ]);
  });

  it('publishes a snapshot from the cache without reading the API, and does nothing the second time', async () => {
    const { records, cluster, sync, devices } = setup();
    records.records.snapshot = snapshot(1, [gpu(0), gpu(1)]);

    expect((await sync()).status).toMatchObject({ outcome: 'synced', writes: 1 });
    expect(devices()).toEqual(['gpu-0', 'gpu-1']);
    cluster.deliver();
    expect((await sync('resync')).status).toMatchObject({ outcome: 'synced', writes: 0 });
    expect(cluster.calls).toEqual(['create']);
    expect(records.guard).toBeUndefined();
  });

  it('never creates a slice twice while the watch has not yet delivered our create', async () => {
    const { records, cluster, sync } = setup();
    records.records.snapshot = snapshot(1, [gpu(0)]);
    await sync();
    // The watch lags: the cache knows the create only from what the API server returned.
    records.records.snapshot = snapshot(2, [gpu(0), gpu(1)]);
    await sync();
    expect(cluster.calls).toEqual(['create', 'update']);
    expect(cluster.stored.size).toBe(1);
  });

  it('withdraws a removed key once its grace is over, and forgets its snapshot', async () => {
    const { records, cluster, sync } = setup();
    records.records.snapshot = snapshot(1, [gpu(0)]);
    await sync();
    records.records.registered = false;
    records.records.removal = { removedAt: Date.now() - 1000, withdrawAt: Date.now() - 1 };
    expect((await sync('removed')).status).toMatchObject({ outcome: 'withdrawn', writes: 1 });
    expect(cluster.stored.size).toBe(0);
    expect(records.records.forgotten).toBe(true);
  });

  it.each(['removed', 'slice-changed', 'resync', 'janitor'] as const)(
    'withdraws nothing for a key with neither a registration nor a removal (Redis lost them), reason %s',
    async (reason) => {
      const { records, cluster, sync } = setup();
      records.records.snapshot = snapshot(1, [gpu(0)]);
      await sync();
      Object.assign(records.records, { registered: false, snapshot: undefined });
      expect(await sync(reason)).toEqual({ outcome: 'idle', news: false });
      expect(cluster.stored.size).toBe(1);
      expect(records.statuses).toHaveLength(1);
    },
  );

  it('keeps the slices of a removed plugin until its grace ends, and says when to look again', async () => {
    const { records, cluster, sync } = setup();
    records.records.snapshot = snapshot(1, [gpu(0)]);
    await sync();
    records.records.registered = false;
    records.records.removal = { removedAt: Date.now(), withdrawAt: Date.now() + 30_000 };
    const { status, requeueAfter } = await sync('removed');
    expect(status?.outcome).toBe('removing');
    // Still the generation published: a driver back with the same inventory owes no sync.
    expect(status?.snapshotGeneration).toBe(1);
    expect(requeueAfter?.kind).toBe('after');
    expect(requeueAfter?.kind === 'after' && requeueAfter.ms).toBeGreaterThan(29_000);
    expect(cluster.stored.size).toBe(1);
  });

  it.each(['registered', 'slice-changed', 'resync'] as const)(
    'leaves what is published alone when a registered key has no inventory in Redis and never had one there, reason %s',
    async (reason) => {
      const { records, cluster, sync } = setup();
      records.records.snapshot = snapshot(1, [gpu(0)]);
      await sync();
      Object.assign(records.records, { snapshot: undefined, generationIssued: false });
      expect(await sync(reason)).toEqual({ outcome: 'idle', news: false });
      expect(cluster.stored.size).toBe(1);
    },
  );

  it.each(['stream-lost', 'registered'] as const)(
    'withdraws the slices of a snapshot the watcher withdrew, reason %s',
    async (reason) => {
      const { records, cluster, sync } = setup();
      records.records.snapshot = snapshot(1, [gpu(0)]);
      await sync();
      records.records.snapshot = undefined;
      expect((await sync(reason)).status).toMatchObject({ outcome: 'withdrawn', writes: 1 });
      expect(cluster.stored.size).toBe(0);
    },
  );

  it('parks a key whose Node the cache does not know, without an API call and without a retry', async () => {
    const { records, cluster, sync } = setup();
    cluster.nodes.clear();
    records.records.snapshot = snapshot(1, [gpu(0)]);
    const { status, requeueAfter } = await sync();
    expect(status?.outcome).toBe('node-missing');
    // Not retried: the Node watch syncs the key when the Node appears.
    expect(requeueAfter).toBeUndefined();
    expect(cluster.calls).toEqual([]);
  });

  it('records a corrupt snapshot as corrupt and does not retry it', async () => {
    const { records, sync } = setup();
    records.records.corrupt = new CorruptRecordError(
      'snapshot of node-a/gpu.example.com',
      'not JSON',
    );
    const { status, requeueAfter } = await sync();
    expect(status).toMatchObject({
      outcome: 'corrupt',
      error: expect.stringMatching(/corrupt snapshot/) as unknown,
    });
    expect(requeueAfter).toBeUndefined();
  });

  it('refuses a sync while another holds the key, and changes nothing', async () => {
    const { records, cluster, sync } = setup();
    records.records.snapshot = snapshot(1, [gpu(0)]);
    records.guard = 'job-0';
    const result = await sync();
    expect(result.status).toBeUndefined();
    expect(result.outcome).toBe('busy');
    expect(result.requeueAfter).toEqual({ kind: 'backoff' });
    expect(cluster.calls).toEqual([]);
  });

  it('re-plans from a list after a conflict with a change the watch had not delivered', async () => {
    const { records, cluster, sync, devices } = setup();
    records.records.snapshot = snapshot(1, [gpu(0)]);
    await sync();
    cluster.deliver();
    // Someone changes the slice; the watch has not told us yet.
    const [current] = cluster.stored.values();
    if (current === undefined) throw new Error('nothing published');
    const theirs = structuredClone(current);
    theirs.metadata.resourceVersion = '999';
    cluster.stored.set(theirs.metadata.name, theirs);

    records.records.snapshot = snapshot(2, [gpu(0), gpu(1)]);
    expect((await sync()).status).toMatchObject({ outcome: 'synced' });
    expect(cluster.calls).toEqual(['create', 'update', 'list', 'update']);
    cluster.deliver();
    expect(devices()).toEqual(['gpu-0', 'gpu-1']);
  });

  describe('fields the server drops', () => {
    it('reports them, and does not rewrite them on every resync', async () => {
      const { records, cluster, sync } = setup({ dropTaints: true });
      records.records.snapshot = snapshot(1, [gpu(0, true), gpu(1)]);

      const first = await sync();
      expect(first.status).toMatchObject({
        outcome: 'synced',
        droppedFields: [expect.stringMatching(/taints.*DRADeviceTaints/) as unknown],
      });
      cluster.deliver();
      for (let i = 0; i < 3; i++) {
        expect((await sync('resync')).status).toMatchObject({ outcome: 'synced', writes: 0 });
        cluster.deliver();
      }
      expect(cluster.calls).toEqual(['create']);
      // A new inventory is written again (a server whose gate was turned on keeps it then).
      records.records.snapshot = snapshot(2, [gpu(0, true), gpu(2)]);
      expect((await sync()).status?.writes).toBe(1);
    });
  });

  describe('lifecycle taints', () => {
    const lost = {
      state: 'backoff' as const,
      endpoint: 'unix:///run/gpu.sock',
      since: '2026-11-24T12:05:00.000Z',
      reconnects: 1,
      unreachableSince: '2026-11-24T12:05:00.400Z',
    };
    const taintsOf = (cluster: FakeCluster) =>
      cluster.slicesOf(key).flatMap((s) => (s.spec.devices ?? []).map((d) => d.taints ?? []));

    it('taints every device driver-unreachable while the stream is lost, and removes it without a generation bump', async () => {
      const { records, cluster, sync } = setup();
      const devices = Array.from({ length: 130 }, (_, i) => gpu(i));
      records.records.snapshot = snapshot(1, devices);
      await sync();
      cluster.deliver();
      const generations = () => cluster.slicesOf(key).map((s) => s.spec.pool.generation);
      // Laid out for taints from the start: 64 + 64 + 2.
      expect(cluster.slicesOf(key).map((s) => s.spec.devices?.length)).toEqual([64, 64, 2]);
      const before = generations();

      records.records.stream = lost;
      const tainted = await sync('unreachable');
      expect(tainted.status).toMatchObject({
        outcome: 'synced',
        writes: 3,
        taints: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
      });
      const taints = taintsOf(cluster);
      expect(taints).toHaveLength(130);
      expect(taints.every((t) => t.length === 1)).toBe(true);
      expect(taints[0]).toEqual([
        {
          key: 'gpu.example.com/driver-unreachable',
          effect: 'NoSchedule',
          timeAdded: '2026-11-24T12:05:00Z',
        },
      ]);
      expect(generations()).toEqual(before);
      cluster.deliver();

      records.records.stream = { ...lost, state: 'streaming', reconnects: 0 };
      delete records.records.stream.unreachableSince;
      const back = await sync('reachable');
      expect(back.status).toMatchObject({ outcome: 'synced', writes: 3 });
      expect(back.status?.taints).toBeUndefined();
      expect(taintsOf(cluster).flat()).toEqual([]);
      expect(generations()).toEqual(before);
    });

    it('says so when the server drops the taint, and does not write it again', async () => {
      const { records, cluster, sync } = setup({ dropTaints: true });
      records.records.snapshot = snapshot(1, [gpu(0), gpu(1)]);
      await sync();
      cluster.deliver();
      records.records.stream = lost;
      const first = await sync('unreachable');
      expect(first.status?.taints?.unreachable).toBe('dropped');
      expect(first.status?.droppedFields).toEqual(['spec.devices[*].taints (DRADeviceTaints)']);
      cluster.deliver();
      const again = await sync('resync');
      expect(again.status).toMatchObject({ writes: 0, taints: { unreachable: 'dropped' } });
    });

    it('publishes health as taints with the configured effect and keeps when each was added', async () => {
      const records = new FakeRecords();
      const cluster = new FakeCluster();
      cluster.nodes.set('node-a', NODE_UID);
      const reconciler = new Reconciler({
        records,
        cluster,
        api: cluster,
        logger: silentLogger,
        healthTaints: () => 'NoExecute',
      });
      let job = 0;
      const sync = () =>
        reconciler.reconcile(key, { jobId: `job-${++job}`, attempt: 1, reason: 'health' });
      const sick: Device = { ...gpu(0), health: { status: 'unhealthy', message: 'XID 79' } };
      const unsure: Device = { ...gpu(1), health: { status: 'unknown' } };
      records.records.snapshot = snapshot(1, [sick, unsure, gpu(2)]);
      expect((await sync()).status?.taints).toEqual({
        unhealthy: 1,
        healthUnknown: 1,
      });
      const [slice] = cluster.slicesOf(key);
      expect(slice?.spec.devices?.map((d) => d.taints)).toEqual([
        [{ key: 'gpu.example.com/unhealthy', effect: 'NoExecute' }],
        [{ key: 'gpu.example.com/health-unknown', effect: 'NoExecute' }],
        undefined,
      ]);
      expect(JSON.stringify(slice)).not.toContain('health"');
    });

    it('records the field paths of an invalid inventory and announces only outcomes that changed', async () => {
      const { records, sync } = setup();
      records.records.snapshot = snapshot(1, [gpu(0)]);
      await sync();
      await sync('resync');
      expect(records.announced.map((s) => s.outcome)).toEqual(['synced']);
      records.records.snapshot = snapshot(2, [{ ...gpu(0), name: 'GPU 0' }]);
      const refused = await sync();
      expect(refused.status?.outcome).toBe('invalid');
      expect(refused.status?.problems?.[0]?.field).toMatch(/devices\[0\]\.name$/);
      expect(records.announced.map((s) => s.outcome)).toEqual(['synced', 'invalid']);
    });

    it('keeps the status of 10,000 invalid devices small: the first problems and a count', async () => {
      const { records, sync } = setup();
      const devices = Array.from({ length: 10_000 }, (_, i) => ({
        ...gpu(i),
        name: `GPU ${'x'.repeat(1000)} ${i}`,
      }));
      records.records.snapshot = snapshot(1, devices);
      const { status } = await sync();
      expect(status?.outcome).toBe('invalid');
      expect(status?.problems).toHaveLength(MAX_STATUS_PROBLEMS);
      expect((status?.problems?.length ?? 0) + (status?.problemsOmitted ?? 0)).toBeGreaterThan(
        10_000,
      );
      expect(syncStatusSchema.parse(status)).toEqual(status);
      expect(Buffer.byteLength(JSON.stringify(status))).toBeLessThanOrEqual(64 * 1024);
    });
  });
});
