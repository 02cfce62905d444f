import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import {
  MAINTENANCE_QUEUE_NAME,
  keyId,
  queuePrefix,
  syncStatusSchema,
} from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory, Pool, SliceKey, SyncStatus } from '@slicekeeper/contracts';
import { TerminalError } from '@slicekeeper/errors';
import { ClusterCache, KubeSliceClient, KubeTransport } from '@slicekeeper/kube';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import { RegistrationStore, SyncRecords } from '@slicekeeper/state';
import { RedisServer, uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { Maintenance } from './maintenance';
import type { ReconcileResult, SyncContext } from './reconciler';
import { SyncWorker } from './sync-worker';
import type { MaintenanceScheduleOptions, SyncWorkerOptions } from './sync-worker';
import { ClusterTriggers } from './cluster-triggers';
import { Reconciler } from './reconciler';
import { SyncerMetrics } from './syncer-metrics';

const logger = createLogger({ service: 'slice-syncer-test', level: 'silent' });

interface ListedSlice {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  spec: {
    driver: string;
    nodeName?: string;
    pool: { name: string; generation: number; resourceSliceCount: number };
    devices?: { name: string }[];
  };
}

function gpus(count: number, memory = '80Gi'): Pool {
  return {
    name: 'node-a',
    scope: { kind: 'node' },
    devices: Array.from({ length: count }, (_, i) => ({
      name: `gpu-${i}`,
      attributes: { model: { string: 'A100' }, index: { int: i } },
      capacity: { memory: { value: memory } },
    })),
  };
}

/** One syncer replica in this process, against a private Redis and the emulator. */
class Harness {
  readonly prefix = uniquePrefix('syncer');
  readonly keys = redisKeys(this.prefix);
  readonly redis: Redis;
  readonly registrations: RegistrationStore;
  readonly queue: SyncQueue;
  readonly metrics: SyncerMetrics;
  readonly syncer: SyncWorker;
  readonly api: KubeSliceClient;
  readonly cluster: ClusterCache;
  private readonly transport: KubeTransport;
  private readonly reconciler: Reconciler;
  private readonly connections: Redis[] = [];
  private readonly replicas: SyncWorker[] = [];
  generation = 0;

  constructor(
    private readonly redisUrl: string,
    readonly kube: RunningKubeEmulator,
  ) {
    this.redis = this.connection();
    this.registrations = new RegistrationStore({ redis: this.redis, prefix: this.prefix });
    this.queue = new SyncQueue({ connection: this.redis, prefix: this.prefix });
    this.metrics = new SyncerMetrics(createMetricsRegistry('test'));
    this.transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    const api = new KubeSliceClient({ transport: this.transport });
    this.api = api;
    const triggers = new ClusterTriggers({
      syncQueue: this.queue,
      registrations: this.registrations,
      logger,
    });
    this.cluster = new ClusterCache({
      transport: this.transport,
      logger,
      onForeignChange: triggers.onForeignChange,
      onNode: triggers.onNode,
    });
    this.reconciler = new Reconciler({
      records: new SyncRecords({ redis: this.redis, prefix: this.prefix }),
      cluster: this.cluster,
      api,
      logger,
      metrics: this.metrics,
    });
    this.syncer = this.newReplica();
  }

  /** The cache's first list, then the worker: as the service starts. */
  async start(): Promise<void> {
    await this.cluster.start();
    await this.syncer.start();
  }

  /** Starts another replica of the syncer, sharing this one's caches, e.g. to run maintenance. */
  async replica(maintenance: Omit<MaintenanceScheduleOptions, 'connection'>): Promise<SyncWorker> {
    const replica = this.newReplica({ ...maintenance, connection: this.connection() });
    this.replicas.push(replica);
    await replica.start();
    return replica;
  }

  private newReplica(maintenance?: MaintenanceScheduleOptions): SyncWorker {
    return new SyncWorker({
      connection: this.connection(),
      prefix: this.prefix,
      reconciler: this.reconciler,
      logger,
      backoff: { baseMs: 5, capMs: 50 },
      ...(maintenance === undefined ? {} : { maintenance }),
    });
  }

  private connection(): Redis {
    const connection = createRedisConnection({ target: { kind: 'server', url: this.redisUrl } });
    this.connections.push(connection);
    return connection;
  }

  /** What the plugin-watcher does with a driver message: store the snapshot, enqueue. */
  async publish(key: SliceKey, inventory: DriverInventory): Promise<number> {
    this.generation++;
    if ((await this.registrations.get(key)).length === 0) {
      await this.registrations.add({
        ...key,
        endpoint: 'unix:///run/driver.sock',
        version: 'v1.ResourcePublisher',
      });
    }
    await this.redis.set(
      this.keys.snapshot(key),
      JSON.stringify({
        generation: this.generation,
        receivedAt: new Date().toISOString(),
        endpoint: 'unix:///run/driver.sock',
        inventory,
      }),
    );
    await this.queue.enqueue(key, 'snapshot');
    return this.generation;
  }

  async status(key: SliceKey): Promise<SyncStatus | undefined> {
    const raw = await this.redis.get(this.keys.syncStatus(key));
    return raw === null ? undefined : syncStatusSchema.parse(JSON.parse(raw));
  }

  /** Waits until the key's status is for `generation` and has the outcome. */
  async settled(
    key: SliceKey,
    generation: number,
    outcome: SyncStatus['outcome'] = 'synced',
  ): Promise<SyncStatus> {
    return waitFor(
      async () => {
        const status = await this.status(key);
        const idle =
          (await this.queue.queue.getJobCountByTypes(
            'active',
            'waiting',
            'prioritized',
            'delayed',
          )) === 0;
        return status?.snapshotGeneration === generation && status.outcome === outcome && idle
          ? status
          : undefined;
      },
      { description: `${keyId(key)} ${outcome} at generation ${generation}`, timeoutMs: 15_000 },
    );
  }

  async close(): Promise<void> {
    await Promise.all([this.syncer.close(), ...this.replicas.map((r) => r.close())]);
    await this.queue.close();
    await this.cluster.close();
    await this.api.close();
    this.transport.close();
    for (const connection of this.connections) connection.disconnect();
  }
}

async function kubeGet<T>(kube: RunningKubeEmulator, path: string): Promise<T> {
  const res = await fetch(`${kube.url}${path}`);
  return (await res.json()) as T;
}

async function slicesOf(kube: RunningKubeEmulator, key: SliceKey): Promise<ListedSlice[]> {
  const list = await kubeGet<{ items: ListedSlice[] }>(
    kube,
    `/apis/resource.k8s.io/v1/resourceslices?fieldSelector=${encodeURIComponent(`spec.nodeName=${key.node},spec.driver=${key.driver}`)}`,
  );
  return list.items;
}

async function createNode(kube: RunningKubeEmulator, name: string): Promise<string> {
  const res = await fetch(`${kube.url}/api/v1/nodes`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name } }),
  });
  const node = (await res.json()) as { metadata: { uid: string } };
  return node.metadata.uid;
}

