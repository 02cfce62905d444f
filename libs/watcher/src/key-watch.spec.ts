import { ManualClock, flushPromises } from '@slicekeeper/time/testing';
import { KeyWatch } from './key-watch';
import type { KeyWatchOptions } from './key-watch';
import {
  KEY,
  MemoryWriter,
  RecordingQueue,
  ScriptedConnector,
  gpus,
  registration,
  silentLogger,
} from './testing/fakes';

const A = 'unix:///run/gpu/a.sock';
const B = 'unix:///run/gpu/b.sock';
const WIPE_DELAY = 30_000;

describe('KeyWatch', () => {
  let clock: ManualClock;
  let connector: ScriptedConnector;
  let writer: MemoryWriter;
  let queue: RecordingQueue;
  let watch: KeyWatch;

  function create(overrides: Partial<KeyWatchOptions> = {}): KeyWatch {
    return new KeyWatch({
      key: KEY,
      writer,
      queue,
      connector: connector.connect,
      clock,
      // Deterministic jitter: every delay is its base value.
      backoff: { random: () => 0 },
      wipeDelayMs: WIPE_DELAY,
      logger: silentLogger,
      ...overrides,
    });
  }

  beforeEach(() => {
    clock = new ManualClock();
    connector = new ScriptedConnector();
    writer = new MemoryWriter();
    queue = new RecordingQueue();
    watch = create();
  });

  afterEach(async () => {
    await watch.close('test over');
  });

  async function settle(): Promise<void> {
    await clock.advance(0);
  }

  it('publishes the first inventory: snapshot stored, sync enqueued, state streaming', async () => {
    watch.setRegistrations([registration(A, 1)]);
    expect(connector.last(A).request).toEqual({
      endpoint: A,
      nodeName: 'node-a',
      version: 'v1.ResourcePublisher',
    });
    expect(watch.state?.state).toBe('connecting');
    connector.last(A).send(gpus(8));
    await settle();
    expect(writer.inventory()).toEqual(gpus(8));
    expect(queue.reasons()).toEqual(['first-snapshot']);
    expect(writer.states.get('node-a/gpu.example.com')).toMatchObject({
      state: 'streaming',
      endpoint: A,
      reconnects: 0,
      lastMessageAt: new Date(clock.now()).toISOString(),
    });
  });

  it('enqueues nothing for a message equal to the stored snapshot', async () => {
    watch.setRegistrations([registration(A, 1)]);
    connector.last(A).send(gpus(8));
    await settle();
    connector.last(A).send(gpus(8));
    await settle();
    connector.last(A).send(gpus(8));
    await settle();
    expect(queue.reasons()).toEqual(['first-snapshot']);
    expect(writer.snapshots.get('node-a/gpu.example.com')?.generation).toBe(1);
    connector.last(A).send(gpus(8, '40Gi'));
    await settle();
    expect(queue.reasons()).toEqual(['first-snapshot', 'snapshot']);
    expect(writer.snapshots.get('node-a/gpu.example.com')?.generation).toBe(2);
  });

  it('coalesces a burst of 1,000 messages: the last one wins after a few writes', async () => {
    watch.setRegistrations([registration(A, 1)]);
    const call = connector.last(A);
    for (let i = 0; i < 1000; i++) call.send(gpus(8, `${i + 1}Gi`));
    await settle();
    expect(writer.inventory()).toEqual(gpus(8, '1000Gi'));
    expect(writer.stores).toBeLessThanOrEqual(3);
    expect(queue.jobs.length).toBeLessThanOrEqual(3);
  });

  describe('when the stream ends', () => {
    it('Unimplemented: withdraws at once and does not retry until re-registration', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).fail('unimplemented');
      await settle();
      expect(writer.inventory()).toBeUndefined();
      expect(queue.reasons()).toEqual(['first-snapshot', 'stream-lost']);
      expect(watch.state?.state).toBe('unimplemented');
      await clock.advance(3_600_000);
      expect(connector.to(A)).toHaveLength(1);
      expect(clock.pending()).toEqual([]);

      watch.setRegistrations([registration(A, 2)]);
      expect(connector.to(A)).toHaveLength(2);
      connector.last(A).send(gpus(8));
      await settle();
      expect(writer.inventory()).toEqual(gpus(8));
    });

    it('EOF: keeps the last inventory and stops watching until re-registration', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).end();
      await clock.advance(3_600_000);
      expect(writer.inventory()).toEqual(gpus(8));
      expect(queue.reasons()).toEqual(['first-snapshot']);
      expect(connector.to(A)).toHaveLength(1);
      expect(watch.state?.state).toBe('ended');
      expect(writer.states.get('node-a/gpu.example.com')?.state).toBe('ended');

      watch.setRegistrations([registration(A, 2)]);
      expect(connector.to(A)).toHaveLength(2);
      expect(connector.to(A)[0]?.cancelled).toBe(false);
    });

    it('any other error: reconnects after 5, 10, 20 … 180 s, and from 5 s after a message', async () => {
      watch.setRegistrations([registration(A, 1)]);
      const attemptTimes: number[] = [];
      const start = clock.now();
      for (let i = 0; i < 8; i++) {
        connector.last(A).fail('unavailable');
        const before = connector.to(A).length;
        while (connector.to(A).length === before) await clock.advance(1_000);
        attemptTimes.push(clock.now());
      }
      const gaps = attemptTimes.map((t, i) => (t - (attemptTimes[i - 1] ?? start)) / 1000);
      expect(gaps).toEqual([5, 10, 20, 40, 80, 160, 180, 180]);
      // Still trying, but past the wipe delay: the key shows as wiped.
      expect(watch.pluginStreams[0]?.state).toBe('connecting');
      expect(watch.state).toMatchObject({ state: 'wiped', reconnects: 8 });

      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).fail('unavailable');
      await settle();
      expect(watch.state).toMatchObject({ state: 'backoff', reconnects: 1 });
      expect(clock.pending()[0]).toBe(5_000);
    });
  });

  describe('rejected messages', () => {
    it('stores a rejection, keeps the wipe timer off while the driver answers, then takes the next good message', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector
        .last(A)
        .reject('message of 22020096 bytes exceeds the limit of 16777216 bytes', true);
      await settle();
      expect(writer.rejection()).toMatch(/exceeds the limit/);
      expect(queue.reasons()).toEqual(['first-snapshot', 'snapshot']);
      // The driver keeps sending what cannot be taken: far past the wipe delay, nothing is
      // withdrawn.
      for (let i = 0; i < 5; i++) {
        // Past the longest reconnect backoff: the stream has dialled again.
        await clock.advance(200_000);
        connector
          .last(A)
          .reject('message of 22020096 bytes exceeds the limit of 16777216 bytes', true);
        await settle();
      }
      expect(queue.reasons()).not.toContain('stream-lost');
      expect(watch.state?.state).not.toBe('wiped');
      await clock.advance(200_000);
      connector.last(A).send(gpus(4));
      await settle();
      expect(writer.inventory()).toEqual(gpus(4));
    });
  });

  describe('wipe delay', () => {
    it('withdraws the slices when no stream is live for the wipe delay', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).fail('unavailable');
      await clock.advance(WIPE_DELAY - 1);
      expect(writer.inventory()).toEqual(gpus(8));
      await clock.advance(1);
      expect(writer.inventory()).toBeUndefined();
      expect(queue.reasons()).toEqual(['first-snapshot', 'unreachable', 'stream-lost']);
      expect(watch.state?.state).toBe('wiped');
      expect(writer.states.get('node-a/gpu.example.com')?.state).toBe('wiped');

      // Still retrying; a later reconnect republishes.
      await clock.advance(60_000);
      connector.last(A).send(gpus(8));
      await settle();
      expect(writer.inventory()).toEqual(gpus(8));
      expect(queue.reasons()).toEqual([
        'first-snapshot',
        'unreachable',
        'stream-lost',
        'reachable',
      ]);
      expect(watch.state?.state).toBe('streaming');
    });

    it('is cancelled by a reconnect within the delay', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).fail('unavailable');
      await clock.advance(5_000);
      connector.last(A).fail('unavailable');
      await clock.advance(10_000);
      connector.last(A).send(gpus(8));
      await clock.advance(WIPE_DELAY * 10);
      expect(writer.inventory()).toEqual(gpus(8));
      // Tainted while lost, untainted when back; the inventory is the same: no new snapshot.
      expect(queue.reasons()).toEqual(['first-snapshot', 'unreachable', 'reachable']);
      expect(writer.snapshots.get('node-a/gpu.example.com')?.generation).toBe(1);
      expect(writer.states.get('node-a/gpu.example.com')?.unreachableSince).toBeUndefined();
    });

    it('counts from the start when the plugin never connects (watcher restarted, driver gone)', async () => {
      watch.setRegistrations([registration(A, 1)]);
      await clock.advance(WIPE_DELAY);
      expect(queue.reasons()).toEqual([]);
      expect(watch.state?.state).toBe('wiped');
    });
  });

  it('re-registration cancels the old stream and opens a new one without churn', async () => {
    watch.setRegistrations([registration(A, 1)]);
    connector.last(A).send(gpus(8));
    await settle();
    const old = connector.last(A);
    watch.setRegistrations([registration(A, 2)]);
    expect(old.cancelled).toBe(true);
    expect(connector.to(A)).toHaveLength(2);
    old.send(gpus(8, '1Gi'));
    connector.last(A).send(gpus(8));
    await settle();
    expect(writer.inventory()).toEqual(gpus(8));
    expect(queue.reasons()).toEqual(['first-snapshot']);
  });

  it('deregistration of an endpoint closes its stream', () => {
    watch.setRegistrations([registration(A, 1), registration(B, 2)]);
    watch.setRegistrations([registration(B, 2)]);
    expect(connector.last(A).cancelled).toBe(true);
    expect(connector.last(B).cancelled).toBe(false);
  });

  describe('several endpoints for one key (rolling driver update)', () => {
    it('streams from the most recently registered endpoint that is connected', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8, '40Gi'));
      await settle();
      watch.setRegistrations([registration(A, 1), registration(B, 2)]);
      // B not connected yet: A keeps publishing.
      connector.last(A).send(gpus(8, '41Gi'));
      await settle();
      expect(writer.inventory()).toEqual(gpus(8, '41Gi'));

      connector.last(B).send(gpus(8, '80Gi'));
      await settle();
      expect(writer.snapshots.get('node-a/gpu.example.com')?.endpoint).toBe(B);
      // A is ignored while B streams.
      connector.last(A).send(gpus(8, '42Gi'));
      await settle();
      expect(writer.inventory()).toEqual(gpus(8, '80Gi'));

      // B fails: A is connected, so it takes over at once; no wipe.
      connector.last(B).fail('unavailable');
      await settle();
      expect(writer.inventory()).toEqual(gpus(8, '42Gi'));
      await clock.advance(WIPE_DELAY);
      expect(writer.inventory()).toBeDefined();
      expect(watch.state).toMatchObject({ state: 'streaming', endpoint: A });
    });
  });

  it('rewrites the live snapshot on republish (Redis came back empty)', async () => {
    watch.setRegistrations([registration(A, 1)]);
    connector.last(A).send(gpus(8));
    await settle();
    writer.snapshots.clear();
    watch.republish();
    await settle();
    expect(writer.inventory()).toEqual(gpus(8));
    expect(queue.reasons()).toEqual(['first-snapshot', 'snapshot']);
  });

  it('retries a failed Redis write and still publishes the latest inventory', async () => {
    let failures = 1;
    const flaky = new MemoryWriter();
    const store = flaky.store.bind(flaky);
    flaky.store = async (...args) => {
      if (failures-- > 0) throw new Error('connection lost');
      return store(...args);
    };
    writer = flaky;
    await watch.close('replaced');
    watch = create();
    watch.setRegistrations([registration(A, 1)]);
    connector.last(A).send(gpus(8, '1Gi'));
    await settle();
    expect(flaky.inventory()).toBeUndefined();
    connector.last(A).send(gpus(8, '2Gi'));
    await clock.advance(1_000);
    expect(flaky.inventory()).toEqual(gpus(8, '2Gi'));
    expect(queue.reasons()).toEqual(['first-snapshot']);
  });

  it('closes idempotently and stops every stream and timer', async () => {
    watch.setRegistrations([registration(A, 1)]);
    connector.last(A).fail('unavailable');
    await settle();
    const first = watch.close('shutdown');
    expect(watch.close('again')).toBe(first);
    await first;
    expect(clock.pending()).toEqual([]);
    await flushPromises();
  });

  describe('driver unreachable', () => {
    it('records since when the stream is lost before it asks for the tainting sync', async () => {
      const seen: (string | undefined)[] = [];
      queue.enqueue = (key, reason) => {
        seen.push(
          `${reason}:${writer.states.get('node-a/gpu.example.com')?.unreachableSince ?? '-'}`,
        );
        queue.jobs.push({ key: `${key.node}/${key.driver}`, reason });
        return Promise.resolve();
      };
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      const lostAt = new Date(clock.now()).toISOString();
      connector.last(A).fail('unavailable');
      await settle();
      expect(seen).toEqual(['first-snapshot:-', `unreachable:${lostAt}`]);

      // Dialling again and failing again: still the same loss, nothing new asked for.
      await clock.advance(5_000);
      connector.last(A).fail('unavailable');
      await settle();
      expect(queue.reasons()).toEqual(['first-snapshot', 'unreachable']);
      expect(writer.states.get('node-a/gpu.example.com')?.unreachableSince).toBe(lostAt);
    });

    it('is not unreachable when the plugin ends its stream (EOF) or sends what cannot be taken', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).reject('message of 22020096 bytes exceeds the limit', true);
      await clock.advance(10_000);
      expect(queue.reasons()).not.toContain('unreachable');
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).end();
      await settle();
      expect(queue.reasons()).not.toContain('unreachable');
      expect(writer.states.get('node-a/gpu.example.com')?.unreachableSince).toBeUndefined();
    });
  });

  describe('device health', () => {
    function withHealth(health: {
      status: 'healthy' | 'unhealthy' | 'unknown';
      timeoutSeconds?: number;
    }) {
      const inventory = gpus(2);
      const [pool] = inventory.pools;
      if (pool?.devices[0] !== undefined) pool.devices[0] = { ...pool.devices[0], health };
      return inventory;
    }

    it('asks for a health sync when only health changed', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(withHealth({ status: 'healthy' }));
      await settle();
      connector.last(A).send(withHealth({ status: 'unhealthy' }));
      await settle();
      connector.last(A).send(gpus(2, '40Gi'));
      await settle();
      expect(queue.reasons()).toEqual(['first-snapshot', 'health', 'snapshot']);
    });

    it('makes a device unknown when its timeout passes without a message, and takes the next message as is', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(withHealth({ status: 'healthy', timeoutSeconds: 30 }));
      await settle();
      // Messages restart the clock, even when they change nothing.
      await clock.advance(20_000);
      connector.last(A).send(withHealth({ status: 'healthy', timeoutSeconds: 30 }));
      await clock.advance(29_999);
      expect(writer.inventory()?.pools[0]?.devices[0]?.health?.status).toBe('healthy');
      await clock.advance(1);
      expect(writer.inventory()?.pools[0]?.devices[0]?.health).toEqual({
        status: 'unknown',
        message: 'no health update from the driver for 30s (its timeout)',
      });
      expect(writer.inventory()?.pools[0]?.devices[1]?.health).toBeUndefined();
      expect(queue.reasons()).toEqual(['first-snapshot', 'health']);

      connector.last(A).send(withHealth({ status: 'healthy', timeoutSeconds: 30 }));
      await settle();
      expect(writer.inventory()?.pools[0]?.devices[0]?.health?.status).toBe('healthy');
      expect(queue.reasons()).toEqual(['first-snapshot', 'health', 'health']);
    });
  });

  describe('publish feedback', () => {
    const status = {
      outcome: 'synced' as const,
      snapshotGeneration: 1,
      slices: ['00000-gpu.example.com-node-a-x'],
      pools: [],
      attempt: 1,
      startedAt: '2026-11-24T10:00:00Z',
      finishedAt: '2026-11-24T10:00:00Z',
      writes: 1,
    };

    it('tells the live stream each outcome once', async () => {
      watch.setRegistrations([registration(A, 1)]);
      watch.notify(status);
      expect(connector.last(A).told).toEqual([]);
      connector.last(A).send(gpus(8));
      await settle();
      watch.notify(status);
      watch.notify(status);
      watch.notify({ ...status, outcome: 'invalid', error: 'bad' });
      await settle();
      expect(connector.last(A).told.map((s) => s.outcome)).toEqual(['synced', 'invalid']);
    });

    it('never asks again on a connection that answered Unimplemented; a new connection is asked', async () => {
      watch.setRegistrations([registration(A, 1)]);
      connector.last(A).send(gpus(8));
      await settle();
      connector.last(A).answer = 'unimplemented';
      watch.notify(status);
      await settle();
      connector.last(A).answer = 'delivered';
      watch.notify({ ...status, outcome: 'invalid', error: 'bad' });
      await settle();
      expect(connector.last(A).told).toEqual([]);

      connector.last(A).fail('unavailable');
      await clock.advance(5_000);
      connector.last(A).send(gpus(8));
      await settle();
      watch.notify({ ...status, snapshotGeneration: 3 });
      await settle();
      expect(connector.last(A).told.map((s) => s.snapshotGeneration)).toEqual([3]);
      // The same outcome for a newer snapshot, into the same slices: nothing new to tell.
      watch.notify({ ...status, snapshotGeneration: 4 });
      await settle();
      expect(connector.last(A).told).toHaveLength(1);
    });
  });
});
