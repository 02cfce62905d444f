import { parse } from 'yaml';
import type { Device, DriverInventory } from '@slicekeeper/contracts';
import { loadDriverProfile } from '@slicekeeper/local-stack';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import { System } from './harness';
import type { ResourceSliceVersion } from './harness';
import { ProfileDriver } from './harness/profile-driver';

const RUN = 'device-profiles';

/** The alpha gates of 1.34 that the example driver's profiles need. */
const PROFILE_GATES = [
  'DRADeviceTaints',
  'DRAPartitionableDevices',
  'DRADeviceBindingConditions',
  'DRAConsumableCapacity',
] as const;
const gates = (on: boolean): string => PROFILE_GATES.map((gate) => `${gate}=${on}`).join(',');

/** The example driver's profiles, each as its own driver (one key each). */
const PROFILES = [
  { profile: 'gpu', driver: 'gpu.example.com', node: 'node-a' },
  { profile: 'partitionable-gpu', driver: 'partitionable-gpu.example.com', node: 'node-a' },
  { profile: 'nic', driver: 'nic.example.com', node: 'node-a' },
  // A cluster-level pool: the cluster-scoped key.
  { profile: 'fabric', driver: 'fabric.example.com', node: '' },
] as const;
type ProfileCase = (typeof PROFILES)[number];

const VERSIONS: readonly ResourceSliceVersion[] = ['v1', 'v1beta2', 'v1beta1'];

/** A ResourceSlice as kubectl prints it, in v1's shape; the spec is compared whole. */
interface PrintedSlice {
  metadata: { name: string; ownerReferences?: { kind: string; name: string }[] };
  spec: {
    driver: string;
    nodeName?: string;
    perDeviceNodeSelection?: boolean;
    pool: { name: string };
    devices?: (Record<string, unknown> & { name: string; basic?: Record<string, unknown> })[];
    sharedCounters?: unknown[];
  };
}

/**
 * `kubectl get resourceslices.<version>.resource.k8s.io -o yaml`, the driver's slices in v1's
 * shape (v1beta1 keeps a device's fields but its name under `basic`).
 */
async function printedSlices(
  system: System,
  version: ResourceSliceVersion,
  driver: string,
): Promise<PrintedSlice[]> {
  const printed = await system.kubectl(
    'get',
    `resourceslices.${version}.resource.k8s.io`,
    '-o',
    'yaml',
  );
  const list = parse(printed) as { items: PrintedSlice[] };
  return list.items
    .filter((slice) => slice.spec.driver === driver)
    .map((slice) => ({
      ...slice,
      spec: {
        ...slice.spec,
        ...(slice.spec.devices === undefined
          ? {}
          : { devices: slice.spec.devices.map(({ basic, ...rest }) => ({ ...rest, ...basic })) }),
      },
    }));
}

/** A device as it is published: all but what slicekeeper keeps to itself (health). */
function published(device: Device): Record<string, unknown> {
  const fields: Partial<Device> = { ...device };
  delete fields.health;
  delete fields.passThrough;
  return { ...fields, ...device.passThrough };
}

function byName<T extends { name: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => a.name.localeCompare(b.name));
}

/** The Events about the driver's key, by reason (`kubectl get events.v1.events.k8s.io`). */
async function driverEvents(
  system: System,
  driver: string,
): Promise<{ reason: string; note: string }[]> {
  const list = JSON.parse(
    await system.kubectl('get', 'events.v1.events.k8s.io', '-A', '-o', 'json'),
  ) as { items: { reason: string; note: string }[] };
  return list.items.filter((event) => event.note.startsWith(`driver ${driver}:`));
}

/** Asks the syncers for three resyncs of the key, one after the other, each until it finished. */
async function resyncThreeTimes(
  system: System,
  driver: ProfileDriver,
  key: { node: string; driver: string },
): Promise<void> {
  const redis = createRedisConnection({ target: { kind: 'server', url: system.redis.url } });
  const queue = new SyncQueue({ connection: redis, prefix: 'sk' });
  try {
    for (let i = 0; i < 3; i++) {
      const before = (await driver.status())?.sync?.finishedAt;
      await queue.enqueue(key, 'resync');
      await system.until(`resync ${i + 1} of ${key.driver} finished`, async () => {
        const sync = (await driver.status())?.sync;
        return sync?.finishedAt !== before;
      });
    }
  } finally {
    await queue.close();
    redis.disconnect();
  }
}

