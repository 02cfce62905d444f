import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { RegistrationStore } from './registration-store';

describe('RegistrationStore', () => {
  const db = useRedisServer();
  let store: RegistrationStore;
  let clock: number;
  beforeEach(() => {
    clock = Date.parse('2026-11-21T12:00:00Z');
    store = new RegistrationStore({
      redis: db.redis,
      prefix: uniquePrefix('registry'),
      clock: { now: () => clock },
    });
  });

  const gpuA = { node: 'node-a', driver: 'gpu.example.com' };

  it('adds, re-adds idempotently and orders endpoints by recency', async () => {
    const first = await store.add({
      ...gpuA,
      endpoint: 'unix:///run/gpu/v1.sock',
      version: 'v1.ResourcePublisher',
    });
    expect(first.created).toBe(true);
    clock += 1000;
    await store.add({
      ...gpuA,
      endpoint: 'unix:///run/gpu/v2.sock',
      version: 'v1.ResourcePublisher',
    });
    clock += 1000;
    const again = await store.add({
      ...gpuA,
      endpoint: 'unix:///run/gpu/v1.sock',
      version: 'v1.ResourcePublisher',
    });
    expect(again.created).toBe(false);
    const registrations = await store.get(gpuA);
    expect(registrations.map((r) => r.endpoint)).toEqual([
      'unix:///run/gpu/v1.sock',
      'unix:///run/gpu/v2.sock',
    ]);
    expect(registrations[0]?.registeredAt).toBe('2026-11-21T12:00:02.000Z');
  });

  it('records a removal when the last endpoint goes, and ends it on registering again', async () => {
    await store.add({ ...gpuA, endpoint: 'a:1', version: 'v1.ResourcePublisher' });
    await store.add({ ...gpuA, endpoint: 'a:2', version: 'v1.ResourcePublisher' });
    expect((await store.remove(gpuA, { endpoint: 'a:1' })).map((r) => r.endpoint)).toEqual(['a:1']);
    expect(await store.removal(gpuA)).toBeUndefined();
    expect(await store.remove(gpuA, { endpoint: 'a:9' })).toEqual([]);
    expect((await store.remove(gpuA, { graceMs: 30_000 })).map((r) => r.endpoint)).toEqual(['a:2']);
    expect(await store.removal(gpuA)).toEqual({ removedAt: clock, withdrawAt: clock + 30_000 });
    expect(await store.all()).toEqual([]);
    await store.add({ ...gpuA, endpoint: 'a:1', version: 'v1.ResourcePublisher' });
    expect(await store.removal(gpuA)).toBeUndefined();
    expect((await store.all()).map((r) => r.endpoint)).toEqual(['a:1']);
  });

  it('never lets concurrent registrations overshoot the endpoint or driver limits', async () => {
    const limited = new RegistrationStore({
      redis: db.redis,
      prefix: uniquePrefix('limits'),
      maxEndpointsPerKey: 2,
      maxDriversPerNode: 3,
    });
    const endpoints = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        limited.add({ ...gpuA, endpoint: `a:${i}`, version: 'v1.ResourcePublisher' }),
      ),
    );
    expect(endpoints.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    expect(endpoints.find((r) => r.status === 'rejected')?.reason).toMatchObject({
      code: 'too-many-endpoints',
      message: expect.stringMatching(/already has 2 endpoints \(at most 2\)/) as unknown,
    });
    expect(await limited.get(gpuA)).toHaveLength(2);

    const drivers = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        limited.add({
          node: 'node-b',
          driver: `d${i}.example.com`,
          endpoint: `b:${i}`,
          version: 'v1.ResourcePublisher',
        }),
      ),
    );
    expect(drivers.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(drivers.find((r) => r.status === 'rejected')?.reason).toMatchObject({
      code: 'too-many-drivers',
      message: expect.stringMatching(/node node-b already has 3 drivers/) as unknown,
    });
    expect((await limited.list({ node: 'node-b' })).items).toHaveLength(3);
    // Another node has room of its own; a removed driver frees its place.
    await limited.add({ ...gpuA, endpoint: 'a:0', version: 'v1.ResourcePublisher' });
    const [first] = (await limited.list({ node: 'node-b' })).items;
    await limited.remove({ node: 'node-b', driver: first?.driver ?? '' });
    await limited.add({
      node: 'node-b',
      driver: 'late.example.com',
      endpoint: 'b:late',
      version: 'v1.ResourcePublisher',
    });
  });

  it('keeps the index right when a removal and a registration of a key interleave', async () => {
    for (let round = 0; round < 20; round++) {
      await store.add({ ...gpuA, endpoint: 'a:1', version: 'v1.ResourcePublisher' });
      await Promise.all([
        store.remove(gpuA),
        store.add({ ...gpuA, endpoint: 'a:2', version: 'v1.ResourcePublisher' }),
      ]);
      const registered = (await store.get(gpuA)).length > 0;
      expect((await store.all()).length > 0).toBe(registered);
      await store.remove(gpuA);
    }
  });

  it('tells a data set it did not write from the one it knows', async () => {
    const first = await store.datasetId('one');
    expect(await store.datasetId('two')).toBe(first);
  });

  it('lists by node, by driver and in pages', async () => {
    for (const node of ['node-a', 'node-b', 'node-c']) {
      for (const driver of ['gpu.example.com', 'nic.example.com']) {
        await store.add({ node, driver, endpoint: `${node}:1`, version: 'v1.ResourcePublisher' });
      }
    }
    const ids = (page: { items: { node: string; driver: string }[] }) =>
      page.items.map((r) => `${r.node}/${r.driver}`);
    expect(ids(await store.list({ node: 'node-b' }))).toEqual([
      'node-b/gpu.example.com',
      'node-b/nic.example.com',
    ]);
    expect(ids(await store.list({ driver: 'nic.example.com' }))).toEqual([
      'node-a/nic.example.com',
      'node-b/nic.example.com',
      'node-c/nic.example.com',
    ]);
    const page1 = await store.list({ limit: 4 });
    expect(ids(page1)).toHaveLength(4);
    expect(page1.next).toBe('node-b/nic.example.com');
    const page2 = await store.list({ limit: 4, after: page1.next });
    expect(ids(page2)).toEqual(['node-c/gpu.example.com', 'node-c/nic.example.com']);
    expect(page2.next).toBeUndefined();
    // A node name that is a prefix of another must not match it.
    await store.add({
      node: 'node-a1',
      driver: 'gpu.example.com',
      endpoint: 'x:1',
      version: 'v1.ResourcePublisher',
    });
    expect(ids(await store.list({ node: 'node-a' }))).toHaveLength(2);
  });

  it('lets a follower load, then follow, and detects a gap after trimming', async () => {
    const position = await store.eventPosition();
    await store.add({ ...gpuA, endpoint: 'a:1', version: 'v1.ResourcePublisher' });
    await store.remove(gpuA);
    const followed = await store.follow(position, 100);
    expect(
      followed.kind === 'events' && followed.events.map((e) => `${e.type} ${e.key} ${e.endpoint}`),
    ).toEqual(['added node-a/gpu.example.com a:1', 'removed node-a/gpu.example.com a:1']);
    const idle = await store.follow(followed.last, 50);
    expect(idle).toEqual({ kind: 'events', events: [], last: followed.last });

    const small = new RegistrationStore({
      redis: db.redis,
      prefix: uniquePrefix('trim'),
      eventHistory: 1,
      maxEndpointsPerKey: 1000,
    });
    const start = await small.eventPosition();
    await small.add({ ...gpuA, endpoint: 'a:1', version: 'v1.ResourcePublisher' });
    const seen = await small.eventPosition();
    for (let i = 0; i < 300; i++)
      await small.add({ ...gpuA, endpoint: `a:${i}`, version: 'v1.ResourcePublisher' });
    expect((await small.follow(seen, 10)).kind).toBe('gap');
    expect((await small.follow(start, 10)).kind).toBe('gap');
  });
});
