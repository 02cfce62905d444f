import { System, gpuInventory, publishes } from './harness';

const NODES = Array.from({ length: 30 }, (_, i) => `node-${i}`);
const DRIVERS = ['gpu.example.com', 'nic.example.com'];
/** 300 devices: three slices per key (128 + 128 + 44). */
const inventory = gpuInventory({ devices: 300 });

describe('a syncer replica killed while busy (scenario 6)', () => {
  let system: System;

  beforeAll(async () => {
    system = await System.start({
      name: 'syncer-crash',
      nodes: NODES,
      syncerReplicas: 2,
      syncerEnv: { LOG_LEVEL: 'debug' },
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('the other replica finishes: every key published once, nothing lost or duplicated', async () => {
    // Slow creates keep both replicas busy for a while.
    await system.emulator.addLatency({ verb: 'create', resource: 'resourceslices', ms: 150 });
    await Promise.all(
      NODES.flatMap((node) =>
        DRIVERS.map((driver) => system.inProcessDriver({ node, driver, inventory })),
      ),
    );
    const keys = NODES.length * DRIVERS.length;
    await system.until('a third of the slices created', async () => {
      return (await system.emulator.sliceWrites()).length >= keys;
    });
    await system.killService('slice-syncer-1');
    const atKill = (await system.emulator.sliceWrites()).length;
    expect(atKill).toBeLessThan(keys * 3);

    await system.until(
      'every key published',
      async () => (await system.emulator.slices()).length === keys * 3,
      60_000,
    );
    const slices = await system.emulator.slices();
    for (const node of NODES) {
      for (const driver of DRIVERS) {
        const own = slices.filter((s) => s.spec.nodeName === node && s.spec.driver === driver);
        expect(publishes(own, inventory)).toBe(true);
      }
    }
    // Exactly one create per slice: no duplicate was created and then cleaned up.
    const writes = await system.emulator.sliceWrites();
    expect(writes.filter((w) => w.verb === 'create')).toHaveLength(keys * 3);
    expect(writes.filter((w) => w.verb === 'delete')).toEqual([]);
    // A key whose sync the crash cut short has an incomplete pool; the survivor completes it at
    // the next generation (as upstream does), rewriting the slices already there. Only the
    // killed replica's keys in flight (at most SYNC_CONCURRENCY, 8) can need that.
    const updated = writes.filter((w) => w.verb === 'update');
    const interrupted = new Set(updated.map((w) => w.name.replace(/^\d+-|-[a-z0-9]{5}$/g, '')));
    expect(interrupted.size).toBeLessThanOrEqual(8);
    expect(updated.length).toBeLessThanOrEqual(interrupted.size * 2);
    for (const node of NODES) {
      for (const driver of DRIVERS) {
        expect((await system.status(node, driver))?.sync?.outcome).toBe('synced');
      }
    }
  }, 120_000);
});
