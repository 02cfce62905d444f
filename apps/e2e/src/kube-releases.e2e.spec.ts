import type { DriverInventory } from '@slicekeeper/contracts';
import { System, gpuInventory, publishes } from './harness';
import type { ResourceSlice, ResourceSliceVersion } from './harness';

const NODE = 'node-a';
const GPU_DRIVER = 'gpu.example.com';
const COUNTERS_DRIVER = 'partitions.example.com';

interface ReleaseCase {
  release: '1.32' | '1.33' | '1.36';
  /** The newest resource.k8s.io version the release serves: what slicekeeper must write in. */
  version: ResourceSliceVersion;
  /** FEATURE_GATES of the emulator. */
  gates?: string;
  /**
   * How the counters pool is laid out, or undefined where the release cannot hold it (1.32 has
   * no DRAPartitionableDevices gate at all, so its API drops counters).
   */
  counters?: 'with-devices' | 'apart';
}

const RELEASES: readonly ReleaseCase[] = [
  { release: '1.32', version: 'v1beta1' },
  // Before 1.35 a slice may hold counter sets beside its devices; DRAPartitionableDevices is
  // alpha in 1.33, so it is turned on.
  {
    release: '1.33',
    version: 'v1beta2',
    gates: 'DRAPartitionableDevices=true',
    counters: 'with-devices',
  },
  // From 1.35 a slice holds sharedCounters or devices, not both; 1.36 has the gate on.
  { release: '1.36', version: 'v1', counters: 'apart' },
];

/** GPU partitions drawing on one shared memory counter of 80Gi, 10Gi each. */
function partitionsInventory(): DriverInventory {
  return {
    pools: [
      {
        name: '',
        scope: { kind: 'node' },
        sharedCounters: [{ name: 'gpu-mem', counters: { memory: { value: '80Gi' } } }],
        devices: Array.from({ length: 4 }, (_, i) => ({
          name: `gpu-0-part-${i}`,
          attributes: { profile: { string: '1g.10gb' }, index: { int: i } },
          capacity: { memory: { value: '10Gi' } },
          consumesCounters: [{ counterSet: 'gpu-mem', counters: { memory: { value: '10Gi' } } }],
        })),
      },
    ],
  };
}

type Device = NonNullable<ResourceSlice['spec']['devices']>[number];
type CounterSet = NonNullable<ResourceSlice['spec']['sharedCounters']>[number];

/** A driver's slices as the API server keeps them, without metadata, in name order. */
function specs(slices: readonly ResourceSlice[], driver: string): ResourceSlice['spec'][] {
  return slices
    .filter((s) => s.spec.driver === driver)
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    .map((s) => s.spec);
}

/** Every device and counter set of the pool, wherever the layout put them. */
function poolContent(slices: readonly ResourceSlice['spec'][]): {
  devices: Device[];
  sharedCounters: CounterSet[];
  pools: { name: string; generation: number }[];
} {
  return {
    devices: slices.flatMap((s) => s.devices ?? []).sort((a, b) => a.name.localeCompare(b.name)),
    sharedCounters: slices.flatMap((s) => s.sharedCounters ?? []),
    pools: slices.map((s) => ({ name: s.pool.name, generation: s.pool.generation })),
  };
}

