import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { syncStatusSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory, SliceKey, SyncStatus } from '@slicekeeper/contracts';
import { SyncQueue } from '@slicekeeper/queue';
import { RegistrationStore } from '@slicekeeper/state';
import {
  RedisServer,
  freePort,
  ServiceProcess,
  readMetric,
  OtlpReceiver,
  uniquePrefix,
  waitFor,
} from '@slicekeeper/testing';

/** A slice-syncer replica as a separate process, as it runs in production. */
class SyncerProcess {
  private readonly process: ServiceProcess;

  constructor(env: Record<string, string>) {
    this.process = new ServiceProcess({ app: 'slice-syncer', env });
  }

  async started(): Promise<void> {
    await this.process.waitForLog('started');
  }

  async metric(name: string): Promise<number> {
    const started = await this.process.waitForLog('started');
    return readMetric(`${String(started.probes)}/metrics`, name);
  }

  kill(): Promise<void> {
    return this.process.kill();
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }

  /** The first log entry with message `msg`, once written. */
  log(msg: string): Promise<object> {
    return this.process.waitForLog(msg);
  }
}

interface ListedSlice {
  metadata: { name: string };
  spec: {
    pool: { generation: number; resourceSliceCount: number };
    devices?: { name: string; capacity?: Record<string, { value: string }> }[];
  };
}

