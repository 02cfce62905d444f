import { redisKeys } from './testing';
import type { InventorySnapshot, StreamState, SyncStatus } from '@slicekeeper/contracts';
import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { KeyStatusReader } from './key-status-reader';

describe('KeyStatusReader', () => {
  const db = useRedisServer();

  const key = { node: 'node-a', driver: 'gpu.example.com' };

  it('reads nothing for a key nobody has touched', async () => {
    const reader = new KeyStatusReader({ redis: db.redis, prefix: uniquePrefix('status') });
    expect(await reader.read(key)).toEqual({});
  });

  it('summarizes the snapshot and passes stream state and sync status through', async () => {
    const prefix = uniquePrefix('status');
    const keys = redisKeys(prefix);
    const stream: StreamState = {
      state: 'streaming',
      endpoint: 'unix:///plugins/gpu.sock',
      since: '2026-11-21T12:00:00.000Z',
      reconnects: 0,
    };
    const device = { name: 'gpu-0' };
    const snapshot: InventorySnapshot = {
      generation: 4,
      receivedAt: '2026-11-21T12:00:01.000Z',
      endpoint: 'unix:///plugins/gpu.sock',
      inventory: {
        pools: [
          { name: 'node-a', scope: { kind: 'node' }, devices: [device, { name: 'gpu-1' }] },
          {
            name: 'shared',
            scope: { kind: 'all-nodes' },
            devices: [],
            slices: [{ devices: [device] }, { devices: [device, device] }],
          },
        ],
      },
    };
    const sync: SyncStatus = {
      outcome: 'synced',
      snapshotGeneration: 4,
      slices: ['00000-gpu.example.com-node-a-x7k2p'],
      pools: [{ name: 'node-a', generation: 1, sliceCount: 1, devices: 2 }],
      attempt: 1,
      startedAt: '2026-11-21T12:00:01.010Z',
      finishedAt: '2026-11-21T12:00:01.020Z',
      writes: 1,
    };
    await db.redis.set(keys.streamState(key), JSON.stringify(stream));
    await db.redis.set(keys.snapshot(key), JSON.stringify(snapshot));
    await db.redis.set(keys.syncStatus(key), JSON.stringify(sync));
    expect(await new KeyStatusReader({ redis: db.redis, prefix }).read(key)).toEqual({
      stream,
      snapshot: {
        generation: 4,
        receivedAt: '2026-11-21T12:00:01.000Z',
        endpoint: 'unix:///plugins/gpu.sock',
        pools: [
          { name: 'node-a', devices: 2 },
          { name: 'shared', devices: 3 },
        ],
        devices: 5,
      },
      sync,
    });
  });

  it('refuses a corrupt record instead of showing half of it', async () => {
    const prefix = uniquePrefix('status');
    await db.redis.set(redisKeys(prefix).syncStatus(key), '{"outcome":"bored"}');
    await expect(new KeyStatusReader({ redis: db.redis, prefix }).read(key)).rejects.toMatchObject({
      code: 'corrupt',
      message: /status/,
    });
    await db.redis.set(redisKeys(prefix).syncStatus(key), '{');
    await expect(new KeyStatusReader({ redis: db.redis, prefix }).read(key)).rejects.toThrow(
      /not JSON/,
    );
  });
});
