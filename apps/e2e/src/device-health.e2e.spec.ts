import type { DriverInventory } from '@slicekeeper/contracts';
import { System, gpuInventory, publishes } from './harness';
import type { ExampleDriverProcess } from './harness';

const GPU = 'gpu.example.com';
const UNHEALTHY = 'gpu.example.com/unhealthy';

/** The inventory with device `index` reporting `status`. */
function withHealth(
  inventory: DriverInventory,
  index: number,
  status: 'healthy' | 'unhealthy',
): DriverInventory {
  return {
    pools: inventory.pools.map((pool) => ({
      ...pool,
      devices: pool.devices.map((device, i) =>
        i === index
          ? { ...device, health: { status, message: 'XID 79: fallen off the bus' } }
          : device,
      ),
    })),
  };
}

interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

describe('device health, publish feedback and the node condition', () => {
  let system: System;
  let driver: ExampleDriverProcess;
  const inventory = gpuInventory({ devices: 8 });
  const slices = () => system.emulator.slices({ node: 'node-a', driver: GPU });
  const condition = async (): Promise<NodeCondition | undefined> => {
    const node = JSON.parse(await system.kubectl('get', 'node', 'node-a', '-o', 'json')) as {
      status?: { conditions?: NodeCondition[] };
    };
    return node.status?.conditions?.find((c) => c.type === 'DRAResourcesPublished');
  };
  const conditionIs = (status: string, reason: string) => async () => {
    const current = await condition();
    return current?.status === status && current.reason === reason;
  };

  beforeAll(async () => {
    system = await System.start({
      name: 'device-health',
      nodes: ['node-a'],
      emulatorEnv: { FEATURE_GATES: 'DRADeviceTaints=true' },
    });
    driver = await system.exampleDriver({ node: 'node-a', driver: GPU, inventory });
    await system.until('the driver published', async () => publishes(await slices(), inventory));
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('the driver is told its inventory was published, and the node says its devices are', async () => {
    const told = await driver.waitForLog(
      (e) => e.msg === 'publish feedback' && e.outcome === 'synced',
      'feedback that its inventory was published',
    );
    expect(told.slices).toEqual((await slices()).map((s) => s.metadata.name));
    await system.until('the node condition True', conditionIs('True', 'Published'));
    const yaml = await system.kubectl('get', 'node', 'node-a', '-o', 'yaml');
    expect(yaml).toContain('type: DRAResourcesPublished');
  }, 60_000);

  it('a device turning unhealthy costs one update and is tainted; healthy again, one more', async () => {
    await system.emulator.clearLog();
    await driver.publish(withHealth(inventory, 3, 'unhealthy'));
    await system.until('the device tainted', async () =>
      (await slices()).some((s) =>
        (s.spec.devices ?? []).some(
          (d) => d.name === 'gpu-3' && (d.taints ?? []).some((t) => t.key === UNHEALTHY),
        ),
      ),
    );
    const yaml = await system.kubectl('get', 'resourceslices', '-o', 'yaml');
    expect(yaml).toContain(`key: ${UNHEALTHY}`);
    expect(yaml).toMatch(/timeAdded: "?\d{4}-\d\d-\d\dT/);
    expect((await system.emulator.sliceWrites()).map((w) => w.verb)).toEqual(['update']);
    expect((await system.status('node-a', GPU))?.sync?.taints).toMatchObject({ unhealthy: 1 });

    await driver.publish(withHealth(inventory, 3, 'healthy'));
    await system.until('the taint removed', async () =>
      (await slices()).every((s) => (s.spec.devices ?? []).every((d) => d.taints === undefined)),
    );
    expect((await system.emulator.sliceWrites()).map((w) => w.verb)).toEqual(['update', 'update']);
  }, 60_000);

  it('an invalid inventory: the driver is told the field, the node condition turns False, then back', async () => {
    const [pool] = inventory.pools;
    if (pool === undefined) throw new Error('no pool');
    const invalid: DriverInventory = {
      pools: [
        { ...pool, devices: pool.devices.map((d, i) => (i === 0 ? { ...d, name: 'GPU 0' } : d)) },
      ],
    };
    await driver.publish(invalid);
    const told = await driver.waitForLog(
      (e) => e.msg === 'publish feedback' && e.outcome === 'invalid',
      'feedback that its inventory was invalid',
    );
    expect(JSON.stringify(told.problems)).toContain('devices[0].name');
    await system.until('the node condition False/Invalid', conditionIs('False', 'Invalid'));
    expect((await condition())?.message).toContain(GPU);

    await driver.publish(inventory);
    await system.until('the node condition True again', conditionIs('True', 'Published'));
  }, 60_000);
});
