import { System, gpuInventory, publishes } from './harness';

const GPU = 'gpu.example.com';
const WIPE_DELAY_MS = 5000;

describe('a cluster that drops device taints (DRADeviceTaints off, as 1.34 by default)', () => {
  let system: System;

  beforeAll(async () => {
    system = await System.start({
      name: 'taint-fallback',
      nodes: ['node-a'],
      watcherEnv: { WIPE_DELAY: `${WIPE_DELAY_MS}ms` },
      emulatorEnv: { FEATURE_GATES: 'DRADeviceTaints=false' },
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('a killed driver: the status says the taint was dropped; the slices go after the wipe delay', async () => {
    const inventory = gpuInventory({ devices: 4 });
    const driver = await system.exampleDriver({ node: 'node-a', driver: GPU, inventory });
    const slices = () => system.emulator.slices({ node: 'node-a', driver: GPU });
    await system.until('the driver published', async () => publishes(await slices(), inventory));

    await driver.kill();
    await system.until(
      'the status says the taint was dropped',
      async () => (await system.status('node-a', GPU))?.sync?.taints?.unreachable === 'dropped',
    );
    const status = await system.status('node-a', GPU);
    expect(status?.sync?.droppedFields).toEqual(['spec.devices[*].taints (DRADeviceTaints)']);
    // Today's behaviour: schedulable until withdrawn.
    expect((await slices()).flatMap((s) => s.spec.devices ?? []).some((d) => d.taints)).toBe(false);
    await system.until('the slices withdrawn', async () => (await slices()).length === 0, 30_000);
    const metrics = await system.syncerMetrics();
    expect(metrics).toMatch(/^slicekeeper_unreachable_taint_fallbacks_total{[^}]*} 1$/m);

    // What `kubectl describe node` tells: the loss, why the devices stayed schedulable, the wipe.
    await system.until('the withdrawal is told on the Node', async () =>
      (await system.nodeEvents('node-a')).some((e) => e.reason === 'ResourceSlicesWithdrawn'),
    );
    const events = await system.nodeEvents('node-a');
    expect(events.map(({ type, reason }) => `${type} ${reason}`)).toEqual([
      'Warning FieldsDropped',
      'Warning DriverUnreachable',
      'Warning ResourceSlicesWithdrawn',
    ]);
    expect(events[0]?.note).toContain('spec.devices[*].taints (DRADeviceTaints)');
    expect(events[1]?.note).toContain('the API server drops device taints');
    expect(events[2]?.note).toBe(
      `driver ${GPU}: unreachable for longer than the wipe delay: 1 ResourceSlice deleted`,
    );
  }, 60_000);
});
