import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import { System, gpuInventory, publishes } from './harness';
import type { InProcessDriver, LoggedRequest } from './harness';

const GPU = 'gpu.example.com';
const TAINTED = 'tainted.example.com';

/** Successful ResourceSlice writes by anyone but kubectl, as `verb` strings. */
function ours(writes: readonly LoggedRequest[]): string[] {
  return writes.filter((w) => w.verb !== 'patch').map((w) => w.verb);
}

/**
 * The watch-driven syncer (issue 15), every service its own process: what someone else does to
 * a managed slice or to a Node is repaired in about a second, not at the next resync, and our
 * own writes' events cause nothing.
 */
describe('watch-driven repair', () => {
  let system: System;
  let drivers: InProcessDriver[];

  beforeAll(async () => {
    system = await System.start({
      name: 'watch-repair',
      nodes: ['node-a', 'node-b', 'node-c'],
    });
    drivers = await Promise.all([
      system.inProcessDriver({ node: 'node-a', driver: GPU, inventory: gpuInventory() }),
      system.inProcessDriver({ node: 'node-b', driver: GPU, inventory: gpuInventory() }),
      system.inProcessDriver({ node: 'node-c', driver: TAINTED, inventory: taintedInventory() }),
    ]);
    await system.until('every driver published', async () => {
      for (const driver of drivers.slice(0, 2)) {
        const slices = await system.emulator.slices({ node: driver.node, driver: GPU });
        if (!publishes(slices, gpuInventory())) return false;
      }
      return (await system.emulator.slices({ node: 'node-c' })).length === 1;
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('a slice deleted with kubectl is back within 2 s, with one write', async () => {
    const [slice] = await system.emulator.slices({ node: 'node-a', driver: GPU });
    await system.emulator.clearLog();
    await system.kubectl('delete', 'resourceslice', slice?.metadata.name ?? '');
    await system.until(
      'the slices of node-a published again',
      async () => publishes(await system.emulator.slices({ node: 'node-a' }), gpuInventory()),
      2_000,
    );
    await quietFor(4_000);
    expect(ours(await system.emulator.sliceWrites())).toEqual(['delete', 'create']);
  }, 30_000);

  it('a slice changed with kubectl is reverted within 2 s, with one write', async () => {
    const [slice] = await system.emulator.slices({ node: 'node-a', driver: GPU });
    const name = slice?.metadata.name ?? '';
    await system.emulator.clearLog();
    await system.kubectl(
      'patch',
      'resourceslice',
      name,
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/devices/0/attributes/model/string","value":"tampered"}]',
    );
    await system.until(
      'the change reverted',
      async () => publishes(await system.emulator.slices({ node: 'node-a' }), gpuInventory()),
      2_000,
    );
    await quietFor(4_000);
    const writes = await system.emulator.sliceWrites();
    expect(writes.map((w) => w.verb)).toEqual(['patch', 'update']);
  }, 30_000);

  it('a Node deleted and created again gets its slices back within 2 s, owned by the new Node', async () => {
    await system.kubectl('delete', 'node', 'node-b');
    await system.until(
      'the slices of node-b garbage-collected',
      async () => (await system.emulator.slices({ node: 'node-b' })).length === 0,
    );
    await system.emulator.createNodes(['node-b']);
    const uid = await system.emulator.nodeUid('node-b');
    await system.until(
      'node-b published again, owned by its new UID',
      async () => {
        const slices = await system.emulator.slices({ node: 'node-b' });
        return (
          publishes(slices, gpuInventory()) &&
          slices.every((s) => s.metadata.ownerReferences?.[0]?.uid === uid)
        );
      },
      2_000,
    );
  }, 30_000);

  it('after a cut watch and a 410 on its resume, the cache recovers and misses nothing', async () => {
    await system.emulator.forgetHistory();
    // Every resume from now on gets 410: the syncer must relist.
    expect(await system.emulator.cutWatches()).toBeGreaterThan(0);
    const [slice] = await system.emulator.slices({ node: 'node-a', driver: GPU });
    await system.emulator.clearLog();
    await system.kubectl('delete', 'resourceslice', slice?.metadata.name ?? '');
    await system.until('the deleted slice repaired', async () =>
      publishes(await system.emulator.slices({ node: 'node-a' }), gpuInventory()),
    );
    // Nothing else was touched: the relist found only the deletion.
    await quietFor(4_000);
    expect(ours(await system.emulator.sliceWrites())).toEqual(['delete', 'create']);
    expect(await system.emulator.slices()).toHaveLength(3);
  }, 30_000);

  it('fields the server drops are reported, and resyncs do not write them again', async () => {
    // The emulator runs with DRADeviceTaints off, as kube-apiserver 1.34 does.
    const [published] = await system.emulator.slices({ node: 'node-c' });
    expect(published?.spec.devices?.map((d) => 'taints' in d)).toEqual([false, false]);
    const status = await system.status('node-c', TAINTED);
    expect(status?.sync).toMatchObject({
      outcome: 'synced',
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
    });
    await system.emulator.clearLog();
    const redis = createRedisConnection({ target: { kind: 'server', url: system.redis.url } });
    const queue = new SyncQueue({ connection: redis, prefix: 'sk' });
    try {
      for (let i = 0; i < 3; i++) {
        const before = (await system.status('node-c', TAINTED))?.sync?.finishedAt;
        await queue.enqueue({ node: 'node-c', driver: TAINTED }, 'resync');
        await system.until(`resync ${i + 1} finished`, async () => {
          const sync = (await system.status('node-c', TAINTED))?.sync;
          return sync?.finishedAt !== before && sync?.outcome === 'synced';
        });
      }
    } finally {
      await queue.close();
      redis.disconnect();
    }
    expect(await system.emulator.sliceWrites()).toEqual([]);
    const reads = (await system.emulator.requests()).filter(
      (r) => r.verb === 'list' || r.verb === 'get',
    );
    expect(reads).toEqual([]);
  }, 30_000);

  async function quietFor(ms: number): Promise<void> {
    const until = Date.now() + ms;
    await system.until(`${ms / 1000} s have passed`, () => Date.now() >= until, ms + 5_000);
  }
});

function taintedInventory() {
  const inventory = gpuInventory({ devices: 2 });
  for (const pool of inventory.pools) {
    for (const device of pool.devices) {
      device.taints = [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }];
    }
  }
  return inventory;
}