function writes(kube: RunningKubeEmulator): number {
  return ['create', 'update', 'delete'].reduce(
    (sum, verb) => sum + kube.emulator.count({ verb, resource: 'resourceslices' }),
    0,
  );
}

describe('sync worker, against the emulator', () => {
  let redisServer: RedisServer;
  let kube: RunningKubeEmulator;
  let harness: Harness;
  const gpuA = { node: 'node-a', driver: 'gpu.example.com' };
  let nodeUid: string;

  beforeAll(async () => {
    redisServer = await RedisServer.start();
  });
  afterAll(() => redisServer.stop());
  beforeEach(async () => {
    kube = await startKubeEmulator({ port: 0 });
    nodeUid = await createNode(kube, 'node-a');
    harness = new Harness(redisServer.url, kube);
    await harness.start();
  });
  afterEach(async () => {
    await harness.close();
    await kube.close();
  });

  it('publishes a snapshot as owned, labelled slices of one pool generation', async () => {
    const big = { ...gpus(130) };
    const generation = await harness.publish(gpuA, { pools: [big] });
    const status = await harness.settled(gpuA, generation);

    const slices = await slicesOf(kube, gpuA);
    // Laid out for taints from the start: at most 64 devices per slice.
    expect(slices.map((s) => s.spec.devices?.length)).toEqual([64, 64, 2]);
    for (const slice of slices) {
      expect(slice.metadata.labels).toEqual({ 'app.kubernetes.io/managed-by': 'slicekeeper' });
      expect(slice.metadata.ownerReferences).toEqual([
        { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: nodeUid, controller: true },
      ]);
      expect(slice.spec.nodeName).toBe('node-a');
      expect(slice.spec.pool).toEqual({ name: 'node-a', generation: 1, resourceSliceCount: 3 });
    }
    expect(
      slices
        .flatMap((s) => s.spec.devices ?? [])
        .map((d) => d.name)
        .sort(),
    ).toEqual(big.devices.map((d) => d.name).sort());
    expect(status).toMatchObject({
      outcome: 'synced',
      writes: 3,
      pools: [{ name: 'node-a', generation: 1, sliceCount: 3, devices: 130 }],
    });
    expect(status.slices).toEqual(slices.map((s) => s.metadata.name).sort());
  });

  it('writes only what changed, and nothing for an unchanged snapshot', async () => {
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(8)] }));
    const before = writes(kube);

    const changed = gpus(8);
    changed.devices[3] = {
      ...changed.devices[3],
      name: 'gpu-3',
      capacity: { memory: { value: '40Gi' } },
    };
    const status = await harness.settled(gpuA, await harness.publish(gpuA, { pools: [changed] }));
    expect(writes(kube) - before).toBe(1);
    expect(kube.emulator.count({ verb: 'update', resource: 'resourceslices' })).toBe(1);
    expect(status.writes).toBe(1);

    const unchanged = writes(kube);
    const reads = kube.emulator.count({ verb: 'list' }) + kube.emulator.count({ verb: 'get' });
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [changed] }));
    await harness.queue.enqueue(gpuA, 'resync');
    await harness.settled(gpuA, harness.generation);
    expect(writes(kube)).toBe(unchanged);
    // No read, for a change or a resync: the syncer plans from its watch-fed cache.
    expect(
      kube.emulator.count({ verb: 'list' }) + kube.emulator.count({ verb: 'get' }) - reads,
    ).toBe(0);
  });

  it('withdraws the slices of a removed plugin', async () => {
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(4)] }));
    await harness.registrations.remove(gpuA);
    await harness.queue.enqueue(gpuA, 'removed');
    await waitFor(async () => (await slicesOf(kube, gpuA)).length === 0, {
      description: 'slices withdrawn',
    });
    await waitFor(async () => (await harness.status(gpuA))?.outcome === 'withdrawn', {
      description: 'withdrawn status',
    });
    // Its snapshot went with its slices: a registration publishes from a fresh stream.
    expect(await harness.redis.exists(harness.keys.snapshot(gpuA))).toBe(0);
  });

  it('never publishes a removed plugin again, whatever arrives late, until it registers again', async () => {
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(4)] }));
    await harness.registrations.remove(gpuA);
    await harness.queue.enqueue(gpuA, 'removed');
    await waitFor(async () => (await slicesOf(kube, gpuA)).length === 0, {
      description: 'slices withdrawn',
    });
    // A snapshot written late (a watcher that had not yet seen the removal) and its sync, and
    // the periodic resync: none of them brings the slices back.
    const { keys } = harness;
    await harness.redis.set(
      keys.snapshot(gpuA),
      JSON.stringify({
        generation: 99,
        receivedAt: new Date().toISOString(),
        endpoint: 'unix:///run/driver.sock',
        inventory: { pools: [gpus(4)] },
      }),
    );
    await harness.queue.enqueue(gpuA, 'snapshot');
    await harness.queue.enqueue(gpuA, 'resync');
    await harness.settled(gpuA, 0, 'withdrawn');
    expect(await slicesOf(kube, gpuA)).toEqual([]);

    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(4)] }));
    expect(await slicesOf(kube, gpuA)).toHaveLength(1);
  });

  it("keeps a removed plugin's slices through its grace, without a write when it registers again", async () => {
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(4)] }));
    const before = writes(kube);
    await harness.registrations.remove(gpuA, { graceMs: 60_000 });
    await harness.queue.enqueue(gpuA, 'removed');
    await waitFor(async () => (await harness.status(gpuA))?.outcome === 'removing', {
      description: 'removal pending',
    });
    expect((await harness.status(gpuA))?.error).toMatch(/withdrawn in 60s unless it registers/);
    await harness.registrations.add({
      ...gpuA,
      endpoint: 'unix:///run/driver.sock',
      version: 'v1.ResourcePublisher',
    });
    await harness.queue.enqueue(gpuA, 'registered');
    const status = await harness.settled(gpuA, harness.generation);
    expect(status.slices).toHaveLength(1);
    expect(writes(kube)).toBe(before);
  });

  it('records invalid inventory once, keeps the published slices, and leaves other keys alone', async () => {
    const nicA = { node: 'node-a', driver: 'nic.example.com' };
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(2)] }));
    const published = await slicesOf(kube, gpuA);

    const bad = gpus(2);
    bad.devices[1] = { name: 'GPU_1' };
    const badGeneration = await harness.publish(gpuA, { pools: [bad] });
    const nicGeneration = await harness.publish(nicA, { pools: [{ ...gpus(1), name: 'node-a' }] });

    const status = await harness.settled(gpuA, badGeneration, 'invalid');
    expect(status.attempt).toBe(1);
    expect(status.error).toContain('pools[0].devices[1].name: Invalid value: "GPU_1"');
    expect(await slicesOf(kube, gpuA)).toEqual(published);
    await harness.settled(nicA, nicGeneration);
    expect(await slicesOf(kube, nicA)).toHaveLength(1);
  });

  it('converges through 409 storms, 429 with Retry-After, 500s and latency', async () => {
    kube.emulator.injectFault({
      verb: 'create',
      resource: 'resourceslices',
      status: 500,
      times: 3,
    });
    kube.emulator.injectFault({
      verb: 'create',
      resource: 'resourceslices',
      status: 429,
      times: 1,
      retryAfterSeconds: 1,
    });
    kube.emulator.addLatency({ verb: 'create', resource: 'resourceslices', ms: 200, times: 2 });
    const generation = await harness.publish(gpuA, { pools: [gpus(3)] });
    const status = await harness.settled(gpuA, generation);
    expect(status.attempt).toBeGreaterThan(1);
    expect(await slicesOf(kube, gpuA)).toHaveLength(1);
    expect(kube.emulator.count({ verb: 'create', resource: 'resourceslices', code: 429 })).toBe(1);

    // Updates that conflict (someone else keeps writing) are re-planned from a fresh list.
    kube.emulator.injectFault({
      verb: 'update',
      resource: 'resourceslices',
      status: 409,
      times: 3,
    });
    const next = await harness.publish(gpuA, { pools: [gpus(4)] });
    await harness.settled(gpuA, next);
    expect((await slicesOf(kube, gpuA)).flatMap((s) => s.spec.devices ?? [])).toHaveLength(4);
    expect(kube.emulator.count({ verb: 'list', resource: 'resourceslices' })).toBeGreaterThan(0);
  });

  it('parks a key whose Node is missing, and publishes as soon as the Node appears', async () => {
    const gpuB = { node: 'node-b', driver: 'gpu.example.com' };
    await harness.publish(gpuB, { pools: [{ ...gpus(1), name: 'node-b' }] });
    await waitFor(async () => (await harness.status(gpuB))?.outcome === 'node-missing', {
      description: 'node-missing',
    });
    // Parked: no job retries it (no hot loop, no backoff that would hold back news).
    await waitFor(
      async () =>
        (await harness.queue.queue.getJobCountByTypes(
          'active',
          'waiting',
          'prioritized',
          'delayed',
        )) === 0,
      { description: 'no job left for the parked key' },
    );

    // The Node joins: the watch sees it and the parked key is published at once, without
    // waiting out its park and without news from the driver.
    await createNode(kube, 'node-b');
    await harness.settled(gpuB, harness.generation);
    expect(await slicesOf(kube, gpuB)).toHaveLength(1);
  });

  it('lets deleting the Node garbage-collect its slices and parks the key', async () => {
    await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(2)] }));
    await fetch(`${kube.url}/api/v1/nodes/node-a`, { method: 'DELETE' });
    await waitFor(async () => (await slicesOf(kube, gpuA)).length === 0, {
      description: 'garbage collection',
    });
    // The watch saw the Node go: the key is parked without a resync and without an API read.
    await waitFor(async () => (await harness.status(gpuA))?.outcome === 'node-missing', {
      description: 'parked',
    });
  });

  describe('maintenance', () => {
    let clock: number;
    let maintenance: Maintenance;
    beforeEach(() => {
      clock = Date.parse('2026-11-21T12:00:00Z');
      maintenance = new Maintenance({
        redis: harness.redis,
        prefix: harness.prefix,
        cluster: harness.cluster,
        syncQueue: harness.queue,
        logger,
        orphanGraceMs: 600_000,
        resyncIntervalMs: 600_000,
        clock: { now: () => clock },
        random: () => 0.5,
      });
    });

    it('withdraws a removed key promptly even when its sync job was lost', async () => {
      await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(2)] }));
      await harness.registrations.remove(gpuA); // the API's job never made it
      expect(await maintenance.janitor()).toEqual({ removed: 1, orphans: 0 });
      await waitFor(async () => (await slicesOf(kube, gpuA)).length === 0, {
        description: 'withdrawal',
      });
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 0 });
    });

    it('runs the janitor on its schedule on a replica, withdrawing a key whose sync job was lost', async () => {
      await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(2)] }));
      await harness.registrations.remove(gpuA); // the API's job never made it
      const janitorRuns: { removed: number; orphans: number }[] = [];
      await harness.replica({
        jobs: {
          // Only the janitor: a resync would withdraw the key as well.
          resyncIntervalMs: maintenance.resyncIntervalMs,
          resync: () => Promise.resolve(0),
          janitor: async () => {
            const run = await maintenance.janitor();
            janitorRuns.push(run);
            return run;
          },
        },
        janitorIntervalMs: 100,
      });
      await waitFor(async () => (await slicesOf(kube, gpuA)).length === 0, {
        description: 'withdrawal',
      });
      expect(janitorRuns).toContainEqual({ removed: 1, orphans: 0 });
    });

    it('keeps slices of unknown keys for the orphan grace period, then deletes them', async () => {
      // Published earlier, then Redis lost everything: slicekeeper has no record of the key.
      await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(2)] }));
      await harness.redis.del(
        harness.keys.snapshot(gpuA),
        harness.keys.registrations(gpuA),
        harness.keys.syncStatus(gpuA),
      );
      await harness.redis.del(harness.keys.registrationIndex, harness.keys.knownKeys);

      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 0 });
      clock += 599_000;
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 0 });
      expect(await slicesOf(kube, gpuA)).toHaveLength(1);

      clock += 1000;
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 1 });
      await waitFor(async () => (await slicesOf(kube, gpuA)).length === 0, {
        description: 'orphans deleted',
      });
    });

    it('never withdraws a key whose driver streams, nor more than a share of orphans per run', async () => {
      const nodes = Array.from({ length: 12 }, (_, i) => `node-${i}`);
      for (const node of nodes) await createNode(kube, node);
      const keys = nodes.map((node) => ({ node, driver: 'gpu.example.com' }));
      for (const key of keys) {
        await harness.settled(
          key,
          await harness.publish(key, { pools: [{ ...gpus(1), name: key.node }] }),
        );
      }
      // Redis lost everything, but the first key's watcher still holds its stream.
      for (const key of keys) {
        await harness.redis.del(
          harness.keys.snapshot(key),
          harness.keys.registrations(key),
          harness.keys.syncStatus(key),
        );
      }
      const [live] = keys;
      if (live === undefined) throw new Error('no key');
      await harness.redis.set(
        harness.keys.streamState(live),
        JSON.stringify({
          state: 'streaming',
          endpoint: 'unix:///run/driver.sock',
          since: new Date().toISOString(),
          reconnects: 0,
        }),
      );
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 0 });
      clock += 600_000;
      // 12 managed keys: at most one (10%, at least one) withdrawn per run.
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 1 });
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 1 });
      await waitFor(
        async () =>
          (await slicesOf(kube, live)).length === 1 &&
          (await harness.queue.queue.getJobCountByTypes('active', 'waiting', 'prioritized')) === 0,
        {
          description: 'janitor syncs done',
        },
      );
      expect(await slicesOf(kube, live)).toHaveLength(1);
    });

    it('forgets an orphan whose driver re-registers within the grace period', async () => {
      await harness.settled(gpuA, await harness.publish(gpuA, { pools: [gpus(2)] }));
      await harness.redis.del(harness.keys.snapshot(gpuA), harness.keys.registrations(gpuA));
      await maintenance.janitor();
      const generation = await harness.publish(gpuA, { pools: [gpus(2)] });
      await harness.settled(gpuA, generation);
      clock += 3_600_000;
      expect(await maintenance.janitor()).toEqual({ removed: 0, orphans: 0 });
      expect(await slicesOf(kube, gpuA)).toHaveLength(1);
    });

    it('resyncs every known key, spread over the interval', async () => {
      const keys = ['node-a', 'node-b', 'node-c'].map((node) => ({
        node,
        driver: 'gpu.example.com',
      }));
      for (const key of keys) {
        await harness.registrations.add({
          ...key,
          endpoint: 'unix:///run/gpu.sock',
          version: 'v1.ResourcePublisher',
        });
      }
      await harness.syncer.close();
      expect(await maintenance.resync()).toBe(3);
      const delayed = await harness.queue.queue.getDelayed();
      expect(
        delayed.map((job) => `${job.data.node}/${job.data.reason}/${job.delay}`).sort(),
      ).toEqual(['node-a/resync/300000', 'node-b/resync/300000', 'node-c/resync/300000']);
    });
  });
});

