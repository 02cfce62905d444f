import { System, gpuInventory, publishes } from './harness';
import type { ServiceName } from './harness';

const NODES = Array.from({ length: 10 }, (_, i) => `node-${i}`);

describe('restarting every slicekeeper process (scenario 7)', () => {
  let system: System;

  beforeAll(async () => {
    system = await System.start({
      name: 'restart',
      nodes: NODES,
      syncerReplicas: 2,
      // Every key is synced again within seconds of the restart, so the test sees them all.
      syncerEnv: { RESYNC_INTERVAL: '3s' },
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('with unchanged drivers costs zero ResourceSlice writes', async () => {
    const inventory = gpuInventory({ devices: 200 });
    await system.exampleDriver({ node: 'node-0', driver: 'gpu.example.com', inventory });
    await Promise.all(
      NODES.slice(1).map((node) =>
        system.inProcessDriver({ node, driver: 'gpu.example.com', inventory }),
      ),
    );
    const synced = async (after: number) => {
      for (const node of NODES) {
        const status = await system.status(node, 'gpu.example.com');
        if (status?.stream?.state !== 'streaming' || status.sync?.outcome !== 'synced') {
          return false;
        }
        if (Date.parse(status.sync.finishedAt) <= after) return false;
      }
      return true;
    };
    await system.until('every driver published', () => synced(0));
    await system.emulator.clearLog();

    const services: ServiceName[] = ['registration-api', 'plugin-watcher', ...system.syncers];
    await Promise.all(services.map((name) => system.stopService(name)));
    const restartedAt = Date.now();
    await Promise.all(services.map((name) => system.startService(name)));
    await system.until('every key streamed and synced again after the restart', () =>
      synced(restartedAt),
    );

    expect(await system.emulator.sliceWrites()).toEqual([]);
    for (const node of NODES) {
      expect(publishes(await system.emulator.slices({ node }), inventory)).toBe(true);
    }
  }, 90_000);
});
