import { System, deviceRevs, gpuInventory, isSliceWrite, publishes } from './harness';
import type { ResourceSlice } from './harness';

const MANAGED_BY = 'app.kubernetes.io/managed-by';

describe('publishing (scenarios 1 and 2)', () => {
  let system: System;

  beforeAll(async () => {
    system = await System.start({ name: 'publish', nodes: ['node-a', 'node-b', 'node-c'] });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('two example drivers register: their slices appear with node, owner, labels, generation and count', async () => {
    const gpus = gpuInventory({ devices: 8 });
    const nics = gpuInventory({ devices: 200, generation: 5 });
    await Promise.all([
      system.exampleDriver({ node: 'node-a', driver: 'gpu.example.com', inventory: gpus }),
      system.exampleDriver({ node: 'node-b', driver: 'nic.example.com', inventory: nics }),
    ]);
    await system.until('both drivers synced', async () => {
      const [a, b] = await Promise.all([
        system.status('node-a', 'gpu.example.com'),
        system.status('node-b', 'nic.example.com'),
      ]);
      return a?.sync?.outcome === 'synced' && b?.sync?.outcome === 'synced';
    });

    const slices = await system.kubectlSlices();
    const of = (node: string): ResourceSlice[] => slices.filter((s) => s.spec.nodeName === node);
    const a = of('node-a');
    const b = of('node-b');
    expect(slices).toHaveLength(a.length + b.length);
    expect(a).toHaveLength(1);
    // 200 plain devices: 128 in the first slice, 72 in the second.
    expect(b.map((s) => s.spec.devices?.length).sort()).toEqual([128, 72].sort());
    expect(publishes(a, gpus)).toBe(true);
    expect(publishes(b, nics)).toBe(true);

    for (const [node, driver, own] of [
      ['node-a', 'gpu.example.com', a],
      ['node-b', 'nic.example.com', b],
    ] as const) {
      const uid = await system.emulator.nodeUid(node);
      const status = await system.status(node, driver);
      for (const slice of own) {
        expect(slice.spec.driver).toBe(driver);
        expect(slice.metadata.labels?.[MANAGED_BY]).toBe('slicekeeper');
        expect(slice.metadata.ownerReferences).toEqual([
          expect.objectContaining({ apiVersion: 'v1', kind: 'Node', name: node, uid }),
        ]);
        // An empty pool name is the node's name; every slice of the pool agrees on the count.
        expect(slice.spec.pool.name).toBe(node);
        expect(slice.spec.pool.resourceSliceCount).toBe(own.length);
        expect(slice.spec.pool.generation).toBe(status?.sync?.pools[0]?.generation);
      }
      expect(status?.sync?.slices.sort()).toEqual(own.map((s) => s.metadata.name).sort());
    }
    // The driver's own generation (5) wins over slicekeeper's.
    expect(b.every((s) => s.spec.pool.generation === 5)).toBe(true);

    const wide = await system.kubectl('get', 'resourceslices', '-o', 'wide', '--no-headers');
    expect(wide.trim().split('\n')).toHaveLength(3);
    expect(wide).toContain('nic.example.com');
  }, 90_000);

  it('an inventory change writes only the changed slice', async () => {
    const driver = await system.inProcessDriver({
      node: 'node-c',
      driver: 'fpga.example.com',
      inventory: gpuInventory({ devices: 300 }),
    });
    const mine = () => system.emulator.slices({ node: 'node-c', driver: 'fpga.example.com' });
    await system.until('300 devices in 3 slices', async () => (await mine()).length === 3);
    const before = await mine();
    await system.emulator.clearLog();

    // Device 299 lives in the third slice (128 + 128 + 44).
    const changed = gpuInventory({ devices: 300, changed: [299] });
    driver.publish(changed);
    await system.until('the change published', async () => publishes(await mine(), changed));

    const writes = await system.emulator.sliceWrites();
    expect(writes.map((w) => w.verb)).toEqual(['update']);
    const after = await mine();
    const rewritten = after.filter(
      (s) =>
        s.metadata.resourceVersion !==
        before.find((b) => b.metadata.name === s.metadata.name)?.metadata.resourceVersion,
    );
    expect(rewritten.map((s) => s.metadata.name)).toEqual([writes[0]?.name]);
    expect(rewritten[0]?.spec.devices?.some((d) => d.name === 'gpu-299')).toBe(true);
  }, 60_000);

  it('1,000 changes in a burst end in exactly the last inventory, with far fewer writes', async () => {
    const driver = await system.inProcessDriver({
      node: 'node-c',
      driver: 'burst.example.com',
      inventory: gpuInventory({ rev: 0 }),
    });
    const mine = () => system.emulator.slices({ node: 'node-c', driver: 'burst.example.com' });
    await system.until('the first inventory published', async () => (await mine()).length === 1);
    await system.emulator.clearLog();

    const last = gpuInventory({ rev: 1000 });
    for (let rev = 1; rev < 1000; rev++) driver.publish(gpuInventory({ rev }));
    driver.publish(last);
    await system.until('the last inventory published', async () => publishes(await mine(), last));

    const slices = await mine();
    expect([...deviceRevs(slices).values()]).toEqual(Array.from({ length: 8 }, () => 1000));
    const writes = (await system.emulator.requests()).filter(isSliceWrite);
    expect(writes.every((w) => w.verb === 'update')).toBe(true);
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.length).toBeLessThan(1000);
  }, 60_000);
});