describe('slice-syncer processes', () => {
  let redisServer: RedisServer;
  let kube: RunningKubeEmulator;
  let dir: string;
  let redis: Redis;
  const processes: SyncerProcess[] = [];
  const key: SliceKey = { node: 'node-a', driver: 'gpu.example.com' };

  beforeAll(async () => {
    redisServer = await RedisServer.start();
    redis = new Redis(redisServer.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await redisServer.stop();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'slice-syncer-'));
    kube = await startKubeEmulator({ port: 0, kubeconfigPath: join(dir, 'kubeconfig') });
    await fetch(`${kube.url}/api/v1/nodes`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } }),
    });
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.stop()));
    await kube.close();
    await rm(dir, { recursive: true, force: true });
  });

  function startReplica(
    prefix: string,
    probePort = 0,
    env: Record<string, string> = {},
  ): SyncerProcess {
    const replica = new SyncerProcess({
      REDIS_URL: redisServer.url,
      REDIS_PREFIX: prefix,
      KUBECONFIG: join(dir, 'kubeconfig'),
      PROBE_HOST: '127.0.0.1',
      PROBE_PORT: String(probePort),
      SYNC_LOCK_DURATION: '2s',
      SYNC_STALLED_INTERVAL: '1s',
      SYNC_WRITE_RATE: '1000',
      LOG_LEVEL: 'info',
      ...env,
    });
    processes.push(replica);
    return replica;
  }

  function inventory(version: number): DriverInventory {
    return {
      pools: [
        {
          name: 'node-a',
          scope: { kind: 'node' },
          devices: Array.from({ length: 8 }, (_, i) => ({
            name: `gpu-${i}`,
            capacity: { memory: { value: `${version + i}Mi` } },
          })),
        },
      ],
    };
  }

  async function publish(
    prefix: string,
    queue: SyncQueue,
    generation: number,
    store: RegistrationStore,
  ): Promise<void> {
    if (generation === 1)
      await store.add({
        ...key,
        endpoint: 'unix:///run/gpu.sock',
        version: 'v1.ResourcePublisher',
      });
    await redis.set(
      redisKeys(prefix).snapshot(key),
      JSON.stringify({
        generation,
        receivedAt: new Date().toISOString(),
        endpoint: 'unix:///run/gpu.sock',
        inventory: inventory(generation),
      }),
    );
    await queue.enqueue(key, 'snapshot');
  }

  async function status(prefix: string): Promise<SyncStatus | undefined> {
    const raw = await redis.get(redisKeys(prefix).syncStatus(key));
    return raw === null ? undefined : syncStatusSchema.parse(JSON.parse(raw));
  }

  async function slices(): Promise<ListedSlice[]> {
    const res = await fetch(`${kube.url}/apis/resource.k8s.io/v1/resourceslices`);
    return ((await res.json()) as { items: ListedSlice[] }).items;
  }

  it('is not ready until its cache of the cluster has its first list', async () => {
    kube.emulator.addLatency({ verb: 'list', resource: 'resourceslices', ms: 3_000, times: 1 });
    const port = await freePort();
    const replica = startReplica(uniquePrefix('ready'), port);
    const readyz = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return res === undefined ? undefined : { status: res.status, body: await res.text() };
    };
    const early = await waitFor(readyz, { description: 'the probe server answering' });
    expect(early).toMatchObject({
      status: 503,
      body: expect.stringMatching(/^cluster-cache: /m) as unknown,
    });
    await replica.started();
    expect(await readyz()).toMatchObject({ status: 200 });
  });

  it('with an OTLP endpoint, exports each sync as a trace of its message, with its writes', async () => {
    const receiver = await OtlpReceiver.start();
    try {
      const prefix = uniquePrefix('traced');
      const replica = startReplica(prefix, 0, {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        LOG_LEVEL: 'debug',
      });
      await replica.started();
      const store = new RegistrationStore({ redis, prefix });
      await store.add({
        ...key,
        endpoint: 'unix:///run/gpu.sock',
        version: 'v1.ResourcePublisher',
      });
      const message = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await redis.set(
        redisKeys(prefix).snapshot(key),
        JSON.stringify({
          generation: 1,
          receivedAt: new Date().toISOString(),
          endpoint: 'unix:///run/gpu.sock',
          traceparents: [message],
          inventory: inventory(1),
        }),
      );
      const queue = new SyncQueue({ connection: redis, prefix });
      await queue.enqueue(key, 'snapshot');
      await queue.close();

      const post = await receiver.waitFor(
        'the exported write span',
        (spans) => spans.find((span) => span.name === 'POST' && span.parentSpanId !== undefined),
        20_000,
      );
      const sync = receiver.spans().find((span) => span.spanId === post.parentSpanId);
      expect(sync).toMatchObject({
        name: 'process sync',
        traceId: '0af7651916cd43dd8448eb211c80319c',
        parentSpanId: 'b7ad6b7169203331',
      });
      expect((await status(prefix))?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
      expect(await replica.log('synced')).toMatchObject({
        trace_id: '0af7651916cd43dd8448eb211c80319c',
      });
    } finally {
      await receiver.close();
    }
  });

  it('two replicas never sync one key at once, and the last of 1,000 changes wins', async () => {
    const prefix = uniquePrefix('two');
    const replicas = [startReplica(prefix), startReplica(prefix)];
    await Promise.all(replicas.map((r) => r.started()));
    const queue = new SyncQueue({ connection: redis, prefix });
    const store = new RegistrationStore({ redis, prefix });
    for (let generation = 1; generation <= 1000; generation++)
      await publish(prefix, queue, generation, store);
    await waitFor(async () => (await status(prefix))?.snapshotGeneration === 1000, {
      timeoutMs: 30_000,
      description: 'generation 1000 synced',
    });
    await queue.close();

    const published = await slices();
    expect(published).toHaveLength(1);
    expect(published[0]?.spec.devices?.map((d) => d.capacity?.memory?.value)).toEqual(
      inventory(1000).pools[0]?.devices.map((d) => d.capacity?.memory?.value),
    );
    // Every sync takes the key's guard; a second sync of the key while one runs would be
    // refused and counted here.
    expect(await replicas[0]?.metric('slicekeeper_sync_overlaps_total')).toBe(0);
    expect(await replicas[1]?.metric('slicekeeper_sync_overlaps_total')).toBe(0);
    const syncs = (await replicas[0]?.metric('slicekeeper_syncs_total')) ?? 0;
    expect(syncs).toBeLessThan(1000);
  });

  it('a replica killed in the middle of a sync is taken over, with nothing duplicated or missing', async () => {
    const prefix = uniquePrefix('kill');
    const first = startReplica(prefix);
    await first.started();
    // Slow writes, so that the sync is still running when its replica dies.
    kube.emulator.addLatency({ verb: 'create', resource: 'resourceslices', ms: 1500, times: 1 });
    const queue = new SyncQueue({ connection: redis, prefix });
    const store = new RegistrationStore({ redis, prefix });
    const big: DriverInventory = {
      pools: [
        {
          name: 'node-a',
          scope: { kind: 'node' },
          devices: Array.from({ length: 300 }, (_, i) => ({ name: `gpu-${i}` })),
        },
      ],
    };
    await store.add({ ...key, endpoint: 'unix:///run/gpu.sock', version: 'v1.ResourcePublisher' });
    await redis.set(
      redisKeys(prefix).snapshot(key),
      JSON.stringify({
        generation: 1,
        receivedAt: new Date().toISOString(),
        endpoint: 'unix:///run/gpu.sock',
        inventory: big,
      }),
    );
    await queue.enqueue(key, 'snapshot');
    await waitFor(
      () =>
        kube.emulator
          .requestLog()
          .some((e) => e.verb === 'list' && e.resource === 'resourceslices'),
      { description: 'the sync to start' },
    );
    await first.kill();

    const second = startReplica(prefix);
    await second.started();
    await waitFor(async () => (await status(prefix))?.outcome === 'synced', {
      timeoutMs: 20_000,
      description: 'the other replica to finish',
    });
    await queue.close();

    const published = await slices();
    expect(published).toHaveLength(3);
    expect(new Set(published.map((s) => s.spec.pool.generation)).size).toBe(1);
    const devices = published.flatMap((s) => s.spec.devices ?? []).map((d) => d.name);
    expect(devices).toHaveLength(300);
    expect(new Set(devices).size).toBe(300);
  });
});
