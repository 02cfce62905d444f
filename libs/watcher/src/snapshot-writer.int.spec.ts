import { Redis } from 'ioredis';
import { inventorySnapshotSchema, redisKeys } from '@slicekeeper/contracts';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { SnapshotWriter } from './snapshot-writer';
import { KEY, gpus } from './testing/fakes';

describe('SnapshotWriter', () => {
  let server: RedisServer;
  let redis: Redis;
  let prefix: string;
  let writer: SnapshotWriter;
  const at = new Date('2026-11-21T12:00:00.000Z');

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });
  beforeEach(() => {
    prefix = uniquePrefix('writer');
    writer = new SnapshotWriter({ redis, prefix });
  });

  async function stored() {
    const raw = await redis.get(redisKeys(prefix).snapshot(KEY));
    return raw === null ? undefined : inventorySnapshotSchema.parse(JSON.parse(raw));
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

  it('writes nothing without the lease when fenced by an owner', async () => {
    const fenced = new SnapshotWriter({ redis, prefix, owner: 'replica-1' });
    expect(await fenced.store(KEY, 'a:1', gpus(2), at)).toEqual({ kind: 'not-owner' });
    await redis.set(redisKeys(prefix).watcherLease(KEY), 'replica-1');
    expect(await fenced.store(KEY, 'a:1', gpus(2), at)).toMatchObject({ kind: 'stored' });
    await redis.set(redisKeys(prefix).watcherLease(KEY), 'replica-2');
    expect(await fenced.withdraw(KEY)).toEqual({ kind: 'not-owner' });
    expect(await stored()).toBeDefined();
  });

  it('reloads its scripts after Redis lost them', async () => {
    await writer.store(KEY, 'a:1', gpus(2), at);
    await redis.script('FLUSH');
    expect(await writer.store(KEY, 'a:1', gpus(4), at)).toMatchObject({ kind: 'stored' });
  });
});
