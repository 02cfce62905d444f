import { inventorySnapshotSchema, streamStateSchema } from '@slicekeeper/contracts';
import type { StreamState } from '@slicekeeper/contracts';
import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { RegistrationStore } from './registration-store';
import { SnapshotWriter } from './snapshot-writer';
import { SyncRecords } from './sync-records';
import { KEY, gpus, redisKeys } from './testing';

describe('SnapshotWriter', () => {
  const db = useRedisServer();
  let prefix: string;
  let writer: SnapshotWriter;
  const at = new Date('2026-11-21T12:00:00.000Z');
  let registry: RegistrationStore;
  const registration = {
    ...KEY,
    endpoint: 'unix:///run/gpu.sock',
    version: 'v1.ResourcePublisher',
  };
  beforeEach(async () => {
    prefix = uniquePrefix('writer');
    writer = new SnapshotWriter({ redis: db.redis, prefix });
    registry = new RegistrationStore({ redis: db.redis, prefix });
    await registry.add(registration);
  });

  /** What the syncer records once it has published `generation`: its finish, as it runs it. */
  async function synced(generation: number): Promise<void> {
    const turn = await new SyncRecords({ redis: db.redis, prefix }).begin(KEY, 'job-1');
    if (turn === undefined) throw new Error('guard held');
    const at = '2026-11-21T12:00:01.000Z';
    await turn.finish({
      outcome: 'synced',
      snapshotGeneration: generation,
      slices: [],
      pools: [],
      attempt: 1,
      startedAt: at,
      finishedAt: at,
      writes: 0,
    });
  }

  async function stored() {
    const raw = await db.redis.get(redisKeys(prefix).snapshot(KEY));
    return raw === null ? undefined : inventorySnapshotSchema.parse(JSON.parse(raw));
  }

  async function streamState() {
    const raw = await db.redis.get(redisKeys(prefix).streamState(KEY));
    return raw === null ? undefined : streamStateSchema.parse(JSON.parse(raw));
  }

  it('stores a snapshot the syncer can read, with generation, time and endpoint', async () => {
    expect(await writer.store(KEY, 'unix:///run/gpu.sock', gpus(8), at)).toMatchObject({
      kind: 'stored',
      generation: 1,
    });
    expect(await stored()).toEqual({
      generation: 1,
      receivedAt: '2026-11-21T12:00:00.000Z',
      endpoint: 'unix:///run/gpu.sock',
      inventory: gpus(8),
    });
  });

  it('writes nothing for an equal inventory, whatever the order of its map entries', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    await synced(1);
    const reordered = gpus(2);
    const device = reordered.pools[0]?.devices[0];
    if (device?.attributes !== undefined) {
      device.attributes = { index: { int: 0 }, model: { string: 'H100' } };
    }
    expect(await writer.store(KEY, 'a:2', reordered, new Date())).toEqual({ kind: 'unchanged' });
    expect((await stored())?.endpoint).toBe('a:1');
    expect(await writer.store(KEY, 'a:1', gpus(3), at)).toMatchObject({ generation: 2 });
  });

  it('withdraws by deleting the snapshot; generations keep rising', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    expect(await writer.withdraw(KEY)).toEqual({ kind: 'withdrawn' });
    expect(await writer.withdraw(KEY)).toEqual({ kind: 'absent' });
    expect(await stored()).toBeUndefined();
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toMatchObject({ generation: 2 });
  });

  it('records the stream state that explains a withdrawal in the same step', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    const streaming: StreamState = {
      state: 'streaming',
      endpoint: 'a:1',
      since: at.toISOString(),
      reconnects: 0,
    };
    await writer.writeState(KEY, streaming);
    const wiped: StreamState = { ...streaming, state: 'wiped' };
    expect(await writer.withdraw(KEY, wiped)).toEqual({ kind: 'withdrawn' });
    expect(await stored()).toBeUndefined();
    expect(await streamState()).toEqual(wiped);
    await writer.withdraw(KEY);
    expect(await streamState()).toEqual(wiped);
  });

  it('writes the stream state with a stored snapshot, and only with one', async () => {
    const streaming = (lastMessageAt: string): StreamState => ({
      state: 'streaming',
      endpoint: 'a:1',
      since: at.toISOString(),
      reconnects: 0,
      lastMessageAt,
    });
    const first = streaming('2026-11-21T12:00:01.000Z');
    expect(await writer.store(KEY, 'a:1', gpus(2), at, { state: first })).toMatchObject({
      kind: 'stored',
    });
    expect(await streamState()).toEqual(first);
    // Unsynced, then unchanged: the snapshot is not written, nor is the state.
    const later = streaming('2026-11-21T12:00:02.000Z');
    expect(await writer.store(KEY, 'a:1', gpus(2), at, { state: later })).toEqual({
      kind: 'unsynced',
    });
    await synced(1);
    expect(await writer.store(KEY, 'a:1', gpus(2), at, { state: later })).toEqual({
      kind: 'unchanged',
    });
    expect(await streamState()).toEqual(first);
    expect(await writer.reject(KEY, 'a:1', 'too large', at, { state: later })).toMatchObject({
      kind: 'stored',
    });
    expect(await streamState()).toEqual(later);
    // A removed key stores nothing.
    await db.redis.set(redisKeys(prefix).removal(KEY), '{}');
    const removed = streaming('2026-11-21T12:00:03.000Z');
    expect(await writer.store(KEY, 'a:1', gpus(3), at, { state: removed })).toEqual({
      kind: 'unregistered',
    });
    expect(await streamState()).toEqual(later);
  });

  it('writes nothing while another replica holds the lease when fenced by an owner', async () => {
    const fenced = new SnapshotWriter({ redis: db.redis, prefix, owner: 'replica-1' });
    await db.redis.set(redisKeys(prefix).watcherLease(KEY), 'replica-2');
    expect(await fenced.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'not-owner' });
    await db.redis.set(redisKeys(prefix).watcherLease(KEY), 'replica-1');
    expect(await fenced.store(KEY, 'a:1', gpus(2), at)).toMatchObject({ kind: 'stored' });
    await db.redis.set(redisKeys(prefix).watcherLease(KEY), 'replica-2');
    expect(await fenced.withdraw(KEY)).toEqual({ kind: 'not-owner' });
    expect(await stored()).toBeDefined();
  });

  it('asks for the sync again of an equal inventory no sync has finished', async () => {
    // A watcher that crashed between its store and its enqueue: the next watcher's store of the
    // same inventory must still lead to a sync.
    await writer.store(KEY, 'a:1', gpus(2), at);
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'unsynced' });
    await synced(1);
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'unchanged' });
  });

  it('asks once more after an upgrade: a status without the synced generation owes a sync', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    // What a syncer of the previous release left: only the status JSON.
    await db.redis.set(
      redisKeys(prefix).syncStatus(KEY),
      JSON.stringify({ outcome: 'synced', snapshotGeneration: 1 }),
    );
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'unsynced' });
    await synced(1);
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'unchanged' });
  });

  it('asks again for a newer snapshot than the one last synced', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    await synced(1);
    await writer.store(KEY, 'a:1', gpus(4), at);
    expect(await writer.store(KEY, 'a:1', gpus(4), at)).toEqual({ kind: 'unsynced' });
    await synced(2);
    expect(await writer.store(KEY, 'a:1', gpus(4), at)).toEqual({ kind: 'unchanged' });
  });

  it('stores nothing for a key that was removed, until it registers again', async () => {
    await registry.remove(KEY, { graceMs: 30_000 });
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'unregistered' });
    expect(await writer.reject(KEY, 'a:1', 'bad', at)).toEqual({ kind: 'unregistered' });
    expect(await stored()).toBeUndefined();
    await registry.add(registration);
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toMatchObject({ kind: 'stored' });
  });

  it('stores a rejected message in place of the inventory, once', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    expect(await writer.reject(KEY, 'a:1', 'message of 2 MiB exceeds 1 MiB', at)).toMatchObject({
      kind: 'stored',
      generation: 2,
    });
    expect(await stored()).toEqual({
      generation: 2,
      receivedAt: '2026-11-21T12:00:00.000Z',
      endpoint: 'a:1',
      rejected: 'message of 2 MiB exceeds 1 MiB',
    });
    await synced(2);
    expect(await writer.reject(KEY, 'a:1', 'message of 2 MiB exceeds 1 MiB', at)).toEqual({
      kind: 'unchanged',
    });
    expect(await writer.store(KEY, 'a:1', gpus(2), at)).toMatchObject({ generation: 3 });
  });

  it('restores the registrations of a live stream after Redis lost them, never of a removed key', async () => {
    const [stored] = await registry.get(KEY);
    if (stored === undefined) throw new Error('not registered');
    await db.redis.flushall();
    const fenced = new SnapshotWriter({
      redis: db.redis,
      prefix,
      owner: 'replica-1',
      leaseMs: 5000,
    });
    expect(await fenced.restore(KEY, [stored])).toEqual({ kind: 'restored', registrations: 1 });
    expect(await registry.get(KEY)).toEqual([stored]);
    // The lease went with the data: it is taken back, so that the fenced writes go on.
    expect(await db.redis.get(redisKeys(prefix).watcherLease(KEY))).toBe('replica-1');
    expect(await fenced.store(KEY, 'a:1', gpus(2), at)).toMatchObject({ kind: 'stored' });

    await db.redis.set(redisKeys(prefix).watcherLease(KEY), 'replica-2');
    expect(await fenced.restore(KEY, [stored])).toEqual({ kind: 'not-owner' });
    await db.redis.del(redisKeys(prefix).watcherLease(KEY));
    await registry.remove(KEY);
    expect(await fenced.restore(KEY, [stored])).toEqual({ kind: 'removed' });
    expect(await registry.get(KEY)).toEqual([]);
  });

  describe('traceparents of the messages a snapshot stands for', () => {
    /** The receive span traceparent of message `n`: its span id is `n` in hex. */
    const tp = (n: number) =>
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${n.toString(16).padStart(16, '0')}-01`;
    const tps = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => tp(from + i));

    it('stores them before the content, in a record the syncer decodes', async () => {
      expect(
        await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(1), tp(2)] }),
      ).toMatchObject({
        kind: 'stored',
        generation: 1,
      });
      expect(await stored()).toEqual({
        generation: 1,
        receivedAt: '2026-11-21T12:00:00.000Z',
        traceparents: [tp(1), tp(2)],
        endpoint: 'a:1',
        inventory: gpus(2),
      });
      const raw = (await db.redis.get(redisKeys(prefix).snapshot(KEY))) ?? '';
      expect(raw.indexOf('"traceparents"')).toBeLessThan(raw.indexOf('"inventory"'));
    });

    it('carries them forward while the snapshot replaced still owes a sync, then starts afresh', async () => {
      await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(1)] });
      await writer.reject(KEY, 'a:1', 'message of 2 MiB exceeds 1 MiB', at, {
        traceparents: [tp(2)],
      });
      await writer.store(KEY, 'a:1', gpus(3), at, { traceparents: [tp(3), tp(4)] });
      expect((await stored())?.traceparents).toEqual([tp(1), tp(2), tp(3), tp(4)]);
      await synced(3);
      await writer.store(KEY, 'a:1', gpus(4), at, { traceparents: [tp(5)] });
      expect((await stored())?.traceparents).toEqual([tp(5)]);
    });

    it('carries forward after a sync of an older generation finished, not of the stored one', async () => {
      await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(1)] });
      await writer.store(KEY, 'a:1', gpus(3), at, { traceparents: [tp(2)] });
      await synced(1);
      await writer.store(KEY, 'a:1', gpus(4), at, { traceparents: [tp(3)] });
      expect((await stored())?.traceparents).toEqual([tp(1), tp(2), tp(3)]);
    });

    it('keeps the newest 32', async () => {
      await writer.store(KEY, 'a:1', gpus(1), at, { traceparents: tps(1, 20) });
      await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: tps(21, 40) });
      expect((await stored())?.traceparents).toEqual(tps(9, 40));
      await writer.store(KEY, 'a:1', gpus(3), at, { traceparents: tps(41, 80) });
      expect((await stored())?.traceparents).toEqual(tps(49, 80));
    });

    it('writes no field without them, and carries nothing into a write without them', async () => {
      await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(1)] });
      await writer.store(KEY, 'a:1', gpus(3), at);
      expect(await stored()).not.toHaveProperty('traceparents');
      await writer.store(KEY, 'a:1', gpus(4), at, { traceparents: [tp(2)] });
      expect((await stored())?.traceparents).toEqual([tp(2)]);
    });

    it('leaves unchanged and unsynced results as they were: nothing written', async () => {
      await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(1)] });
      expect(await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(2)] })).toEqual({
        kind: 'unsynced',
      });
      await synced(1);
      expect(await writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(3)] })).toEqual({
        kind: 'unchanged',
      });
      expect(await stored()).toMatchObject({ generation: 1, traceparents: [tp(1)] });
    });

    it('refuses a traceparent that is not one, naming the rule', async () => {
      await expect(
        writer.store(KEY, 'a:1', gpus(2), at, { traceparents: [tp(1), 'garbage'] }),
      ).rejects.toThrow('traceparents[1] "garbage" must be a W3C traceparent');
      expect(await stored()).toBeUndefined();
    });
  });

  it('reloads its scripts after Redis lost them', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    await db.redis.script('FLUSH');
    expect(await writer.store(KEY, 'a:1', gpus(4), at)).toMatchObject({ kind: 'stored' });
  });
});