describe('Kubernetes releases: 1.32, 1.33 and 1.36 get the same inventory in the version they serve', () => {
  const systems = new Map<string, System>();
  const system = (release: string): System => {
    const found = systems.get(release);
    if (found === undefined) throw new Error(`no system for ${release}`);
    return found;
  };
  /** Each release's slices, read in the version it serves and brought to v1's shape. */
  const readBack = (c: ReleaseCase) => system(c.release).kubectlSlices(c.version);

  beforeAll(async () => {
    // One system per release, started side by side.
    const started = await Promise.allSettled(
      RELEASES.map(async (c) => {
        const s = await System.start({
          name: `kube-releases-${c.release}`,
          nodes: [NODE],
          emulatorEnv: {
            KUBE_RELEASE: c.release,
            ...(c.gates === undefined ? {} : { FEATURE_GATES: c.gates }),
          },
        });
        systems.set(c.release, s);
        await s.inProcessDriver({ node: NODE, driver: GPU_DRIVER, inventory: gpuInventory() });
        if (c.counters !== undefined) {
          await s.inProcessDriver({
            node: NODE,
            driver: COUNTERS_DRIVER,
            inventory: partitionsInventory(),
          });
        }
      }),
    );
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }, 90_000);

  afterAll(async () => {
    await Promise.all([...systems.values()].map((s) => s.close()));
  });

  it.each(RELEASES)(
    '$release: slicekeeper writes in $version and its status, /readyz and metric say so',
    async (c) => {
      const s = system(c.release);
      const drivers = c.counters === undefined ? [GPU_DRIVER] : [GPU_DRIVER, COUNTERS_DRIVER];
      await s.until(`${drivers.join(', ')} synced`, async () => {
        const statuses = await Promise.all(drivers.map((d) => s.status(NODE, d)));
        return statuses.every((st) => st?.sync?.outcome === 'synced');
      });

      const api = new RegExp(
        `^resource\\.k8s\\.io/${c.version} \\(Kubernetes v${c.release.replace('.', '\\.')}\\.`,
      );
      for (const driver of drivers) {
        const status = await s.status(NODE, driver);
        expect(status?.sync?.api).toMatch(api);
        // Nothing was dropped: the release keeps every field the inventory uses.
        expect(status?.sync?.droppedFields).toBeUndefined();
      }

      const metric = (await s.syncerMetrics())
        .split('\n')
        .filter((line) => line.startsWith('slicekeeper_resource_api_info{'));
      expect(metric).toHaveLength(1);
      expect(metric[0]).toContain(`group_version="resource.k8s.io/${c.version}"`);
      expect(metric[0]).toContain(`release="v${c.release}.`);

      const [metricsUrl] = await s.syncerMetricsUrls();
      const readyz = await fetch(new URL('/readyz', metricsUrl), {
        signal: AbortSignal.timeout(10_000),
      });
      expect(readyz.status).toBe(200);
      expect(await readyz.text()).toContain(`resource.k8s.io/${c.version} (Kubernetes v`);

      // The slices are readable in the version written, with the inventory's devices.
      const gpus = (await readBack(c)).filter((sl) => sl.spec.driver === GPU_DRIVER);
      expect(publishes(gpus, gpuInventory())).toBe(true);
    },
    60_000,
  );

  it('the GPU pool reads back identical as v1 from every release', async () => {
    const byRelease = await Promise.all(
      RELEASES.map(async (c) => ({
        release: c.release,
        gpus: specs(await readBack(c), GPU_DRIVER),
      })),
    );
    const [reference, ...others] = byRelease;
    if (reference === undefined) throw new Error('no release');
    expect(reference.gpus).toHaveLength(1);
    const devices = reference.gpus[0]?.devices ?? [];
    expect(devices).toHaveLength(8);
    expect(devices[3]).toEqual({
      name: 'gpu-3',
      attributes: { model: { string: 'H100-SXM5-80GB' }, index: { int: 3 }, rev: { int: 0 } },
      capacity: { memory: { value: '80Gi' } },
    });
    expect(reference.gpus[0]?.pool).toEqual({
      name: NODE,
      generation: expect.any(Number) as number,
      resourceSliceCount: 1,
    });
    // Devices, attributes, capacity, node, pool and generation: the whole spec, as v1.
    for (const other of others) {
      expect({ release: other.release, gpus: other.gpus }).toEqual({
        release: other.release,
        gpus: reference.gpus,
      });
    }
  });

  it('the counters pool is laid out by each release: beside the devices in 1.33, apart in 1.36', async () => {
    const withCounters = RELEASES.filter((c) => c.counters !== undefined);
    const contents = [];
    for (const c of withCounters) {
      const slices = specs(await readBack(c), COUNTERS_DRIVER);
      if (c.counters === 'with-devices') {
        expect(slices).toHaveLength(1);
        expect(slices[0]?.devices).toHaveLength(4);
        expect(slices[0]?.sharedCounters).toHaveLength(1);
      } else {
        // One slice of devices, one of counter sets; never both in one.
        expect(slices).toHaveLength(2);
        const apart = slices.map((sl) => ({
          devices: sl.devices?.length ?? 0,
          counterSets: sl.sharedCounters?.length ?? 0,
        }));
        expect(apart).toEqual(
          expect.arrayContaining([
            { devices: 4, counterSets: 0 },
            { devices: 0, counterSets: 1 },
          ]),
        );
      }
      for (const sl of slices) expect(sl.pool.resourceSliceCount).toBe(slices.length);
      contents.push(poolContent(slices));
    }

    // Wherever the counter sets sit, the pool holds the same devices and counters.
    const [first, ...rest] = contents;
    expect(first?.sharedCounters).toEqual([
      { name: 'gpu-mem', counters: { memory: { value: '80Gi' } } },
    ]);
    expect(first?.devices[0]?.consumesCounters).toEqual([
      { counterSet: 'gpu-mem', counters: { memory: { value: '10Gi' } } },
    ]);
    for (const other of rest) {
      expect(other.devices).toEqual(first?.devices);
      expect(other.sharedCounters).toEqual(first?.sharedCounters);
      expect(new Set(other.pools.map((p) => p.name))).toEqual(new Set([NODE]));
      expect(new Set(other.pools.map((p) => p.generation))).toEqual(
        new Set(first?.pools.map((p) => p.generation)),
      );
    }
  });
});

