import { System, gpuInventory, publishes } from './harness';
import type { DriverInventory } from '@slicekeeper/contracts';

const GPU = 'gpu.example.com';

describe('a driver sending invalid inventory (scenario 10)', () => {
  let system: System;

  beforeAll(async () => {
    system = await System.start({ name: 'invalid-inventory', nodes: ['node-a', 'node-b'] });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('gets a status that says why; other drivers are unaffected; nothing is written', async () => {
    const good = await system.inProcessDriver({
      node: 'node-a',
      driver: GPU,
      inventory: gpuInventory(),
    });
    const bad = await system.inProcessDriver({
      node: 'node-b',
      driver: GPU,
      inventory: gpuInventory(),
    });
    await system.until('both published', async () => (await system.emulator.slices()).length === 2);
    const before = await system.emulator.slices({ node: 'node-b' });
    await system.emulator.clearLog();

    const invalid: DriverInventory = gpuInventory({ rev: 1 });
    const device = invalid.pools[0]?.devices[3];
    if (device !== undefined) device.name = 'GPU_3';
    bad.publish(invalid);
    await system.until('the status says why', async () => {
      const sync = (await system.status('node-b', GPU))?.sync;
      return sync?.outcome === 'invalid';
    });
    const status = await system.status('node-b', GPU);
    expect(status?.sync?.error).toContain('GPU_3');
    expect(status?.sync?.error).toMatch(/DNS label|lowercase|must/i);

    // Another driver's change goes through meanwhile.
    const changed = gpuInventory({ rev: 1 });
    good.publish(changed);
    await system.until('the good driver published', async () =>
      publishes(await system.emulator.slices({ node: 'node-a' }), changed),
    );

    // Five quiet seconds: the invalid inventory is not retried, and its last good slices stay.
    const until = Date.now() + 5000;
    await system.until('five seconds have passed', () => Date.now() >= until, 10_000);
    const writes = await system.emulator.sliceWrites();
    expect(writes.filter((w) => w.name.includes('-node-b-'))).toEqual([]);
    expect(await system.emulator.slices({ node: 'node-b' })).toEqual(before);
    const lists = (await system.emulator.requests()).filter(
      (r) => r.resource === 'resourceslices' && r.verb === 'list',
    );
    // The test's own polling lists too; a retry loop on the bad key would add dozens a second.
    expect(lists.length).toBeLessThan(200);
    expect((await system.status('node-b', GPU))?.sync?.outcome).toBe('invalid');
  }, 60_000);
});
