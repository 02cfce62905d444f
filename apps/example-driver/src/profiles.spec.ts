import { readdir } from 'node:fs/promises';
import type { Device, DriverInventory } from '@slicekeeper/contracts';
import { validateDriverResources } from '@slicekeeper/slices';
import { loadConfig } from './config';
import { loadInventoryFile } from './inventory-file';
import { DRIVER_PROFILES, PROFILES_DIR, profileInventoryFile } from './profiles';
import type { DriverProfile } from './profiles';

const DRIVER = 'gpu.example.com';

/** The key a profile is published under: the fabric pool belongs to the cluster-scoped key. */
const KEY_NODE: Record<DriverProfile, string> = {
  gpu: 'node-a',
  'partitionable-gpu': 'node-a',
  nic: 'node-a',
  fabric: '',
};

/** What the watcher makes of the file: an empty pool name is the node's name. */
function asPublished(inventory: DriverInventory, node: string): DriverInventory {
  return { pools: inventory.pools.map((pool) => ({ ...pool, name: pool.name || node })) };
}

function devicesOf(inventory: DriverInventory): Device[] {
  return inventory.pools.flatMap((pool) => pool.devices);
}

describe('example driver profiles', () => {
  it('ship one inventory file per profile, and no other', async () => {
    const files = (await readdir(PROFILES_DIR)).filter((file) => file.endsWith('.json')).sort();
    expect(files).toEqual(DRIVER_PROFILES.map((profile) => `${profile}.json`).sort());
  });

  it.each(DRIVER_PROFILES.map((profile) => [profile]))(
    '%s: validates as upstream validateDriverResources and the ResourceSlice rules would',
    async (profile) => {
      const node = KEY_NODE[profile];
      const inventory = await loadInventoryFile(profileInventoryFile(profile));
      const published = asPublished(inventory, node);
      expect(validateDriverResources(DRIVER, published.pools, { node })).toEqual([]);
    },
  );

  it.each<[string, DriverProfile, (inventory: DriverInventory) => void]>([
    [
      'gpu: eight whole GPUs of the node, as the driver always had',
      'gpu',
      (inventory) => {
        expect(inventory.pools.map((pool) => pool.scope.kind)).toEqual(['node']);
        const devices = devicesOf(inventory);
        expect(devices.map((d) => d.name)).toEqual(Array.from({ length: 8 }, (_, i) => `gpu-${i}`));
        expect(devices[7]?.capacity).toEqual({ memory: { value: '80Gi' } });
      },
    ],
    [
      'partitionable-gpu: whole GPUs and MIG-like partitions consume shared counters',
      'partitionable-gpu',
      (inventory) => {
        const [pool] = inventory.pools;
        expect(pool?.sharedCounters?.map((set) => set.name)).toEqual([
          'gpu-0-counter-set',
          'gpu-1-counter-set',
        ]);
        const devices = devicesOf(inventory);
        expect(devices.filter((d) => /^gpu-\d$/.test(d.name))).toHaveLength(2);
        expect(devices.filter((d) => d.name.includes('-mig-'))).toHaveLength(12);
        expect(devices.every((d) => d.consumesCounters?.length === 1)).toBe(true);
        expect(devices.find((d) => d.name === 'gpu-1-mig-3g-40gb-1')?.consumesCounters).toEqual([
          {
            counterSet: 'gpu-1-counter-set',
            counters: { memory: { value: '40Gi' }, multiprocessors: { value: '60' } },
          },
        ]);
      },
    ],
    [
      'nic: bandwidth shared by several claims, with a validRange and with validValues',
      'nic',
      (inventory) => {
        const devices = devicesOf(inventory);
        expect(devices.every((d) => d.allowMultipleAllocations === true)).toBe(true);
        expect(devices[0]?.capacity?.bandwidth?.requestPolicy).toEqual({
          default: '25G',
          validRange: { min: '25G', max: '400G', step: '25G' },
        });
        expect(devices[3]?.capacity?.bandwidth?.requestPolicy).toEqual({
          default: '10G',
          validValues: ['10G', '25G', '50G', '100G'],
        });
      },
    ],
    [
      'fabric: a per-device pool whose devices choose nodeName, nodeSelector or allNodes, with binding conditions',
      'fabric',
      (inventory) => {
        expect(inventory.pools.map((pool) => [pool.name, pool.scope.kind])).toEqual([
          ['gpu-fabric', 'per-device'],
        ]);
        const devices = devicesOf(inventory);
        expect(devices.map((d) => [d.nodeName, d.nodeSelector !== undefined, d.allNodes])).toEqual([
          ['node-a', false, undefined],
          [undefined, true, undefined],
          [undefined, false, true],
        ]);
        expect(devices.map((d) => d.bindsToNode)).toEqual([undefined, true, true]);
        for (const device of devices) {
          expect(device.bindingConditions).toEqual(['FabricAttached']);
          expect(device.bindingFailureConditions).toEqual(['FabricAttachFailed']);
        }
      },
    ],
  ])('%s', async (_, profile, check) => {
    check(await loadInventoryFile(profileInventoryFile(profile)));
  });
});

describe('PROFILE setting', () => {
  it.each<[string, Record<string, string>, DriverProfile]>([
    ['defaults to gpu', {}, 'gpu'],
    ['selects a profile by name', { PROFILE: 'nic' }, 'nic'],
    ['selects the cluster-level fabric profile', { PROFILE: 'fabric', NODE_NAME: '' }, 'fabric'],
  ])('%s', (_, env, profile) => {
    expect(loadConfig(env).PROFILE).toBe(profile);
  });

  it('refuses an unknown profile, naming the variable and the choices', () => {
    expect(() => loadConfig({ PROFILE: 'tpu' })).toThrow(
      /PROFILE.*must be one of gpu, partitionable-gpu, nic, fabric/,
    );
  });
});
