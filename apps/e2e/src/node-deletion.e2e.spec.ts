import { System, gpuInventory } from './harness';
import type { InProcessDriver } from './harness';

describe('node deletion (scenario 5)', () => {
  let system: System;
  let drivers: InProcessDriver[];

  beforeAll(async () => {
    system = await System.start({ name: 'node-deletion', nodes: ['node-x', 'node-y'] });
    drivers = await Promise.all(
      ['gpu.example.com', 'nic.example.com'].map((driver) =>
        system.inProcessDriver({ node: 'node-x', driver, inventory: gpuInventory() }),
      ),
    );
    drivers.push(
      await system.inProcessDriver({
        node: 'node-y',
        driver: 'gpu.example.com',
        inventory: gpuInventory(),
      }),
    );
    await system.until('every driver published', async () => {
      return (await system.emulator.slices()).length === 3;
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it("a deleted Node's slices go; its keys are parked, not retried in a hot loop", async () => {
    await system.kubectl('delete', 'node', 'node-x');
    await system.until('the slices of node-x are gone', async () => {
      return (await system.emulator.slices({ node: 'node-x' })).length === 0;
    });

    // News for the parked keys: the syncer tries once, finds no Node and parks each key.
    for (const driver of drivers.slice(0, 2)) driver.publish(gpuInventory({ rev: 1 }));
    const parked = async () => {
      const statuses = await Promise.all(
        ['gpu.example.com', 'nic.example.com'].map((d) => system.status('node-x', d)),
      );
      return statuses.map((s) => s?.sync);
    };
    await system.until('both keys parked as node-missing', async () =>
      (await parked()).every(
        (sync) => sync?.outcome === 'node-missing' && sync.snapshotGeneration > 1,
      ),
    );
    const first = await parked();
    await system.emulator.clearLog();

    // Ten seconds of quiet: a hot loop would sync (and read the API) again and again.
    const until = Date.now() + 10_000;
    await system.until('ten seconds have passed', () => Date.now() >= until, 15_000);
    expect(await parked()).toEqual(first);
    const requests = await system.emulator.requests();
    expect(requests.filter((r) => r.resource === 'nodes')).toEqual([]);
    expect(requests.filter((r) => r.resource === 'resourceslices' && r.verb !== 'list')).toEqual(
      [],
    );

    // The other node is unaffected.
    expect(await system.emulator.slices({ node: 'node-y' })).toHaveLength(1);
    expect((await system.status('node-y', 'gpu.example.com'))?.sync?.outcome).toBe('synced');
  }, 60_000);
});
