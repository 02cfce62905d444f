import { System, gpuInventory, publishes } from './harness';
import type { ExampleDriverProcess } from './harness';

const WIPE_DELAY_MS = 5000;
const GPU = 'gpu.example.com';

describe('driver lifecycle (scenarios 3 and 4)', () => {
  let system: System;
  let driver: ExampleDriverProcess;
  const inventory = gpuInventory({ devices: 8 });
  const slices = () => system.emulator.slices({ node: 'node-a', driver: GPU });

  beforeAll(async () => {
    system = await System.start({
      name: 'driver-lifecycle',
      nodes: ['node-a', 'node-b'],
      watcherEnv: { WIPE_DELAY: `${WIPE_DELAY_MS}ms` },
    });
    driver = await system.exampleDriver({ node: 'node-a', driver: GPU, inventory });
    await system.until('the driver published', async () => publishes(await slices(), inventory));
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  const streaming = async (): Promise<boolean> =>
    (await system.status('node-a', GPU))?.stream?.state === 'streaming';

  it('a driver that comes back before the wipe delay costs no write at all', async () => {
    await system.emulator.clearLog();
    const killedAt = Date.now();
    await driver.kill();
    await driver.start();
    await system.until('the stream is back', streaming);
    expect(Date.now() - killedAt).toBeLessThan(WIPE_DELAY_MS);
    // Watch past the moment the wipe would have happened.
    await system.until(
      'the wipe delay has passed',
      () => Date.now() > killedAt + WIPE_DELAY_MS + 1500,
    );

    expect(await system.emulator.sliceWrites()).toEqual([]);
    expect(publishes(await slices(), inventory)).toBe(true);
  }, 60_000);

  it('a killed driver has its slices withdrawn after the wipe delay, and republished when back', async () => {
    await system.emulator.clearLog();
    const killedAt = Date.now();
    await driver.kill();
    await system.until('the slices withdrawn', async () => (await slices()).length === 0, 30_000);
    const withdrawnAfter = Date.now() - killedAt;
    expect(withdrawnAfter).toBeGreaterThanOrEqual(WIPE_DELAY_MS);
    expect(withdrawnAfter).toBeLessThan(WIPE_DELAY_MS + 10_000);
    expect((await system.emulator.sliceWrites()).map((w) => w.verb)).toEqual(['delete']);
    expect((await system.status('node-a', GPU))?.stream?.state).toBe('wiped');

    await driver.start();
    await system.until('republished', async () => publishes(await slices(), inventory));
    expect((await system.status('node-a', GPU))?.sync?.outcome).toBe('synced');
  }, 60_000);

  it('a plugin removed through the API loses its slices within seconds, with the watcher stopped', async () => {
    const nic = await system.inProcessDriver({
      node: 'node-b',
      driver: 'nic.example.com',
      inventory: gpuInventory({ devices: 4 }),
    });
    const nicSlices = () => system.emulator.slices({ node: 'node-b', driver: nic.driver });
    await system.until('the plugin published', async () => (await nicSlices()).length === 1);

    await system.stopService('plugin-watcher');
    const removedAt = Date.now();
    await system.removePlugin('node-b', nic.driver, '0s');
    await system.until(
      'the slices withdrawn',
      async () => (await nicSlices()).length === 0,
      10_000,
    );
    expect(Date.now() - removedAt).toBeLessThan(5000);
    // The other driver's slices stay.
    expect(publishes(await slices(), inventory)).toBe(true);
    await system.startService('plugin-watcher');
  }, 60_000);
});