describe('Kubernetes upgrade: 1.33 to 1.36 under a running slicekeeper', () => {
  let system: System | undefined;
  const live = (): System => {
    if (system === undefined) throw new Error('no system');
    return system;
  };
  /** The drivers' `sync.api`, by driver. */
  const apis = async (s: System): Promise<(string | undefined)[]> =>
    (await Promise.all([GPU_DRIVER, COUNTERS_DRIVER].map((d) => s.status(NODE, d)))).map(
      (st) => st?.sync?.api,
    );
  const identity = (slices: readonly ResourceSlice[], driver: string) =>
    slices
      .filter((sl) => sl.spec.driver === driver)
      .map((sl) => ({
        name: sl.metadata.name,
        uid: sl.metadata.uid,
        resourceVersion: sl.metadata.resourceVersion,
      }))
      .sort((a, b) => a.name.localeCompare(b.name));

  beforeAll(async () => {
    system = await System.start({
      name: 'kube-upgrade',
      nodes: [NODE],
      emulatorEnv: { KUBE_RELEASE: '1.33', FEATURE_GATES: 'DRAPartitionableDevices=true' },
      syncerEnv: { DISCOVERY_INTERVAL: '1s', RESYNC_INTERVAL: '2s' },
    });
    await system.inProcessDriver({ node: NODE, driver: GPU_DRIVER, inventory: gpuInventory() });
    await system.inProcessDriver({
      node: NODE,
      driver: COUNTERS_DRIVER,
      inventory: partitionsInventory(),
    });
  }, 90_000);

  afterAll(async () => {
    await system?.close();
  });

  it('follows the emulator to resource.k8s.io/v1 without a restart, rewriting only the pool whose layout changed', async () => {
    const s = live();
    await s.until('both drivers synced in v1beta2', async () => {
      const statuses = await Promise.all(
        [GPU_DRIVER, COUNTERS_DRIVER].map((d) => s.status(NODE, d)),
      );
      return statuses.every(
        (st) =>
          st?.sync?.outcome === 'synced' &&
          st.sync.api?.startsWith('resource.k8s.io/v1beta2') === true,
      );
    });
    const before = await s.kubectlSlices('v1beta2');
    const gpusBefore = identity(before, GPU_DRIVER);
    expect(gpusBefore).toHaveLength(1);
    // 1.33 keeps the counter sets beside the devices.
    expect(specs(before, COUNTERS_DRIVER)).toHaveLength(1);
    const countersBefore = identity(before, COUNTERS_DRIVER).map((sl) => sl.name);
    const syncerPid = s.servicePid('slice-syncer-1');
    expect(syncerPid).toBeDefined();

    // The upgrade: the same data, served by 1.36 (v1 only written; counters apart from devices).
    await s.restartEmulator({ KUBE_RELEASE: '1.36' });

    await s.until(
      'both drivers report resource.k8s.io/v1',
      async () => (await apis(s)).every((api) => api?.startsWith('resource.k8s.io/v1 ') === true),
      60_000,
    );
    await s.until(
      'the counters pool is laid out apart in v1',
      async () => {
        const slices = specs(await s.kubectlSlices('v1'), COUNTERS_DRIVER);
        return (
          slices.length === 2 &&
          slices.every(
            (sl) =>
              sl.pool.resourceSliceCount === 2 &&
              (sl.devices?.length ?? 0) * (sl.sharedCounters?.length ?? 0) === 0,
          )
        );
      },
      60_000,
    );
    const after = await s.kubectlSlices('v1');

    // The GPU pool is the very same object: nothing was written for it.
    expect(identity(after, GPU_DRIVER)).toEqual(gpusBefore);
    expect(
      publishes(
        after.filter((sl) => sl.spec.driver === GPU_DRIVER),
        gpuInventory(),
      ),
    ).toBe(true);

    // The counters pool: one slice of devices, one of counter sets, the same content.
    const counters = specs(after, COUNTERS_DRIVER);
    expect(
      counters.map((sl) => ({
        devices: sl.devices?.length ?? 0,
        counterSets: sl.sharedCounters?.length ?? 0,
      })),
    ).toEqual(
      expect.arrayContaining([
        { devices: 4, counterSets: 0 },
        { devices: 0, counterSets: 1 },
      ]),
    );
    expect(poolContent(counters).sharedCounters).toEqual([
      { name: 'gpu-mem', counters: { memory: { value: '80Gi' } } },
    ]);

    // Since the restart, writes went to the counters driver's slices only.
    const countersNames = new Set([
      ...countersBefore,
      ...identity(after, COUNTERS_DRIVER).map((sl) => sl.name),
    ]);
    const writes = await s.emulator.sliceWrites();
    expect(writes.length).toBeGreaterThan(0);
    const named = writes.filter((w) => w.name !== '');
    expect(named.filter((w) => !countersNames.has(w.name))).toEqual([]);
    // Creates carry no name in the log; only the counters pool gained slices.
    const creates = writes.filter((w) => w.verb === 'create').length;
    const newCounterSlices = identity(after, COUNTERS_DRIVER).filter(
      (sl) => !countersBefore.includes(sl.name),
    ).length;
    expect(creates).toBe(newCounterSlices);

    // The slice-syncer followed the upgrade in the same process.
    expect(s.servicePid('slice-syncer-1')).toBe(syncerPid);
  }, 150_000);
});