describe('the example driver profiles on kube-apiserver 1.34 with the four alpha DRA gates on', () => {
  let system: System;
  const drivers = new Map<string, ProfileDriver>();

  beforeAll(async () => {
    system = await System.start({
      name: RUN,
      nodes: ['node-a'],
      emulatorEnv: { KUBE_RELEASE: '1.34', FEATURE_GATES: gates(true) },
    });
  }, 90_000);

  afterAll(async () => {
    await Promise.all([...drivers.values()].map((driver) => driver.close()));
    await system.close();
  });

  it.each(PROFILES.map((p) => [p.profile, p] as const))(
    '%s: published, and kubectl shows every field as sent in v1, v1beta2 and v1beta1',
    async (_, { profile, driver: name, node }: ProfileCase) => {
      const driver = new ProfileDriver(system, { run: RUN, profile, driver: name, node });
      drivers.set(profile, driver);
      await driver.start();
      await system.until(
        `${profile} synced`,
        async () => (await driver.status())?.sync?.outcome === 'synced',
      );
      expect((await driver.status())?.sync?.droppedFields).toBeUndefined();

      const inventory = loadDriverProfile(profile);
      const [pool] = inventory.pools;
      const devices = byName(inventory.pools.flatMap((p) => p.devices)).map(published);
      for (const version of VERSIONS) {
        const slices = await printedSlices(system, version, name);
        expect(byName(slices.flatMap((s) => s.spec.devices ?? []))).toEqual(devices);
        expect(slices.flatMap((s) => s.spec.sharedCounters ?? [])).toEqual(
          pool?.sharedCounters ?? [],
        );
        for (const slice of slices) {
          if (node === '') {
            // A cluster-level pool: each device names its nodes; no Node owns the slices.
            expect(slice.spec.perDeviceNodeSelection).toBe(true);
            expect(slice.spec.nodeName).toBeUndefined();
            expect(slice.spec.pool.name).toBe(pool?.name);
            expect(slice.metadata.ownerReferences).toBeUndefined();
          } else {
            expect(slice.spec.nodeName).toBe(node);
            expect(slice.spec.pool.name).toBe(node);
            expect(slice.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).toEqual([
              `Node/${node}`,
            ]);
          }
        }
      }
    },
    60_000,
  );
});

