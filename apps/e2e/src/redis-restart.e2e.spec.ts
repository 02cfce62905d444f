import { System, gpuInventory, publishes } from './harness';
import type { InProcessDriver } from './harness';

const NODES = Array.from({ length: 10 }, (_, i) => `node-${i}`);
const GPU = 'gpu.example.com';
const ORPHAN_GRACE_MS = 12_000;

describe('Redis restarts (scenario 8)', () => {
  let system: System;
  let drivers: InProcessDriver[];
  const revs = new Map<string, number>();

  const publish = (driver: InProcessDriver, rev: number): void => {
    revs.set(driver.node, rev);
    driver.publish(gpuInventory({ rev }));
  };
  const converged = async (among: readonly InProcessDriver[]): Promise<boolean> => {
    for (const driver of among) {
      const slices = await system.emulator.slices({ node: driver.node, driver: GPU });
      if (!publishes(slices, gpuInventory({ rev: revs.get(driver.node) ?? 0 }))) return false;
    }
    return true;
  };

  beforeAll(async () => {
    system = await System.start({
      name: 'redis-restart',
      nodes: NODES,
      redisAppendOnly: true,
      syncerEnv: { JANITOR_INTERVAL: '1s', ORPHAN_GRACE: `${ORPHAN_GRACE_MS}ms` },
    });
    drivers = await Promise.all(
      NODES.map((node) => system.inProcessDriver({ node, driver: GPU, inventory: gpuInventory() })),
    );
    await system.until('every driver published', () => converged(drivers));
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('a crash in the middle of a churn (append-only file on) loses no job: state converges', async () => {
    let rev = 0;
    const churn = async (rounds: number) => {
      for (let round = 0; round < rounds; round++) {
        rev++;
        for (const driver of drivers) publish(driver, rev);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await churn(20);
    await system.redis.kill();
    await churn(10);
    await system.redis.restart();
    await churn(20);

    await system.until('the last inventories published', () => converged(drivers), 60_000);
    for (const driver of drivers) {
      const status = await system.status(driver.node, GPU);
      expect(status?.sync?.outcome).toBe('synced');
      expect(status?.stream?.state).toBe('streaming');
    }
  }, 120_000);

  it('an empty restart deletes nothing within the orphan grace; drivers re-registering recover it all', async () => {
    // The watcher is gone too, so nothing rewrites the snapshots: every key is an orphan.
    await system.killService('plugin-watcher');
    const [gone, ...back] = drivers as [InProcessDriver, ...InProcessDriver[]];
    await gone.stop();
    await system.emulator.clearLog();
    const wipedAt = Date.now();
    await system.redis.kill();
    await system.redis.restart({ empty: true });

    await system.until(
      'half the orphan grace period',
      () => Date.now() >= wipedAt + ORPHAN_GRACE_MS / 2,
      ORPHAN_GRACE_MS,
    );
    expect(await system.emulator.sliceWrites()).toEqual([]);
    expect(await system.emulator.slices()).toHaveLength(NODES.length);

    // The drivers re-register (all but one, which never comes back).
    await system.startService('plugin-watcher');
    await Promise.all(back.map((driver) => driver.register()));
    await system.until('the re-registered drivers stream again', async () => {
      for (const driver of back) {
        if ((await system.status(driver.node, GPU))?.stream?.state !== 'streaming') return false;
      }
      return true;
    });

    // Past the grace period the janitor (scheduled again after the wipe) withdraws the orphan.
    await system.until(
      "the orphan's slices withdrawn",
      async () => (await system.emulator.slices({ node: gone.node })).length === 0,
      ORPHAN_GRACE_MS + 15_000,
    );
    expect(Date.now() - wipedAt).toBeGreaterThanOrEqual(ORPHAN_GRACE_MS);
    const writes = await system.emulator.sliceWrites();
    expect(
      writes.map((w) => `${w.verb} ${w.name.includes(`-${gone.node}-`) ? 'orphan' : 'other'}`),
    ).toEqual(['delete orphan']);

    // Full recovery: news flows again.
    const [first] = back as [InProcessDriver];
    publish(first, 999);
    await system.until('a new inventory published after the wipe', () => converged(back));
  }, 120_000);
});
