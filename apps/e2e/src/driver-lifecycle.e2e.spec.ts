import { System, gpuInventory, publishes } from './harness';
import type { ExampleDriverProcess } from './harness';

const WIPE_DELAY_MS = 10_000;
const UNREACHABLE = 'gpu.example.com/driver-unreachable';
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
      // The removal must withdraw slices by itself, not the janitor's sweep of removed keys.
      syncerEnv: { JANITOR_INTERVAL: '1h' },
      emulatorEnv: { FEATURE_GATES: 'DRADeviceTaints=true' },
    });
    driver = await system.exampleDriver({ node: 'node-a', driver: GPU, inventory });
    await system.until('the driver published', async () => publishes(await slices(), inventory));
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  const streaming = async (): Promise<boolean> =>
    (await system.status('node-a', GPU))?.stream?.state === 'streaming';

  const tainted = async (): Promise<boolean> => {
    const all = await slices();
    return (
      all.length > 0 &&
      all.every((slice) =>
        (slice.spec.devices ?? []).every((device) =>
          (device.taints ?? []).some((t) => t.key === UNREACHABLE && t.effect === 'NoSchedule'),
        ),
      )
    );
  };
  const untainted = async (): Promise<boolean> =>
    (await slices()).every((slice) =>
      (slice.spec.devices ?? []).every((device) => (device.taints ?? []).length === 0),
    );

  it('a driver killed and back before the wipe delay: tainted, then untainted, the pool generation unchanged', async () => {
    const generation = (await slices())[0]?.spec.pool.generation;
    await system.emulator.clearLog();
    await driver.kill();
    await system.until('every device tainted driver-unreachable', tainted);
    expect((await system.status('node-a', GPU))?.sync?.taints?.unreachable).toBe('tainted');

    await driver.start();
    await system.until('the stream is back', streaming);
    await system.until('the taint removed', untainted);
    // Never withdrawn: the taint came and went in place.
    expect((await system.emulator.sliceWrites()).map((w) => w.verb)).toEqual(['update', 'update']);
    expect((await slices()).map((s) => s.spec.pool.generation)).toEqual([generation]);
    expect(publishes(await slices(), inventory)).toBe(true);
  }, 60_000);

  it('a killed driver is tainted at once, withdrawn after the wipe delay, republished when back', async () => {
    await system.emulator.clearLog();
    const killedAt = Date.now();
    await driver.kill();
    await system.until('every device tainted driver-unreachable', tainted);
    const yaml = await system.kubectl('get', 'resourceslices', '-o', 'yaml');
    expect(yaml).toContain(`key: ${UNREACHABLE}`);
    expect(yaml).toContain('effect: NoSchedule');

    await system.until('the slices withdrawn', async () => (await slices()).length === 0, 30_000);
    // The wipe waits for its delay; the taint did not.
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(WIPE_DELAY_MS);
    expect((await system.emulator.sliceWrites()).map((w) => w.verb)).toEqual(['update', 'delete']);
    expect((await system.status('node-a', GPU))?.stream?.state).toBe('wiped');

    await driver.start();
    await system.until('republished', async () => publishes(await slices(), inventory));
    expect(await untainted()).toBe(true);
    // The syncer records its outcome after the writes it made, so the status can trail them.
    await system.until(
      'the sync recorded as synced',
      async () => (await system.status('node-a', GPU))?.sync?.outcome === 'synced',
    );
  }, 60_000);

  it('a plugin removed through the API loses its slices, with the watcher stopped', async () => {
    const nic = await system.inProcessDriver({
      node: 'node-b',
      driver: 'nic.example.com',
      inventory: gpuInventory({ devices: 4 }),
    });
    const nicSlices = () => system.emulator.slices({ node: 'node-b', driver: nic.driver });
    await system.until('the plugin published', async () => (await nicSlices()).length === 1);

    await system.stopService('plugin-watcher');
    await system.removePlugin('node-b', nic.driver, '0s');
    // With the watcher stopped and the janitor not due, only the removal can withdraw them.
    await system.until('the slices withdrawn', async () => (await nicSlices()).length === 0);
    // The other driver's slices stay.
    expect(publishes(await slices(), inventory)).toBe(true);
    await system.startService('plugin-watcher');
  }, 60_000);
});
