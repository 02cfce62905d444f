import { System, gpuInventory, publishes } from './harness';
import type { InProcessDriver } from './harness';
import type { DriverInventory } from '@slicekeeper/contracts';

const GPU = 'gpu.example.com';

describe('a driver sending invalid inventory (scenario 10)', () => {
  let system: System;
  /** node-b's driver, which sends the invalid inventories. */
  let bad: InProcessDriver;

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
    bad = await system.inProcessDriver({
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

  it('is told on the Node: a Warning Event naming the field, a series for repeats, then recovery', async () => {
    // The first test left node-b's driver invalid: device 3 named GPU_3.
    await system.until('the Warning Event is recorded', async () =>
      (await system.nodeEvents('node-b')).some((e) => e.reason === 'InvalidInventory'),
    );
    const [warning] = await system.nodeEvents('node-b');
    expect(warning).toMatchObject({ type: 'Warning', reason: 'InvalidInventory', count: 1 });
    expect(warning?.note).toContain(`driver ${GPU}: inventory refused`);
    expect(warning?.note).toMatch(/pools\[0\]\.devices\[3\]\.name: Invalid value: "GPU_3"/);

    // The same mistake again (a new inventory, the same bad name): the Event counts it.
    const again = gpuInventory({ rev: 2 });
    const device = again.pools[0]?.devices[3];
    if (device !== undefined) device.name = 'GPU_3';
    bad.publish(again);
    await system.until('the series counts the repeat', async () =>
      (await system.nodeEvents('node-b')).some(
        (e) => e.reason === 'InvalidInventory' && e.count === 2,
      ),
    );
    const describe = await system.kubectl('describe', 'node', 'node-b');
    expect(describe).toMatch(
      /Warning\s+InvalidInventory\s+.*\(x2 over .*\)\s+slicekeeper\.dev\/slice-syncer/,
    );
    expect(describe).toContain('"GPU_3"');

    // Fixed: the Node says it is published again.
    const fixed = gpuInventory({ rev: 3 });
    bad.publish(fixed);
    await system.until('the recovery Event', async () =>
      (await system.nodeEvents('node-b')).some((e) => e.reason === 'ResourcesPublished'),
    );
    const events = await system.nodeEvents('node-b');
    expect(events.map(({ type, reason, count }) => ({ type, reason, count }))).toEqual([
      { type: 'Warning', reason: 'InvalidInventory', count: 2 },
      { type: 'Normal', reason: 'ResourcesPublished', count: 1 },
    ]);
    // The pool's generation went up with each publish of node-b's slices.
    expect(events[1]?.note).toMatch(
      /^driver gpu\.example\.com: 8 devices published in 1 ResourceSlice \(node-b generation \d+\)$/,
    );
    // node-a's driver was never in trouble: nothing to tell about its Node.
    expect(await system.nodeEvents('node-a')).toEqual([]);
  }, 60_000);
});
