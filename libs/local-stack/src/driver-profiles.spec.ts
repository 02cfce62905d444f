import type { DriverInventory } from '@slicekeeper/contracts';
import {
  featureGatesUsed,
  isClusterScoped,
  listDriverProfiles,
  loadDriverProfile,
} from './driver-profiles';

describe('the example driver profiles as the local stack reads them', () => {
  it('lists every profile file', () => {
    expect(listDriverProfiles()).toEqual(['fabric', 'gpu', 'nic', 'partitionable-gpu']);
  });

  it.each<[string, string, readonly string[], boolean]>([
    ['gpu needs no gate and runs one driver per node', 'gpu', [], false],
    [
      'partitionable-gpu needs DRAPartitionableDevices (sharedCounters, consumesCounters)',
      'partitionable-gpu',
      ['DRAPartitionableDevices'],
      false,
    ],
    [
      'nic needs DRAConsumableCapacity (allowMultipleAllocations, requestPolicy)',
      'nic',
      ['DRAConsumableCapacity'],
      false,
    ],
    [
      'fabric needs DRAPartitionableDevices and DRADeviceBindingConditions, on the cluster-scoped key',
      'fabric',
      ['DRAPartitionableDevices', 'DRADeviceBindingConditions'],
      true,
    ],
  ])('%s', (_, profile, gates, clusterScoped) => {
    const inventory = loadDriverProfile(profile);
    expect(featureGatesUsed(inventory)).toEqual(gates);
    expect(isClusterScoped(inventory)).toBe(clusterScoped);
  });

  it.each<[string, DriverInventory, readonly string[]]>([
    [
      'device taints need DRADeviceTaints',
      {
        pools: [
          {
            name: 'p',
            scope: { kind: 'node' },
            devices: [{ name: 'd', taints: [{ key: 'k', effect: 'NoSchedule' }] }],
          },
        ],
      },
      ['DRADeviceTaints'],
    ],
    [
      'counter sets of an explicit slice need DRAPartitionableDevices',
      {
        pools: [
          {
            name: 'p',
            scope: { kind: 'all-nodes' },
            devices: [],
            slices: [{ devices: [], sharedCounters: [{ name: 's', counters: {} }] }],
          },
        ],
      },
      ['DRAPartitionableDevices'],
    ],
  ])('%s', (_, inventory, gates) => {
    expect(featureGatesUsed(inventory)).toEqual(gates);
  });

  it('names the file of a profile that does not exist', () => {
    expect(() => loadDriverProfile('tpu')).toThrow(/profiles\/tpu\.json/);
  });
});
