import type { kubeletDra } from '@slicekeeper/proto';
import { Kubelet130Driver, System } from './harness';

/** A published device as kubectl shows it, with the fields this scenario reads. */
interface PublishedDevice {
  name: string;
  attributes?: Record<string, Record<string, unknown>>;
  capacity?: Record<string, { value: string }>;
}

/** Named resources as a driver written for kubelet 1.30 streams them: every attribute type. */
function namedGpus(count: number): kubeletDra.NodeListAndWatchResourcesResponse {
  return {
    resources: [
      {
        namedResources: {
          instances: Array.from({ length: count }, (_, i) => ({
            name: `gpu-${i}`,
            attributes: [
              { name: 'model', attributeValue: { string: 'A100' } },
              { name: 'index', attributeValue: { int: BigInt(i) } },
              { name: 'mig', attributeValue: { bool: false } },
              { name: 'driverVersion', attributeValue: { version: '550.54.15' } },
              { name: 'memory', attributeValue: { quantity: { string: '80Gi' } } },
              { name: 'numaNodes', attributeValue: { intSlice: { ints: [0n, 1n] } } },
              { name: 'links', attributeValue: { stringSlice: { strings: ['nvlink', 'pcie'] } } },
            ],
          })),
        },
      },
    ],
  };
}

describe('a driver written for kubelet 1.30 (v1alpha3 named resources)', () => {
  let system: System;
  let driver: Kubelet130Driver | undefined;

  beforeAll(async () => {
    system = await System.start({ name: 'kubelet-130-driver', nodes: ['node-a'] });
  }, 90_000);

  afterAll(async () => {
    await driver?.close();
    await system.close();
  });

  const slicesOf = async () =>
    (await system.kubectlSlices()).filter((s) => s.spec.driver === 'gpu.k130.example.com');
  const devicesOf = async () =>
    (await slicesOf()).flatMap((s) => (s.spec.devices ?? []) as PublishedDevice[]);

  it('registers with supported_versions ["1.0.0"] and its named resources are published unchanged', async () => {
    driver = await Kubelet130Driver.start(system, {
      node: 'node-a',
      driver: 'gpu.k130.example.com',
      resources: namedGpus(2),
    });
    await system.until(
      'the kubelet 1.30 driver synced',
      async () =>
        (await system.status('node-a', 'gpu.k130.example.com'))?.sync?.outcome === 'synced',
    );

    const status = await system.status('node-a', 'gpu.k130.example.com');
    expect(status?.registrations).toEqual([expect.objectContaining({ version: '1.0.0' })]);
    expect(driver.told).toEqual([expect.objectContaining({ pluginRegistered: true })]);

    const slices = await slicesOf();
    expect(slices).toHaveLength(1);
    expect(slices[0]?.spec.nodeName).toBe('node-a');
    expect(slices[0]?.spec.pool.name).toBe('node-a');
    const devices = await devicesOf();
    expect(devices.map((d) => d.name).sort()).toEqual(['gpu-0', 'gpu-1']);
    expect(devices.find((d) => d.name === 'gpu-1')).toEqual({
      name: 'gpu-1',
      attributes: {
        model: { string: 'A100' },
        index: { int: 1 },
        mig: { bool: false },
        driverVersion: { version: '550.54.15' },
        numaNodes: { string: '0,1' },
        links: { string: 'nvlink,pcie' },
      },
      capacity: { memory: { value: '80Gi' } },
    });
  }, 90_000);

  it('a new message on the stream replaces the inventory', async () => {
    if (driver === undefined) throw new Error('the driver of the first scenario is not running');
    driver.publish(namedGpus(3));
    await system.until('three devices published', async () => (await devicesOf()).length === 3);
    expect((await devicesOf()).map((d) => d.name).sort()).toEqual(['gpu-0', 'gpu-1', 'gpu-2']);
  }, 60_000);
});
