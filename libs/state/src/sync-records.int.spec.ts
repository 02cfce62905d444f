import { redisKeys } from './testing';
import type { InventorySnapshot, SyncStatus } from '@slicekeeper/contracts';
import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { CorruptRecordError } from './codec';
import { KeyIndex } from './key-index';
import { SyncRecords } from './sync-records';

describe('SyncRecords', () => {
  const db = useRedisServer();

  const key = { node: 'node-a', driver: 'gpu.example.com' };
  const snapshot: InventorySnapshot = {
    generation: 1,
    receivedAt: '2026-11-21T12:00:00.000Z',
    endpoint: 'unix:///plugins/gpu.sock',
    inventory: {
      pools: [{ name: 'node-a', scope: { kind: 'node' }, devices: [{ name: 'gpu-0' }] }],
    },
  };
  const synced = (finishedAt: string, attempt = 1): SyncStatus => ({
    outcome: 'synced',
    snapshotGeneration: 1,
    slices: ['gpu.example.com-node-a-x7k2p'],
    pools: [{ name: 'node-a', generation: 1, sliceCount: 1, devices: 1 }],
    attempt,
    startedAt: finishedAt,
    finishedAt,
    writes: 0,
  });

  function setup() {
    const prefix = uniquePrefix('sync-records');
    const records = new SyncRecords({ redis: db.redis, prefix });
    let job = 0;
    const begin = async () => {
      const turn = await records.begin(key, `job-${String(++job)}`);
      if (turn === undefined) throw new Error('guard held');
      return turn;
    };
    return { prefix, keys: redisKeys(prefix), begin };
  }

  it('reads the same snapshot on every sync, and a corrupted one as corrupt', async () => {
    const { keys, begin } = setup();
    await db.redis.set(keys.snapshot(key), JSON.stringify(snapshot));
    for (let sync = 0; sync < 2; sync++) {
      const turn = await begin();
      expect(turn.snapshot()).toEqual(snapshot);
      await turn.finish(synced('2026-11-21T12:00:01.000Z'));
    }

    // Valid JSON that breaks the schema, after the key's snapshot was read and found valid.
    await db.redis.set(
      keys.snapshot(key),
      JSON.stringify({ ...snapshot, inventory: { pools: [{ name: 'node-a' }] } }),
    );
    const turn = await begin();
    expect(() => turn.snapshot()).toThrow(CorruptRecordError);
    await turn.release();

    await db.redis.set(keys.snapshot(key), JSON.stringify({ ...snapshot, generation: 2 }));
    const next = await begin();
    expect(next.snapshot()).toEqual({ ...snapshot, generation: 2 });
    await next.release();
  });

  it("reads back the status it recorded, and none where another writer's breaks the schema", async () => {
    const { keys, begin } = setup();
    const status = synced('2026-11-21T12:00:01.000Z');
    await (await begin()).finish(status);
    const turn = await begin();
    expect(turn.previousStatus()).toEqual(status);
    await turn.release();

    await db.redis.set(keys.syncStatus(key), JSON.stringify({ ...status, outcome: 'great' }));
    const next = await begin();
    expect(next.previousStatus()).toBeUndefined();
    await next.release();
  });

  it('keeps a synced key among the keys a resync covers, across syncs, retries and losses', async () => {
    const { prefix, keys, begin } = setup();
    const index = new KeyIndex({ redis: db.redis, prefix });
    const finish = async (status: SyncStatus) => {
      const turn = await begin();
      await turn.finish(status);
    };

    await finish(synced('2026-11-21T12:00:01.000Z'));
    expect(await index.activeKeyIds()).toEqual(new Set(['node-a/gpu.example.com']));

    // Lost from the index alone (a Cluster node's failover): a retry writes it back...
    await db.redis.del(keys.knownKeys);
    await finish(synced('2026-11-21T12:00:02.000Z', 2));
    expect(await index.activeKeyIds()).toEqual(new Set(['node-a/gpu.example.com']));

    // ...and so does the first sync of the next hour.
    await db.redis.del(keys.knownKeys);
    await finish(synced('2026-11-21T12:10:00.000Z'));
    await finish(synced('2026-11-21T13:00:00.000Z'));
    expect(await index.activeKeyIds()).toEqual(new Set(['node-a/gpu.example.com']));

    await finish({ ...synced('2026-11-21T13:00:01.000Z'), outcome: 'withdrawn' });
    expect(await index.activeKeyIds()).toEqual(new Set());
    await finish(synced('2026-11-21T13:00:02.000Z'));
    expect(await index.activeKeyIds()).toEqual(new Set(['node-a/gpu.example.com']));
  });
});
