import { System, gpuInventory, publishes } from './harness';
import type { InProcessDriver } from './harness';

const GPU = 'gpu.example.com';

/** Waits in real time: what the scenario checks is that nothing happens meanwhile. */
const pass = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('removal: a removed plugin never comes back', () => {
  const NODES = Array.from({ length: 20 }, (_, i) => `node-${i}`);
  let system: System;
  let drivers: InProcessDriver[];

  beforeAll(async () => {
    system = await System.start({
      name: 'plugin-removal',
      nodes: NODES,
      syncerEnv: { JANITOR_INTERVAL: '500ms', RESYNC_INTERVAL: '1s' },
    });
    drivers = await Promise.all(
      NODES.map((node) => system.inProcessDriver({ node, driver: GPU, inventory: gpuInventory() })),
    );
    await system.until('every driver published', async () => {
      return (await system.emulator.slices({ driver: GPU })).length === NODES.length;
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('20 plugins removed while their drivers change inventory every 10 ms stay removed', async () => {
    let rev = 0;
    const churning = new AbortController();
    const churn = (async () => {
      while (!churning.signal.aborted) {
        rev++;
        for (const driver of drivers) driver.publish(gpuInventory({ rev }));
        await pass(10);
      }
    })();
    await pass(300);
    await Promise.all(NODES.map((node) => system.removePlugin(node, GPU, '0s')));
    await system.until(
      'no slice of a removed plugin 5 s after the removal',
      async () => (await system.emulator.slices({ driver: GPU })).length === 0,
      5000,
    );
    // The drivers keep streaming; janitor runs every 500 ms and resyncs every second stand in
    // for the minutes that follow in a real cluster.
    await pass(6000);
    churning.abort();
    await churn;
    expect(await system.emulator.slices({ driver: GPU })).toEqual([]);
    for (const node of NODES) expect(await system.status(node, GPU)).toBeUndefined();

    // Registering again publishes at once.
    const [first] = drivers as [InProcessDriver];
    await first.register();
    await system.until('a registered plugin published again', async () => {
      const slices = await system.emulator.slices({ node: first.node, driver: GPU });
      return publishes(slices, gpuInventory({ rev }));
    });
  }, 60_000);
});

describe('driver restart: deregister on SIGTERM, register again', () => {
  const REMOVAL_GRACE_MS = 15_000;
  let system: System;

  beforeAll(async () => {
    system = await System.start({
      name: 'driver-restart',
      nodes: ['node-a'],
      apiEnv: { REMOVAL_GRACE: `${REMOVAL_GRACE_MS}ms` },
      watcherEnv: { WIPE_DELAY: `${REMOVAL_GRACE_MS}ms` },
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('a restart within the removal grace never loses the slices and writes nothing', async () => {
    const inventory = gpuInventory({ devices: 8 });
    const slices = () => system.emulator.slices({ node: 'node-a', driver: GPU });
    const driver = await system.exampleDriver({ node: 'node-a', driver: GPU, inventory });
    await system.until('published', async () => publishes(await slices(), inventory));
    await system.emulator.clearLog();

    await driver.close();
    await driver.start();
    await system.until(
      'the restarted driver streams',
      async () => (await system.status('node-a', GPU))?.stream?.state === 'streaming',
      REMOVAL_GRACE_MS,
    );
    expect(await system.emulator.sliceWrites()).toEqual([]);
    expect(publishes(await slices(), inventory)).toBe(true);
    expect((await system.status('node-a', GPU))?.sync?.outcome).toBe('synced');
  }, 60_000);

  it('a driver back after the grace is published within 2 s of registering, same inventory', async () => {
    const inventory = gpuInventory({ devices: 4 });
    const slices = () => system.emulator.slices({ node: 'node-a', driver: 'nic.example.com' });
    const driver = await system.inProcessDriver({
      node: 'node-a',
      driver: 'nic.example.com',
      inventory,
    });
    await system.until('published', async () => publishes(await slices(), inventory));
    await driver.stop();
    await system.removePlugin('node-a', 'nic.example.com', '0s');
    await system.until('withdrawn', async () => (await slices()).length === 0);

    await driver.start();
    await system.until('published again', async () => publishes(await slices(), inventory), 2000);
  }, 60_000);
});

describe.each(['shared', 'node'] as const)('Redis restarted empty, watcher in %s mode', (mode) => {
  const NODES = mode === 'node' ? ['node-0'] : ['node-0', 'node-1', 'node-2', 'node-3'];
  let system: System;
  let drivers: InProcessDriver[];

  beforeAll(async () => {
    system = await System.start({
      name: `redis-empty-${mode}`,
      nodes: NODES,
      syncerEnv: { JANITOR_INTERVAL: '500ms', ORPHAN_GRACE: '3s' },
      watcherEnv: mode === 'node' ? { WATCHER_MODE: 'node', NODE_NAME: 'node-0' } : {},
    });
    drivers = await Promise.all(
      NODES.map((node) => system.inProcessDriver({ node, driver: GPU, inventory: gpuInventory() })),
    );
    await system.until('every driver published', async () => {
      for (const driver of drivers) {
        if ((await system.status(driver.node, GPU))?.sync?.outcome !== 'synced') return false;
      }
      return true;
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('deletes nothing, and every key is synced again without a driver registering', async () => {
    await system.emulator.clearLog();
    await system.redis.kill();
    await system.redis.restart({ empty: true });
    await system.until(
      'every key synced again',
      async () => {
        for (const driver of drivers) {
          const status = await system.status(driver.node, GPU);
          if (status?.sync?.outcome !== 'synced' || status.stream?.state !== 'streaming')
            return false;
        }
        return true;
      },
      30_000,
    );
    // Past the orphan grace, with the janitor running every 500 ms.
    await pass(4000);
    expect((await system.emulator.sliceWrites()).filter((w) => w.verb === 'delete')).toEqual([]);
    expect(await system.emulator.slices({ driver: GPU })).toHaveLength(NODES.length);

    // News flows again.
    const [first] = drivers as [InProcessDriver];
    first.publish(gpuInventory({ rev: 7 }));
    await system.until('a new inventory published', async () =>
      publishes(
        await system.emulator.slices({ node: first.node, driver: GPU }),
        gpuInventory({ rev: 7 }),
      ),
    );
  }, 90_000);
});
