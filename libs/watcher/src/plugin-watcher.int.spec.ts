import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { inventorySnapshotSchema, streamStateSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { SliceKey, SyncReason, SyncStatus } from '@slicekeeper/contracts';
import { Writable } from 'node:stream';
import { DriverServer } from '@slicekeeper/driver-kit';
import type { DriverServerOptions, PublishFeedback } from '@slicekeeper/driver-kit';
import { SyncQueue } from '@slicekeeper/queue';
import { RegistrationStore, SyncRecords } from '@slicekeeper/state';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { formatTraceparent } from '@slicekeeper/telemetry';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import { PluginWatcher } from './plugin-watcher';
import type { PluginWatcherOptions } from './plugin-watcher';
import { gpus, silentLogger } from './testing/fakes';

const DRIVER = 'gpu.example.com';
const WIPE_DELAY_MS = 400;

describe('PluginWatcher (Redis + gRPC)', () => {
  let server: RedisServer;
  let redis: Redis;
  let dir: string;
  let prefix: string;
  let registry: RegistrationStore;
  let queue: SyncQueue;
  let enqueued: { key: string; reason: SyncReason }[];
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: null });
    dir = await mkdtemp(join(tmpdir(), 'sk-watcher-'));
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    prefix = uniquePrefix('watcher');
    registry = new RegistrationStore({ redis, prefix });
    queue = new SyncQueue({ connection: redis, prefix });
    enqueued = [];
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await queue.close();
  });

  async function driver(
    node: string,
    name = node,
    options: Partial<DriverServerOptions> = {},
  ): Promise<DriverServer> {
    const plugin = new DriverServer({
      driverName: DRIVER,
      endpoint: `unix://${join(dir, `${name}.sock`)}`,
      inventory: gpus(8),
      ...options,
    });
    await plugin.start();
    closers.push(() => plugin.close());
    return plugin;
  }

  async function watcher(overrides: Partial<PluginWatcherOptions> = {}): Promise<PluginWatcher> {
    const instance = new PluginWatcher({
      redis,
      prefix,
      queue: {
        enqueue: async (key: SliceKey, reason: SyncReason) => {
          enqueued.push({ key: `${key.node}/${key.driver}`, reason });
          await queue.enqueue(key, reason);
        },
      },
      wipeDelayMs: WIPE_DELAY_MS,
      backoff: { initialMs: 50, maxMs: 200 },
      logger: silentLogger,
      ...overrides,
    });
    await instance.start();
    closers.push(() => instance.close());
    return instance;
  }

  async function register(node: string, plugin: DriverServer): Promise<void> {
    await registry.add({
      node,
      driver: DRIVER,
      endpoint: plugin.endpoint,
      version: 'v1.ResourcePublisher',
    });
  }

  async function snapshot(node: string) {
    const raw = await redis.get(redisKeys(prefix).snapshot({ node, driver: DRIVER }));
    return raw === null ? undefined : inventorySnapshotSchema.parse(JSON.parse(raw));
  }

  /** What the syncer's finish records of `generation` (see `SyncTurn.finish`). */
  async function syncedAt(node: string, generation: number): Promise<void> {
    const keys = redisKeys(prefix);
    await redis.set(
      keys.syncStatus({ node, driver: DRIVER }),
      JSON.stringify({ outcome: 'synced', snapshotGeneration: generation }),
    );
    await redis.set(keys.syncedGeneration({ node, driver: DRIVER }), String(generation));
  }

  async function streamState(node: string) {
    const raw = await redis.get(redisKeys(prefix).streamState({ node, driver: DRIVER }));
    return raw === null ? undefined : streamStateSchema.parse(JSON.parse(raw));
  }

  it('publishes every registered plugin and follows new registrations within a second', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'), { description: 'first snapshot' });
    expect((await snapshot('node-a'))?.inventory).toEqual(gpus(8));
    // A snapshot is stored before its sync is asked for.
    await waitFor(
      async () => {
        // Every sync job has a priority: a waiting one is `prioritized`.
        const counts = await queue.queue.getJobCounts('waiting', 'prioritized');
        return (counts.waiting ?? 0) + (counts.prioritized ?? 0) === 1;
      },
      {
        description: 'the sync job',
      },
    );
    await waitFor(async () => (await streamState('node-a'))?.state === 'streaming');

    const b = await driver('node-b');
    await register('node-b', b);
    await waitFor(() => snapshot('node-b'), { description: 'the new registration followed' });
    await waitFor(() => enqueued.length >= 2, { description: 'the sync asked for' });
    expect(enqueued).toEqual([
      { key: 'node-a/gpu.example.com', reason: 'first-snapshot' },
      { key: 'node-b/gpu.example.com', reason: 'first-snapshot' },
    ]);
  });

  it("traces a driver's message into the stored snapshot, whose traceparents the syncer reads", async () => {
    const recorded = recordedTracing('plugin-watcher');
    closers.push(() => recorded.shutdown());
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const a = await driver('node-a');
    a.publish(gpus(4), { traceparent });
    await register('node-a', a);
    await watcher({ tracing: recorded.tracing });
    await waitFor(() => recorded.named('publish sync').length > 0, { description: 'the sync' });

    const [receive] = recorded.named('receive inventory');
    const [store] = recorded.named('store snapshot');
    expect(receive?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(store?.parentSpanContext?.spanId).toBe(receive?.spanContext().spanId);
    expect(recorded.named('publish sync')[0]?.parentSpanContext?.spanId).toBe(
      store?.spanContext().spanId,
    );
    const stored = await snapshot('node-a');
    const context = receive?.spanContext();
    expect(stored?.traceparents).toEqual(context && [formatTraceparent(context)]);
    expect(stored?.traceparents?.[0]).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-/);
    expect(stored?.inventory).toEqual(gpus(4));
  });

  it('stores changes, ignores repeats, and withdraws on Unimplemented', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'));
    a.publish(gpus(8));
    a.publish(gpus(4));
    await waitFor(async () => (await snapshot('node-a'))?.generation === 2);
    expect((await snapshot('node-a'))?.inventory).toEqual(gpus(4));
    // A snapshot is stored before its sync is asked for.
    await waitFor(() => enqueued.length >= 2, { description: 'the sync asked for' });
    expect(enqueued.map((e) => e.reason)).toEqual(['first-snapshot', 'snapshot']);

    a.setFault('unimplemented');
    await waitFor(async () => (await streamState('node-a'))?.state === 'unimplemented');
    expect(await snapshot('node-a')).toBeUndefined();
    await waitFor(() => enqueued.length >= 3, { description: 'the sync asked for' });
    expect(enqueued.map((e) => e.reason)).toEqual(['first-snapshot', 'snapshot', 'stream-lost']);
    expect(a.watchCalls).toBe(1);
  });

  it('withdraws after the wipe delay when the driver is gone, and republishes when it is back', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'));
    await a.close();
    await waitFor(async () => (await streamState('node-a'))?.state === 'backoff');
    await waitFor(async () => (await snapshot('node-a')) === undefined, {
      description: 'wiped',
    });
    await waitFor(async () => (await streamState('node-a'))?.state === 'wiped');

    const back = await driver('node-a');
    await waitFor(() => snapshot('node-a'), { description: 'republished' });
    expect(back.openStreams).toBe(1);
    // A snapshot is stored before its sync is asked for.
    await waitFor(() => enqueued.length >= 4, { description: 'the sync asked for' });
    // Lost: tainted at once, withdrawn after the wipe delay; back: the taint goes (and the
    // republished snapshot comes with the same sync).
    expect(enqueued.map((e) => e.reason)).toEqual([
      'first-snapshot',
      'unreachable',
      'stream-lost',
      'reachable',
    ]);
  });

  it('keeps the last inventory on EOF', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'));
    a.endStreams();
    await waitFor(async () => (await streamState('node-a'))?.state === 'ended');
    expect((await snapshot('node-a'))?.inventory).toEqual(gpus(8));
    expect(a.watchCalls).toBe(1);
  });

  it('re-registration opens a new stream; deregistration closes it', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'));
    await syncedAt('node-a', 1);
    await register('node-a', a);
    await waitFor(() => a.watchCalls === 2);
    await waitFor(() => a.openStreams === 1);
    await registry.remove({ node: 'node-a', driver: DRIVER });
    await waitFor(() => a.openStreams === 0, { description: 'stream closed' });
    expect((await snapshot('node-a'))?.generation).toBe(1);
    expect(enqueued).toHaveLength(1);
  });

  it('restarts without churn: unchanged inventories write nothing', async () => {
    const a = await driver('node-a');
    const b = await driver('node-b');
    await register('node-a', a);
    await register('node-b', b);
    const first = await watcher();
    await waitFor(async () => (await snapshot('node-a')) && (await snapshot('node-b')));
    await first.close();
    // What the syncer records once it published them.
    await syncedAt('node-a', 1);
    await syncedAt('node-b', 1);
    const before = enqueued.length;

    const metrics = createMetricsRegistry('plugin-watcher');
    await watcher({ metrics });
    await waitFor(
      async () =>
        (await metrics.metrics()).includes(
          'snapshots_total{result="unchanged",service="plugin-watcher"} 2',
        ),
      {
        description: 'both resumed streams compared with their snapshots',
      },
    );
    expect(a.watchCalls + b.watchCalls).toBe(4);
    expect((await snapshot('node-a'))?.generation).toBe(1);
    expect((await snapshot('node-b'))?.generation).toBe(1);
    expect(enqueued).toHaveLength(before);
  });

  it('asks again for the syncs a crash between store and enqueue lost', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    const first = await watcher({ queue: { enqueue: () => Promise.resolve() } });
    await waitFor(() => snapshot('node-a'), { description: 'stored, its enqueue lost' });
    await first.close();
    await watcher();
    await waitFor(() => enqueued.some((e) => e.key === `node-a/${DRIVER}`), {
      description: 'the owed sync asked for',
    });
    expect((await snapshot('node-a'))?.generation).toBe(1);
  });

  it('restores its live registrations and snapshots when Redis comes back empty', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'), { description: 'first snapshot' });
    const key = { node: 'node-a', driver: DRIVER };
    const [registration] = await registry.get(key);
    await redis.flushall();
    redis.disconnect(true);
    await waitFor(() => snapshot('node-a'), { description: 'snapshot rewritten' });
    await waitFor(async () => (await registry.get(key)).length === 1, {
      description: 'registration restored',
    });
    expect(await registry.get(key)).toEqual([registration]);
    expect((await registry.all()).map((r) => r.endpoint)).toEqual([a.endpoint]);
    // A later registration still counts as the most recent one.
    const again = await registry.add({
      ...key,
      endpoint: a.endpoint,
      version: 'v1.ResourcePublisher',
    });
    expect(again.registration.sequence).toBeGreaterThan(registration?.sequence ?? Infinity);
  });

  it('rewrites its live snapshots when Redis comes back without them', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    await watcher();
    await waitFor(() => snapshot('node-a'));
    const keys = redisKeys(prefix);
    await redis.del(keys.snapshot({ node: 'node-a', driver: DRIVER }));
    redis.disconnect(true);
    await waitFor(() => snapshot('node-a'), { description: 'snapshot rewritten' });
    expect((await snapshot('node-a'))?.inventory).toEqual(gpus(8));
  });

  it('in node mode, watches only its node’s plugins', async () => {
    const a = await driver('node-a');
    const b = await driver('node-b');
    await register('node-a', a);
    await register('node-b', b);
    const instance = await watcher({ nodeName: 'node-b' });
    await waitFor(() => snapshot('node-b'));
    expect(instance.keys).toEqual(['node-b/gpu.example.com']);
    expect(a.watchCalls).toBe(0);
  });

  it('exports metrics', async () => {
    const a = await driver('node-a');
    await register('node-a', a);
    const metrics = createMetricsRegistry('plugin-watcher');
    await watcher({ metrics });
    await waitFor(() => snapshot('node-a'));
    const text = await metrics.metrics();
    expect(text).toMatch(
      /slicekeeper_watcher_streams\{state="streaming",service="plugin-watcher"\} 1/,
    );
    expect(text).toMatch(/slicekeeper_watcher_messages_total\{service="plugin-watcher"\} 1/);
    expect(text).toMatch(
      /slicekeeper_watcher_snapshots_total\{result="stored",service="plugin-watcher"\} 1/,
    );
    expect(text).toMatch(/slicekeeper_watcher_snapshot_bytes_count\{service="plugin-watcher"\} 1/);
  });

  describe('publish feedback', () => {
    const published: SyncStatus = {
      outcome: 'synced',
      snapshotGeneration: 1,
      slices: ['00000-gpu.example.com-node-a-abcde'],
      pools: [],
      attempt: 1,
      startedAt: '2026-11-24T12:00:00.000Z',
      finishedAt: '2026-11-24T12:00:00.000Z',
      writes: 1,
    };
    const refused: SyncStatus = {
      ...published,
      outcome: 'invalid',
      snapshotGeneration: 2,
      error: 'invalid driver resources: pools[0].devices[0].name: Invalid value',
      problems: [{ field: 'pools[0].devices[0].name', message: 'Invalid value' }],
    };

    /** Records a sync's outcome as the syncer does, announcing it. */
    async function announce(status: SyncStatus, node = 'node-a'): Promise<void> {
      const turn = await new SyncRecords({ redis, prefix }).begin(
        { node, driver: DRIVER },
        `job-${status.snapshotGeneration}`,
      );
      if (turn === undefined) throw new Error('guard held');
      await turn.finish(status, { announce: true });
    }

    function subscriber(): Redis {
      const connection = new Redis(server.url, { maxRetriesPerRequest: null });
      closers.push(() => {
        connection.disconnect();
        return Promise.resolve();
      });
      return connection;
    }

    it('tells the driver each announced outcome over its stream', async () => {
      const told: PublishFeedback[] = [];
      const a = await driver('node-a', 'node-a', { onFeedback: (f) => told.push(f) });
      await register('node-a', a);
      await watcher({ feedbackSubscriber: subscriber() });
      await waitFor(() => snapshot('node-a'), { description: 'first snapshot' });

      await announce(published);
      await waitFor(() => told.length === 1, { description: 'the published outcome told' });
      await announce(refused);
      await waitFor(() => told.length === 2, { description: 'the invalid outcome told' });
      expect(told).toEqual([
        expect.objectContaining({
          nodeName: 'node-a',
          outcome: 'synced',
          snapshotGeneration: 1,
          sliceNames: published.slices,
        }),
        expect.objectContaining({ outcome: 'invalid', problems: refused.problems }),
      ]);
    });

    it('does not ask again a driver that answered Unimplemented on that connection', async () => {
      const lines: string[] = [];
      const destination = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      });
      const logger = createLogger({ service: 'test', level: 'info', destination });
      const a = await driver('node-a', 'node-a', { servePublishStatus: false });
      const told: PublishFeedback[] = [];
      const b = await driver('node-b', 'node-b', { onFeedback: (f) => told.push(f) });
      await register('node-a', a);
      await register('node-b', b);
      await watcher({ feedbackSubscriber: subscriber(), logger });
      await waitFor(async () => (await snapshot('node-a')) !== undefined, {
        description: 'the first snapshots',
      });
      await waitFor(async () => (await snapshot('node-b')) !== undefined);

      await announce(published);
      const deaf = (line: string) => line.includes('does not take publish feedback');
      await waitFor(() => lines.some(deaf), { description: 'the Unimplemented answer seen' });
      await announce(refused);
      // Announcements reach the watcher in order: once node-b's driver has heard of its own
      // (twice, a round trip each), node-a's refusal has long been handled.
      await announce(published, 'node-b');
      await waitFor(() => told.length === 1, { description: "node-b's outcome told" });
      await announce(refused, 'node-b');
      await waitFor(() => told.length === 2, { description: "node-b's second outcome told" });
      expect(lines.filter(deaf)).toHaveLength(1);
    });
  });
});