describe('the example driver profiles on kube-apiserver 1.34 with the four alpha DRA gates off', () => {
  let system: System;
  const drivers = new Map<string, ProfileDriver>();

  beforeAll(async () => {
    system = await System.start({
      name: `${RUN}-gates-off`,
      nodes: ['node-a'],
      emulatorEnv: { KUBE_RELEASE: '1.34', FEATURE_GATES: gates(false) },
    });
  }, 90_000);

  afterAll(async () => {
    await Promise.all([...drivers.values()].map((driver) => driver.close()));
    await system.close();
  });

  it.each<[string, ProfileCase, readonly string[]]>([
    ['gpu: nothing to drop', PROFILES[0], []],
    [
      'partitionable-gpu: the counters dropped (DRAPartitionableDevices)',
      PROFILES[1],
      [
        'spec.devices[*].consumesCounters (DRAPartitionableDevices)',
        'spec.sharedCounters (DRAPartitionableDevices)',
      ],
    ],
    [
      'nic: the consumable capacity dropped (DRAConsumableCapacity)',
      PROFILES[2],
      [
        'spec.devices[*].allowMultipleAllocations (DRAConsumableCapacity)',
        'spec.devices[*].capacity[*].requestPolicy (DRAConsumableCapacity)',
      ],
    ],
  ])(
    '%s: named in the status, the feedback and one Event; three resyncs write nothing',
    async (_, { profile, driver: name, node }, dropped) => {
      const driver = new ProfileDriver(system, {
        run: `${RUN}-gates-off`,
        profile,
        driver: name,
        node,
      });
      drivers.set(profile, driver);
      await driver.start();
      await system.until(
        `${profile} synced`,
        async () => (await driver.status())?.sync?.outcome === 'synced',
      );
      const sync = (await driver.status())?.sync;
      expect([...(sync?.droppedFields ?? [])].sort()).toEqual(dropped);

      await system.until(`${profile}: the driver told`, () =>
        driver.feedback.some((f) => f.outcome === 'synced'),
      );
      const told = driver.feedback.filter((f) => f.outcome === 'synced').at(-1);
      expect([...(told?.droppedFields ?? [])].sort()).toEqual(dropped);

      if (dropped.length > 0) {
        await system.until(`${profile}: the FieldsDropped Event`, async () =>
          (await driverEvents(system, name)).some((e) => e.reason === 'FieldsDropped'),
        );
      }
      const events = (await driverEvents(system, name)).filter((e) => e.reason === 'FieldsDropped');
      expect(events).toHaveLength(dropped.length > 0 ? 1 : 0);
      for (const field of dropped) expect(events[0]?.note).toContain(field);

      await system.emulator.clearLog();
      await resyncThreeTimes(system, driver, { node, driver: name });
      expect(await system.emulator.sliceWrites()).toEqual([]);
      expect((await driver.status())?.sync?.droppedFields).toEqual(sync?.droppedFields);
      expect(
        (await driverEvents(system, name)).filter((e) => e.reason === 'FieldsDropped'),
      ).toHaveLength(events.length);
    },
    90_000,
  );

  it('fabric: a per-device pool loses its node selection with DRAPartitionableDevices off, and the server refuses it: invalid, with its field path', async () => {
    const { profile, driver: name, node } = PROFILES[3];
    const driver = new ProfileDriver(system, {
      run: `${RUN}-gates-off`,
      profile,
      driver: name,
      node,
    });
    drivers.set(profile, driver);
    await driver.start();
    await system.until(
      `${profile} refused`,
      async () => (await driver.status())?.sync?.outcome === 'invalid',
    );
    // kube-apiserver 1.34.9's answer: with perDeviceNodeSelection dropped, the spec has none.
    expect((await driver.status())?.sync?.error).toContain(
      'spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    );
  }, 90_000);

  it('fabric with DRAPartitionableDevices on again: the binding conditions dropped (DRADeviceBindingConditions), in the status, the feedback and one Event; three resyncs write nothing', async () => {
    await system.restartEmulator({
      FEATURE_GATES: `${gates(false)},DRAPartitionableDevices=true`,
    });
    const name = 'fabric-binding.example.com';
    const driver = new ProfileDriver(system, {
      run: `${RUN}-gates-off`,
      profile: 'fabric',
      driver: name,
      node: '',
    });
    drivers.set(name, driver);
    await driver.start();
    await system.until('synced', async () => (await driver.status())?.sync?.outcome === 'synced');
    const dropped = [
      'spec.devices[*].bindingConditions (DRADeviceBindingConditions)',
      'spec.devices[*].bindingFailureConditions (DRADeviceBindingConditions)',
      'spec.devices[*].bindsToNode (DRADeviceBindingConditions)',
    ];
    const sync = (await driver.status())?.sync;
    expect([...(sync?.droppedFields ?? [])].sort()).toEqual(dropped);
    await system.until('the driver told', () =>
      driver.feedback.some((f) => f.outcome === 'synced'),
    );
    const told = driver.feedback.filter((f) => f.outcome === 'synced').at(-1);
    expect([...(told?.droppedFields ?? [])].sort()).toEqual(dropped);
    // What the server kept: each device's node selection, without its binding conditions.
    const [slice] = await printedSlices(system, 'v1', name);
    expect(slice?.spec.perDeviceNodeSelection).toBe(true);
    expect(slice?.spec.devices?.map((d) => [d.name, d.bindingConditions, d.bindsToNode])).toEqual([
      ['fabric-gpu-0', undefined, undefined],
      ['fabric-gpu-1', undefined, undefined],
      ['fabric-gpu-2', undefined, undefined],
    ]);

    await system.emulator.clearLog();
    await resyncThreeTimes(system, driver, { node: '', driver: name });
    expect(await system.emulator.sliceWrites()).toEqual([]);
    // The key has no Node for the Event to be about: it must still be told once.
    await system.until('the FieldsDropped Event', async () =>
      (await driverEvents(system, name)).some((e) => e.reason === 'FieldsDropped'),
    );
    const events = (await driverEvents(system, name)).filter((e) => e.reason === 'FieldsDropped');
    expect(events).toHaveLength(1);
    for (const field of dropped) expect(events[0]?.note).toContain(field);
  }, 90_000);
});

/** A GPU whose device carries KEP-5517's field (1.37), which slicekeeper has no typed field for. */
function allocatableInventory(deviceMultiplier: string): DriverInventory {
  return {
    pools: [
      {
        name: '',
        scope: { kind: 'node' },
        devices: [
          {
            name: 'gpu-0',
            attributes: { model: { string: 'H100-SXM5-80GB' } },
            capacity: { memory: { value: '80Gi' } },
            passThrough: { nodeAllocatableResources: { cpu: { mapping: { deviceMultiplier } } } },
          },
          { name: 'gpu-1', attributes: { model: { string: 'H100-SXM5-80GB' } } },
        ],
      },
    ],
  };
}

describe('the pass-through escape hatch: a 1.37 device field slicekeeper does not know', () => {
  let system: System;
  const drivers: ProfileDriver[] = [];
  const run = `${RUN}-pass-through`;

  beforeAll(async () => {
    system = await System.start({
      name: run,
      nodes: ['node-a'],
      emulatorEnv: { KUBE_RELEASE: '1.37', FEATURE_GATES: 'DRANodeAllocatableResources=true' },
    });
  }, 90_000);

  afterAll(async () => {
    await Promise.all(drivers.map((driver) => driver.close()));
    await system.close();
  });

  it('reaches the server with its gate on; a malformed one is invalid with the server field path; with the gate off it is reported dropped', async () => {
    const name = 'allocatable.example.com';
    const driver = new ProfileDriver(system, {
      run,
      profile: 'gpu',
      driver: name,
      node: 'node-a',
      inventory: allocatableInventory('8'),
    });
    drivers.push(driver);
    await driver.start();
    await system.until('synced', async () => (await driver.status())?.sync?.outcome === 'synced');
    expect((await driver.status())?.sync?.droppedFields).toBeUndefined();
    for (const version of VERSIONS) {
      const [slice] = await printedSlices(system, version, name);
      expect(
        slice?.spec.devices?.find((d) => d.name === 'gpu-0')?.nodeAllocatableResources,
      ).toEqual({
        cpu: { mapping: { deviceMultiplier: '8' } },
      });
    }

    // The server alone checks what passes through: its 422 names the field.
    await driver.publish(allocatableInventory('-1'));
    await system.until('refused', async () => (await driver.status())?.sync?.outcome === 'invalid');
    // The status names the server's field path (its 422, as the syncer was answered).
    expect((await driver.status())?.sync?.error).toContain(
      'spec.devices[0].nodeAllocatableResources[cpu].mapping.deviceMultiplier: Invalid value: "-1": must be positive',
    );
    // What was published stays.
    const [kept] = await printedSlices(system, 'v1', name);
    expect(kept?.spec.devices?.[0]?.nodeAllocatableResources).toEqual({
      cpu: { mapping: { deviceMultiplier: '8' } },
    });

    // A server with the gate off drops it from a new slice, silently: slicekeeper says so.
    await system.restartEmulator({ FEATURE_GATES: 'DRANodeAllocatableResources=false' });
    const offName = 'allocatable-off.example.com';
    const off = new ProfileDriver(system, {
      run,
      profile: 'gpu',
      driver: offName,
      node: 'node-a',
      inventory: allocatableInventory('8'),
    });
    drivers.push(off);
    await off.start();
    await system.until(
      'synced with the gate off',
      async () => (await off.status())?.sync?.outcome === 'synced',
    );
    const dropped = ['spec.devices[*].nodeAllocatableResources (DRANodeAllocatableResources)'];
    expect((await off.status())?.sync?.droppedFields).toEqual(dropped);
    await system.until('the driver told', () => off.feedback.some((f) => f.outcome === 'synced'));
    expect(off.feedback.filter((f) => f.outcome === 'synced').at(-1)?.droppedFields).toEqual(
      dropped,
    );
    await system.until('the FieldsDropped Event', async () =>
      (await driverEvents(system, offName)).some((e) => e.reason === 'FieldsDropped'),
    );
    const [stored] = await printedSlices(system, 'v1', offName);
    expect(stored?.spec.devices?.[0]?.nodeAllocatableResources).toBeUndefined();

    await system.emulator.clearLog();
    await resyncThreeTimes(system, off, { node: 'node-a', driver: offName });
    expect(await system.emulator.sliceWrites()).toEqual([]);
    expect(
      (await driverEvents(system, offName)).filter((e) => e.reason === 'FieldsDropped'),
    ).toHaveLength(1);
  }, 120_000);
});