/** A logger whose lines are parsed into `lines`. */
function capturedLogger() {
  const lines: { level: number; msg: string; err?: string }[] = [];
  const destination = new Writable({
    write: (chunk: Buffer, _encoding, callback) => {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      callback();
    },
  });
  return { lines, logger: createLogger({ service: 'test', level: 'debug', destination }) };
}

/** What BullMQ does with a job, whatever the reconciler does; no API server involved. */
describe('sync worker, job outcomes and schedules', () => {
  const redis = useRedisServer();
  const key = { node: 'node-a', driver: 'gpu.example.com' };
  let prefix: string;
  let queue: SyncQueue;
  let closers: (() => Promise<void> | void)[];

  beforeEach(() => {
    prefix = uniquePrefix('worker');
    queue = new SyncQueue({ connection: redis.redis, prefix });
    closers = [() => queue.close()];
  });
  afterEach(async () => {
    for (const close of closers.reverse()) await close();
  });

  function connection(): Redis {
    const opened = createRedisConnection({ target: { kind: 'server', url: redis.server.url } });
    closers.push(() => {
      opened.disconnect();
    });
    return opened;
  }

  async function startWorker(
    options: Pick<SyncWorkerOptions, 'reconciler'> & Partial<SyncWorkerOptions>,
  ): Promise<SyncWorker> {
    const worker = new SyncWorker({
      connection: connection(),
      prefix,
      logger,
      backoff: { baseMs: 5, capMs: 20 },
      ...options,
    });
    closers.push(() => worker.close());
    await worker.start();
    return worker;
  }

  function reconciler(
    outcome: (context: SyncContext) => Promise<ReconcileResult>,
  ): SyncWorkerOptions['reconciler'] {
    return { reconcile: (_key, context) => outcome(context) };
  }

  const busy = () => queue.queue.getJobCountByTypes('active', 'waiting', 'prioritized', 'delayed');

  it('does not retry a sync whose result asks for nothing more, and retries one that asks for backoff', async () => {
    const attempts: number[] = [];
    await startWorker({
      reconciler: reconciler(({ attempt }) => {
        attempts.push(attempt);
        return Promise.resolve(
          attempt < 3
            ? { outcome: 'retrying', news: false, requeueAfter: { kind: 'backoff' } }
            : { outcome: 'failed', news: false },
        );
      }),
    });
    await queue.enqueue(key, 'snapshot');

    await waitFor(async () => attempts.length === 3 && (await busy()) === 0, {
      description: 'the third attempt done',
    });
    expect(attempts).toEqual([1, 2, 3]);
    expect(await queue.queue.getFailedCount()).toBe(0);
  });

  it('retries an exception that escapes the reconciler (unexpected: never dropped), logging each', async () => {
    const { lines, logger: captured } = capturedLogger();
    const attempts: number[] = [];
    await startWorker({
      logger: captured,
      reconciler: reconciler(({ attempt }) => {
        attempts.push(attempt);
        return attempts.length < 2
          ? Promise.reject(new TerminalError('a bug', { code: 'error' }))
          : Promise.resolve({ outcome: 'synced', news: false });
      }),
    });
    await queue.enqueue(key, 'snapshot');

    await waitFor(async () => attempts.length === 2 && (await busy()) === 0, {
      description: 'the second attempt done',
    });
    expect(await queue.queue.getFailedCount()).toBe(0);
    expect(lines.filter((line) => line.level >= 40).map((line) => [line.msg, line.err])).toEqual([
      ['sync error, will retry', 'a bug'],
    ]);
  });

  it('retries with backoff when a transient error escapes the reconciler', async () => {
    const attempts: number[] = [];
    await startWorker({
      reconciler: reconciler(({ attempt }) => {
        attempts.push(attempt);
        return attempts.length < 3
          ? Promise.reject(new Error('connection reset'))
          : Promise.resolve({ outcome: 'synced', news: false });
      }),
    });
    await queue.enqueue(key, 'snapshot');

    await waitFor(async () => attempts.length === 3 && (await busy()) === 0, {
      description: 'the third attempt done',
    });
    expect(attempts).toEqual([1, 2, 3]);
    expect(await queue.queue.getFailedCount()).toBe(0);
  });

  it('runs the resync and the janitor on schedulers of their own queue, created again when Redis comes back empty', async () => {
    const runs = { resync: 0, janitor: 0 };
    await startWorker({
      reconciler: reconciler(() => Promise.resolve({ outcome: 'idle', news: false })),
      maintenance: {
        connection: connection(),
        jobs: {
          resyncIntervalMs: 600_000,
          resync: () => {
            runs.resync++;
            return Promise.resolve(0);
          },
          janitor: () => {
            runs.janitor++;
            return Promise.resolve({ removed: 0, orphans: 0 });
          },
        },
        janitorIntervalMs: 60_000,
      },
    });
    const maintenanceQueue = new Queue(MAINTENANCE_QUEUE_NAME, {
      connection: redis.redis,
      prefix: queuePrefix(prefix),
    });
    closers.push(() => maintenanceQueue.close());
    const schedules = async () =>
      (await maintenanceQueue.getJobSchedulers())
        .map((scheduler) => `${scheduler.key}/${String(scheduler.every)}`)
        .sort();

    // A scheduler with `every` runs its first job at once.
    await waitFor(() => runs.resync === 1 && runs.janitor === 1, {
      description: 'the first runs',
    });
    expect(await schedules()).toEqual(['janitor/60000', 'resync/600000']);
    // Nothing of it in the sync queue: its gauges and idle checks see syncs only.
    expect(
      await queue.queue.getJobCountByTypes('active', 'waiting', 'prioritized', 'delayed', 'failed'),
    ).toBe(0);

    await redis.server.restart({ empty: true });
    await waitFor(() => runs.resync === 2 && runs.janitor === 2, {
      description: 'the runs of the re-created schedulers',
    });
    expect(await schedules()).toEqual(['janitor/60000', 'resync/600000']);
  });
});
