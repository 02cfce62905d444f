import { redisKeys } from './testing';
import type { StreamState, SyncStatus } from '@slicekeeper/contracts';
import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { NodePublishState } from './node-publish-state';
import { RegistrationStore } from './registration-store';

const GPU = { node: 'node-a', driver: 'gpu.example.com' };
const NIC = { node: 'node-a', driver: 'nic.example.com' };

const synced: SyncStatus = {
  outcome: 'synced',
  snapshotGeneration: 3,
  slices: ['00000-gpu.example.com-node-a-x7k2p'],
  pools: [{ name: 'node-a', generation: 1, sliceCount: 1, devices: 8 }],
  attempt: 1,
  startedAt: '2026-11-21T12:00:01.010Z',
  finishedAt: '2026-11-21T12:00:01.020Z',
  writes: 1,
};

const streaming: StreamState = {
  state: 'streaming',
  endpoint: 'unix:///plugins/gpu.sock',
  since: '2026-11-21T12:00:00.000Z',
  reconnects: 0,
};

describe('NodePublishState', () => {
  const db = useRedisServer();

  async function register(prefix: string, key: { node: string; driver: string }): Promise<void> {
    await new RegistrationStore({ redis: db.redis, prefix }).add({
      ...key,
      endpoint: `unix:///plugins/${key.driver}.sock`,
      version: 'v1.ResourcePublisher',
    });
  }

  it("reads each registered key of the node, and no other node's", async () => {
    const prefix = uniquePrefix('publish-state');
    const keys = redisKeys(prefix);
    await register(prefix, GPU);
    await register(prefix, NIC);
    // A node whose name extends node-a's, and a cluster-scoped key: neither is node-a's.
    await register(prefix, { node: 'node-ab', driver: 'gpu.example.com' });
    await register(prefix, { node: '', driver: 'fabric.example.com' });
    await db.redis.set(keys.syncStatus(GPU), JSON.stringify(synced));
    await db.redis.set(keys.streamState(GPU), JSON.stringify(streaming));
    await db.redis.incrby(keys.snapshotGeneration(GPU), 3);

    const state = await new NodePublishState({ redis: db.redis, prefix }).read('node-a');
    expect(state).toEqual([
      { key: GPU, status: synced, stream: streaming, snapshotGeneration: 3 },
      // Registered, nothing sent yet.
      { key: NIC },
    ]);
  });

  it('reads nothing for a node without registrations', async () => {
    const prefix = uniquePrefix('publish-state');
    await register(prefix, GPU);
    expect(await new NodePublishState({ redis: db.redis, prefix }).read('node-b')).toEqual([]);
  });

  it('names the corrupt record of a key and still reads the others', async () => {
    const prefix = uniquePrefix('publish-state');
    const keys = redisKeys(prefix);
    await register(prefix, GPU);
    await register(prefix, NIC);
    await db.redis.set(keys.syncStatus(GPU), JSON.stringify({ ...synced, outcome: 'great' }));
    await db.redis.set(keys.snapshotGeneration(NIC), 'seven');
    const reader = new NodePublishState({ redis: db.redis, prefix });

    const [gpu, nic] = await reader.read('node-a');
    expect(gpu?.corrupt).toMatch(/^corrupt status of node-a\/gpu\.example\.com: .*outcome/s);
    expect(nic).toEqual({
      key: NIC,
      corrupt:
        'corrupt snapshot generation of node-a/nic.example.com: not a non-negative integer: "seven"',
    });

    await db.redis.set(keys.syncStatus(GPU), JSON.stringify(synced));
    await db.redis.set(keys.streamState(GPU), '{"state":');
    expect((await reader.read('node-a'))[0]).toEqual({
      key: GPU,
      corrupt: 'corrupt stream state of node-a/gpu.example.com: not JSON',
    });
  });
});
