import { isTerminal } from '@slicekeeper/errors';
import type { Device, DeviceTaint, Pool } from '@slicekeeper/contracts';
import { InvalidDriverResourcesError } from './field-error';
import { isEmptyPlan, planSync } from './plan-sync';
import type { PlanSyncInput, PoolSummary, SliceDeletionReason, SyncPlan } from './plan-sync';
import type { StoredResourceSlice } from './resource-slice';
import { MANAGED_BY_LABEL } from './resource-slice';
import { FakeResourceSliceApi } from './testing/fake-resource-slice-api';
import {
  counterSet,
  DRIVER,
  gpu,
  gpus,
  NODE,
  NODE_UID,
  planInput,
  pool,
  taintedGpu,
} from './testing/fixtures';

/** The slices the API server stores after publishing `pools` from scratch. */
function published(pools: Pool[], overrides: Partial<PlanSyncInput> = {}): StoredResourceSlice[] {
  const api = new FakeResourceSliceApi();
  api.apply(planSync(planInput({ pools, ...overrides })));
  return api.list();
}

/** A changed copy of a stored slice. */
function edited(
  slice: StoredResourceSlice | undefined,
  change: (copy: StoredResourceSlice) => void,
): StoredResourceSlice {
  if (slice === undefined) throw new Error('no such slice in the fixture');
  const copy = structuredClone(slice);
  change(copy);
  return copy;
}

function summary(overrides: Partial<PoolSummary> = {}): PoolSummary {
  return { name: NODE, generation: 1, resourceSliceCount: 1, deviceCount: 8, ...overrides };
}

const eightGpus = published([pool()]);
const twoSlices = published([pool({ devices: gpus(256) })]);
const fullSlice = published([pool({ devices: gpus(128) })]);
const withTaint = published([
  pool({
    devices: [
      gpu(0, {
        taints: [
          { key: 'example.com/ecc', effect: 'NoSchedule', timeAdded: '2025-01-01T00:00:00Z' },
        ],
      }),
    ],
  }),
]);

const UNREACHABLE: DeviceTaint = {
  key: `${DRIVER}/driver-unreachable`,
  effect: 'NoSchedule',
  timeAdded: '2026-11-24T10:00:00Z',
};
const UNHEALTHY: DeviceTaint = { key: `${DRIVER}/unhealthy`, effect: 'NoSchedule' };

/** `devices`, each with `taints` (slicekeeper's lifecycle taints, say). */
function withTaints(devices: Device[], ...taints: DeviceTaint[]): Device[] {
  return devices.map((device) => ({ ...device, taints }));
}

/** `slices` as the API server stores them after it filled in `timeAdded` of every taint. */
function timesAdded(slices: StoredResourceSlice[], timeAdded: string): StoredResourceSlice[] {
  return slices.map((stored) =>
    edited(stored, (slice) => {
      for (const device of slice.spec.devices ?? []) {
        for (const taint of device.taints ?? []) taint.timeAdded ??= timeAdded;
      }
    }),
  );
}

/** 130 devices laid out for taints: 64 + 64 + 2. */
const threeTaintable = published([pool({ devices: gpus(130) })], { taintable: true });
const threeTaintableUnreachable = published(
  [pool({ devices: withTaints(gpus(130), UNREACHABLE) })],
  { taintable: true },
);

/** A NIC shared by several claims (consumable capacity, DRAConsumableCapacity). */
function nic(index: number, defaultBandwidth = '1Gi'): Device {
  return {
    name: `nic-${index}`,
    allowMultipleAllocations: true,
    attributes: { model: { string: 'E810' } },
    capacity: {
      bandwidth: {
        value: '100Gi',
        requestPolicy: {
          default: defaultBandwidth,
          validRange: { min: '1Gi', max: '100Gi', step: '1Gi' },
        },
      },
      queues: { value: '64', requestPolicy: { default: '4', validValues: ['1', '4', '8', '16'] } },
    },
  };
}

/** A fabric-attached GPU: binding conditions (DRADeviceBindingConditions) and a list attribute. */
function boundGpu(index: number, overrides: Partial<Device> = {}): Device {
  return gpu(index, {
    attributes: {
      index: { int: index },
      'resource.kubernetes.io/pcieRoots': { strings: ['pci0000:00', 'pci0000:80'] },
      numaNodes: { ints: [0, 1] },
    },
    bindsToNode: true,
    bindingConditions: ['gpu.example.com/attached'],
    bindingFailureConditions: ['gpu.example.com/attach-failed'],
    ...overrides,
  });
}

function boundGpus(count: number): Device[] {
  return Array.from({ length: count }, (_, i) => boundGpu(i));
}

const BINDING_DROPPED = [
  'spec.devices[*].bindsToNode (DRADeviceBindingConditions)',
  'spec.devices[*].bindingConditions (DRADeviceBindingConditions)',
  'spec.devices[*].bindingFailureConditions (DRADeviceBindingConditions)',
];

/** `slice` as a server with DRADeviceBindingConditions off stores it. */
function withoutBindingConditions(slice: StoredResourceSlice): StoredResourceSlice {
  return edited(slice, (copy) => {
    for (const device of copy.spec.devices ?? []) {
      delete device.bindsToNode;
      delete device.bindingConditions;
      delete device.bindingFailureConditions;
    }
  });
}

/** Three devices, each with its own node selection (DRAPartitionableDevices). */
function fabricDevices(): Device[] {
  return [
    gpu(0, { nodeName: 'node-1' }),
    gpu(1, {
      nodeSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'example.com/rack', operator: 'In', values: ['7'] }] },
        ],
      },
    }),
    gpu(2, { allNodes: true }),
  ];
}

function fabricPool(overrides: Partial<Pool> = {}): Pool {
  return pool({
    name: 'fabric',
    scope: { kind: 'per-device' },
    devices: fabricDevices(),
    ...overrides,
  });
}

/** A pool that passes a device field and a slice field of a newer release through. */
function passThroughPool(partitionTypeAttribute = 'gpu.example.com/profile'): Pool {
  return pool({
    devices: [
      gpu(0, { passThrough: { nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } } } }),
    ],
    passThrough: { partitionTypeAttribute },
  });
}

/** Every typed field of 1.34–1.36 and pass-through members, on three devices. */
function everyFieldPool(): Pool {
  return pool({
    devices: [
      nic(0, '1024Mi'),
      boundGpu(1, { taints: [{ key: 'example.com/ecc', effect: 'NoSchedule' }] }),
      gpu(2, {
        consumesCounters: [{ counterSet: 'memory', counters: { memory: { value: '40Gi' } } }],
        passThrough: { nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } } },
      }),
    ],
    sharedCounters: [counterSet('memory')],
    passThrough: { partitionTypeAttribute: 'gpu.example.com/profile' },
  });
}

interface PlanCase {
  name: string;
  input: PlanSyncInput;
  /** Reasons of the expected deletes, in order. */
  deletes?: SliceDeletionReason[];
  updates?: number;
  creates?: number;
  pools?: PoolSummary[];
  /** Further checks of this case's plan. */
  then?: (plan: SyncPlan, input: PlanSyncInput) => void;
}

const cases: PlanCase[] = [
  {
    name: 'create-slice',
    input: planInput(),
    creates: 1,
    pools: [summary()],
    then: (plan) => {
      expect(plan.creates[0]).toEqual({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: {
          generateName: '00000-gpu.example.com-node-1-',
          labels: { [MANAGED_BY_LABEL]: 'slicekeeper' },
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Node', name: NODE, uid: NODE_UID, controller: true },
          ],
        },
        spec: {
          driver: DRIVER,
          pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
          nodeName: NODE,
          devices: gpus(8),
        },
      });
    },
  },
  {
    name: 'keep-unchanged',
    input: planInput({ existing: eightGpus }),
    pools: [summary()],
  },
  {
    name: 'ignore-map-order',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => {
          for (const device of slice.spec.devices ?? []) {
            device.attributes = Object.fromEntries(
              Object.entries(device.attributes ?? {}).reverse(),
            );
            device.capacity = Object.fromEntries(Object.entries(device.capacity ?? {}).reverse());
          }
        }),
      ],
    }),
    pools: [summary()],
  },
  {
    name: 'compare-quantities-by-value',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => {
          for (const device of slice.spec.devices ?? []) {
            device.capacity = {
              memory: { value: '81920Mi' },
              multiprocessors: { value: '132000m' },
            };
          }
        }),
      ],
    }),
    pools: [summary()],
  },
  {
    name: 'update-when-quantity-differs',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => {
          const first = slice.spec.devices?.[0];
          if (first)
            first.capacity = { memory: { value: '80G' }, multiprocessors: { value: '132' } };
        }),
      ],
    }),
    updates: 1,
    pools: [summary()],
  },
  {
    name: 'taint-time-within-one-second',
    input: planInput({
      existing: withTaint,
      pools: [
        pool({
          devices: [
            gpu(0, {
              taints: [
                {
                  key: 'example.com/ecc',
                  effect: 'NoSchedule',
                  timeAdded: '2025-01-01T00:00:00.900Z',
                },
              ],
            }),
          ],
        }),
      ],
    }),
    pools: [summary({ deviceCount: 1 })],
  },
  {
    name: 'update-when-taint-time-differs-by-more-than-one-second',
    input: planInput({
      existing: withTaint,
      pools: [
        pool({
          devices: [
            gpu(0, {
              taints: [
                { key: 'example.com/ecc', effect: 'NoSchedule', timeAdded: '2025-01-01T00:00:02Z' },
              ],
            }),
          ],
        }),
      ],
    }),
    updates: 1,
    pools: [summary({ deviceCount: 1 })],
  },
  {
    name: 'unset-taint-time-matches-stored-time',
    input: planInput({
      existing: withTaint,
      pools: [
        pool({ devices: [gpu(0, { taints: [{ key: 'example.com/ecc', effect: 'NoSchedule' }] })] }),
      ],
    }),
    pools: [summary({ deviceCount: 1 })],
  },
  {
    name: 'update-keeps-taint-time-added',
    input: planInput({
      existing: withTaint,
      pools: [
        pool({
          devices: [
            gpu(0, {
              taints: [
                { key: 'example.com/ecc', effect: 'NoSchedule' },
                { key: 'example.com/hot', effect: 'None' },
              ],
            }),
          ],
        }),
      ],
    }),
    updates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      expect(plan.updates[0]?.spec.devices?.[0]?.taints).toEqual([
        { key: 'example.com/ecc', effect: 'NoSchedule', timeAdded: '2025-01-01T00:00:00Z' },
        { key: 'example.com/hot', effect: 'None' },
      ]);
    },
  },
  {
    // Upstream PR #131581: adding a device to a one-slice pool must not recreate the slice.
    name: 'update-when-device-added',
    input: planInput({ existing: eightGpus, pools: [pool({ devices: gpus(9) })] }),
    updates: 1,
    pools: [summary({ deviceCount: 9 })],
    then: (plan) => {
      expect(plan.updates[0]?.metadata.name).toBe(eightGpus[0]?.metadata.name);
      expect(plan.updates[0]?.spec.devices).toEqual(gpus(9));
    },
  },
  {
    name: 'update-when-attribute-changed',
    input: planInput({
      existing: eightGpus,
      pools: [pool({ devices: [...gpus(7), gpu(7, { attributes: { index: { int: 7 } } })] })],
    }),
    updates: 1,
    pools: [summary()],
  },
  {
    name: 'update-when-devices-reordered',
    input: planInput({ existing: eightGpus, pools: [pool({ devices: gpus(8).reverse() })] }),
    updates: 1,
    pools: [summary()],
  },
  {
    name: 'update-keeps-metadata',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => {
          slice.metadata.annotations = { 'example.com/note': 'kept' };
        }),
      ],
      pools: [pool({ devices: gpus(9) })],
    }),
    updates: 1,
    pools: [summary({ deviceCount: 9 })],
    then: (plan, input) => {
      const stored = input.existing[0];
      expect(plan.updates[0]?.metadata).toEqual(stored?.metadata);
    },
  },
  {
    name: 'clear-fields-slicekeeper-does-not-write',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => {
          Object.assign(slice.spec.devices?.[0] ?? {}, {
            nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } },
          });
        }),
      ],
    }),
    updates: 1,
    pools: [summary()],
    then: (plan) => {
      expect(plan.updates[0]?.spec.devices?.[0]).toEqual(gpu(0));
    },
  },
  {
    name: 'keep-generation-when-one-of-two-slices-changes',
    input: planInput({
      existing: twoSlices,
      pools: [
        pool({ devices: [...gpus(255), gpu(255, { capacity: { memory: { value: '40Gi' } } })] }),
      ],
    }),
    updates: 1,
    pools: [summary({ resourceSliceCount: 2, deviceCount: 256 })],
  },
  {
    name: 'bump-generation-when-two-slices-change',
    input: planInput({
      existing: twoSlices,
      pools: [
        pool({
          devices: gpus(256).map((device, i) =>
            i === 0 || i === 255 ? { ...device, capacity: { memory: { value: '40Gi' } } } : device,
          ),
        }),
      ],
    }),
    updates: 2,
    pools: [summary({ generation: 2, resourceSliceCount: 2, deviceCount: 256 })],
  },
  {
    name: 'bump-generation-when-slice-added',
    input: planInput({ existing: fullSlice, pools: [pool({ devices: gpus(129) })] }),
    updates: 1,
    creates: 1,
    pools: [summary({ generation: 2, resourceSliceCount: 2, deviceCount: 129 })],
    then: (plan) => {
      expect(plan.updates[0]?.spec.pool).toEqual({
        name: NODE,
        generation: 2,
        resourceSliceCount: 2,
      });
      expect(plan.creates[0]?.metadata.generateName).toBe('00001-gpu.example.com-node-1-');
      expect(plan.creates[0]?.spec.devices).toEqual([gpu(128)]);
    },
  },
  {
    name: 'bump-generation-rewrites-unchanged-slices',
    input: planInput({
      existing: twoSlices,
      pools: [pool({ devices: gpus(257) })],
    }),
    updates: 2,
    creates: 1,
    pools: [summary({ generation: 2, resourceSliceCount: 3, deviceCount: 257 })],
  },
  {
    name: 'driver-generation-wins',
    input: planInput({ existing: eightGpus, pools: [pool({ generation: 7 })] }),
    updates: 1,
    pools: [summary({ generation: 7 })],
  },
  {
    name: 'ignore-lower-driver-generation',
    input: planInput({
      existing: [edited(eightGpus[0], (slice) => (slice.spec.pool.generation = 3))],
      pools: [pool({ generation: 2 })],
    }),
    pools: [summary({ generation: 3 })],
  },
  {
    name: 'delete-outdated-generation',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => (slice.spec.pool.generation = 2)),
        edited(eightGpus[0], (slice) => {
          slice.metadata.name = '00000-gpu.example.com-node-1-older';
          slice.metadata.uid = 'uid-older';
        }),
      ],
    }),
    deletes: ['outdated-generation'],
    pools: [summary({ generation: 2 })],
  },
  {
    name: 'delete-unmatched-name',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => (slice.metadata.name = 'node-1-gpu.example.com-x7k2p')),
      ],
    }),
    deletes: ['unmatched-name'],
    creates: 1,
    pools: [summary({ generation: 2 })],
  },
  {
    name: 'delete-index-out-of-range',
    input: planInput({ existing: published([pool({ devices: gpus(129) })]) }),
    deletes: ['index-out-of-range'],
    updates: 1,
    pools: [summary()],
  },
  {
    name: 'delete-duplicate-index',
    input: planInput({
      existing: [
        ...eightGpus,
        edited(eightGpus[0], (slice) => {
          slice.metadata.name = '00000-gpu.example.com-node-1-zzzzz';
          slice.metadata.uid = 'uid-duplicate';
        }),
      ],
    }),
    deletes: ['duplicate-index'],
    pools: [summary()],
  },
  {
    name: 'ignore-a-slice-listed-twice',
    input: planInput({
      existing: [...eightGpus, ...eightGpus],
      pools: [pool({ devices: gpus(9) })],
    }),
    updates: 1,
    pools: [summary({ deviceCount: 9 })],
  },
  {
    name: 'delete-with-preconditions',
    input: planInput({ existing: eightGpus, pools: [] }),
    deletes: ['pool-removed'],
    pools: [],
    then: (plan) => {
      expect(plan.deletes).toEqual([
        {
          name: eightGpus[0]?.metadata.name,
          uid: eightGpus[0]?.metadata.uid,
          resourceVersion: eightGpus[0]?.metadata.resourceVersion,
          pool: NODE,
          reason: 'pool-removed',
        },
      ]);
    },
  },
  {
    name: 'delete-removed-pool',
    input: planInput({
      existing: published([pool(), pool({ name: 'spare', devices: gpus(2, 8) })]),
      pools: [pool()],
    }),
    deletes: ['pool-removed'],
    pools: [summary()],
    then: (plan) => {
      expect(plan.deletes[0]?.pool).toBe('spare');
    },
  },
  {
    name: 'delete-everything-without-desired-state',
    input: planInput({
      existing: published([pool({ devices: gpus(200) }), pool({ name: 'spare' })]),
      pools: [],
    }),
    deletes: ['pool-removed', 'pool-removed', 'pool-removed'],
    pools: [],
  },
  {
    name: 'leave-unmanaged-slices',
    input: planInput({
      existing: [
        edited(eightGpus[0], (slice) => {
          slice.metadata.labels = {};
          slice.spec.pool.generation = 9;
        }),
      ],
    }),
    creates: 1,
    pools: [summary()],
  },
  {
    name: 'leave-slices-of-other-keys',
    input: planInput({
      existing: [
        ...published([pool()], { driver: 'nic.example.com' }),
        ...published([pool({ name: 'node-2' })], { node: 'node-2' }),
      ],
      pools: [],
    }),
    pools: [],
  },
  {
    name: 'publish-empty-pool',
    input: planInput({ pools: [pool({ devices: [] })] }),
    creates: 1,
    pools: [summary({ deviceCount: 0 })],
    then: (plan) => {
      expect(plan.creates[0]?.spec).toEqual({
        driver: DRIVER,
        pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
        nodeName: NODE,
      });
    },
  },
  {
    name: 'split-at-128-devices',
    input: planInput({ pools: [pool({ devices: gpus(300) })] }),
    creates: 3,
    pools: [summary({ resourceSliceCount: 3, deviceCount: 300 })],
    then: (plan) => {
      expect(plan.creates.map((slice) => slice.spec.devices?.length)).toEqual([128, 128, 44]);
      expect(plan.creates.map((slice) => slice.metadata.generateName?.slice(0, 6))).toEqual([
        '00000-',
        '00001-',
        '00002-',
      ]);
      expect(plan.creates.flatMap((slice) => slice.spec.devices)).toEqual(gpus(300));
    },
  },
  {
    name: 'split-at-64-devices-with-taints',
    input: planInput({
      pools: [pool({ devices: Array.from({ length: 65 }, (_, i) => taintedGpu(i)) })],
    }),
    creates: 2,
    pools: [summary({ resourceSliceCount: 2, deviceCount: 65 })],
    then: (plan) => {
      expect(plan.creates.map((slice) => slice.spec.devices?.length)).toEqual([64, 1]);
    },
  },
  {
    name: 'split-at-64-devices-with-counters',
    input: planInput({
      pools: [
        pool({
          devices: gpus(70).map((device) => ({
            ...device,
            consumesCounters: [
              { counterSet: 'gpu-memory', counters: { memory: { value: '1Gi' } } },
            ],
          })),
          sharedCounters: [counterSet('gpu-memory', '100Gi')],
        }),
      ],
    }),
    creates: 3,
    pools: [summary({ resourceSliceCount: 3, deviceCount: 70 })],
    then: (plan) => {
      expect(plan.creates.map((slice) => slice.spec.devices?.length)).toEqual([64, 6, undefined]);
      expect(plan.creates[2]?.spec.sharedCounters).toEqual([counterSet('gpu-memory', '100Gi')]);
    },
  },
  {
    name: 'start-new-slice-at-first-advanced-device',
    input: planInput({
      pools: [pool({ devices: [...gpus(100), taintedGpu(100), ...gpus(3, 101)] })],
    }),
    creates: 2,
    pools: [summary({ resourceSliceCount: 2, deviceCount: 104 })],
    then: (plan) => {
      expect(plan.creates.map((slice) => slice.spec.devices?.length)).toEqual([100, 4]);
    },
  },
  {
    name: 'split-taintable-pool-at-64-devices',
    input: planInput({ pools: [pool({ devices: gpus(100) })], taintable: true }),
    creates: 2,
    pools: [summary({ resourceSliceCount: 2, deviceCount: 100 })],
    then: (plan) => {
      expect(plan.creates.map((slice) => slice.spec.devices?.length)).toEqual([64, 36]);
      expect(plan.creates.flatMap((slice) => slice.spec.devices)).toEqual(gpus(100));
    },
  },
  {
    name: 'keep-untaintable-pool-of-100-in-one-slice',
    input: planInput({ pools: [pool({ devices: gpus(100) })] }),
    creates: 1,
    pools: [summary({ deviceCount: 100 })],
    then: (plan) => {
      expect(plan.creates[0]?.spec.devices).toEqual(gpus(100));
    },
  },
  {
    // A dead driver's taint on every device: the devices stay where they are, so the writes
    // need no new generation (which would make the scheduler wait for every slice).
    name: 'keep-generation-when-only-taints-change-in-every-slice',
    input: planInput({
      existing: threeTaintable,
      pools: [pool({ devices: withTaints(gpus(130), UNREACHABLE) })],
      taintable: true,
    }),
    updates: 3,
    pools: [summary({ resourceSliceCount: 3, deviceCount: 130 })],
    then: (plan) => {
      expect(plan.updates.map((slice) => slice.metadata.name)).toEqual(
        threeTaintable.map((slice) => slice.metadata.name),
      );
      expect(plan.updates.map((slice) => slice.spec.pool.generation)).toEqual([1, 1, 1]);
      expect(plan.updates.flatMap((slice) => slice.spec.devices)).toEqual(
        withTaints(gpus(130), UNREACHABLE),
      );
    },
  },
  {
    name: 'keep-generation-when-taints-removed-from-every-slice',
    input: planInput({
      existing: threeTaintableUnreachable,
      pools: [pool({ devices: gpus(130) })],
      taintable: true,
    }),
    updates: 3,
    pools: [summary({ resourceSliceCount: 3, deviceCount: 130 })],
    then: (plan) => {
      expect(plan.updates.flatMap((slice) => slice.spec.devices)).toEqual(gpus(130));
    },
  },
  {
    name: 'keep-generation-when-one-slice-changes-and-the-others-only-taints',
    input: planInput({
      existing: threeTaintable,
      pools: [
        pool({
          devices: withTaints(gpus(130), UNREACHABLE).map((device, i) =>
            i === 0 ? { ...device, capacity: { memory: { value: '40Gi' } } } : device,
          ),
        }),
      ],
      taintable: true,
    }),
    updates: 3,
    pools: [summary({ resourceSliceCount: 3, deviceCount: 130 })],
  },
  {
    name: 'bump-generation-when-two-taintable-slices-change',
    input: planInput({
      existing: threeTaintable,
      pools: [
        pool({
          devices: gpus(130).map((device, i) =>
            i === 0 || i === 129 ? { ...device, capacity: { memory: { value: '40Gi' } } } : device,
          ),
        }),
      ],
      taintable: true,
    }),
    updates: 3,
    pools: [summary({ generation: 2, resourceSliceCount: 3, deviceCount: 130 })],
    then: (plan) => {
      expect(plan.updates.map((slice) => slice.spec.pool.generation)).toEqual([2, 2, 2]);
    },
  },
  {
    name: 'bump-generation-when-two-slices-change-besides-taints',
    input: planInput({
      existing: threeTaintable,
      pools: [
        pool({
          devices: withTaints(gpus(130), UNREACHABLE).map((device, i) =>
            i === 0 || i === 129 ? { ...device, capacity: { memory: { value: '40Gi' } } } : device,
          ),
        }),
      ],
      taintable: true,
    }),
    updates: 3,
    pools: [summary({ generation: 2, resourceSliceCount: 3, deviceCount: 130 })],
  },
  {
    // The API server sets `timeAdded` of a taint sent without one; the next sync sends the
    // taints without it again, and must not rewrite every slice for that.
    name: 'keep-taints-whose-time-the-server-added',
    input: planInput({
      existing: timesAdded(
        published([pool({ devices: withTaints(gpus(130), UNHEALTHY) })], { taintable: true }),
        '2026-11-24T09:00:00Z',
      ),
      pools: [pool({ devices: withTaints(gpus(130), UNHEALTHY) })],
      taintable: true,
    }),
    pools: [summary({ resourceSliceCount: 3, deviceCount: 130 })],
  },
  {
    name: 'update-keeps-time-added-of-a-lasting-taint',
    input: planInput({
      existing: timesAdded(
        published([pool({ devices: [gpu(0, { taints: [UNHEALTHY] }), ...gpus(7, 1)] })], {
          taintable: true,
        }),
        '2026-11-24T09:00:00Z',
      ),
      pools: [
        pool({
          devices: [
            gpu(0, { taints: [UNHEALTHY, UNREACHABLE] }),
            gpu(1, { taints: [UNHEALTHY, UNREACHABLE] }),
            ...withTaints(gpus(6, 2), UNREACHABLE),
          ],
        }),
      ],
      taintable: true,
    }),
    updates: 1,
    pools: [summary()],
    then: (plan) => {
      const devices = plan.updates[0]?.spec.devices;
      expect(devices?.[0]?.taints).toEqual([
        { ...UNHEALTHY, timeAdded: '2026-11-24T09:00:00Z' },
        UNREACHABLE,
      ]);
      expect(devices?.[1]?.taints).toEqual([UNHEALTHY, UNREACHABLE]);
    },
  },
  {
    name: 'keep-explicit-slices-as-given',
    input: planInput({
      pools: [
        pool({
          devices: [],
          slices: [
            { devices: gpus(2) },
            { devices: gpus(3, 2) },
            { devices: [], sharedCounters: [counterSet('a')] },
          ],
        }),
      ],
    }),
    creates: 3,
    pools: [summary({ resourceSliceCount: 3, deviceCount: 5 })],
    then: (plan) => {
      expect(plan.creates.map((slice) => slice.spec.devices)).toEqual([
        gpus(2),
        gpus(3, 2),
        undefined,
      ]);
    },
  },
  {
    name: 'publish-all-nodes-pool-without-owner',
    input: planInput({
      node: '',
      nodeUid: '',
      pools: [pool({ name: 'fabric', scope: { kind: 'all-nodes' } })],
    }),
    creates: 1,
    pools: [summary({ name: 'fabric' })],
    then: (plan) => {
      expect(plan.creates[0]?.metadata).toEqual({
        generateName: '00000-gpu.example.com-',
        labels: { [MANAGED_BY_LABEL]: 'slicekeeper' },
      });
      expect(plan.creates[0]?.spec.allNodes).toBe(true);
      expect(plan.creates[0]?.spec.nodeName).toBeUndefined();
    },
  },
  {
    name: 'publish-node-selector-pool',
    input: planInput({
      node: '',
      nodeUid: '',
      pools: [
        pool({
          name: 'rack-7',
          scope: {
            kind: 'node-selector',
            nodeSelector: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'example.com/rack', operator: 'In', values: ['7'] }] },
              ],
            },
          },
        }),
      ],
    }),
    creates: 1,
    pools: [summary({ name: 'rack-7' })],
    then: (plan) => {
      expect(plan.creates[0]?.spec.nodeSelector?.nodeSelectorTerms).toHaveLength(1);
      expect(plan.creates[0]?.metadata.ownerReferences).toBeUndefined();
    },
  },
  {
    name: 'update-when-node-selector-changes',
    input: planInput({
      node: '',
      nodeUid: '',
      existing: published([pool({ name: 'fabric', scope: { kind: 'all-nodes' } })], {
        node: '',
        nodeUid: '',
      }),
      pools: [
        pool({
          name: 'fabric',
          scope: {
            kind: 'node-selector',
            nodeSelector: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a'] }] },
              ],
            },
          },
        }),
      ],
    }),
    updates: 1,
    pools: [summary({ name: 'fabric' })],
    then: (plan) => {
      expect(plan.updates[0]?.spec.allNodes).toBeUndefined();
    },
  },
  {
    name: 'replace-slices-of-an-earlier-node',
    input: planInput({ existing: eightGpus, nodeUid: 'a2f4c6e8-0000-4000-8000-000000000002' }),
    deletes: ['stale-owner'],
    creates: 1,
    pools: [summary({ generation: 2 })],
  },
  {
    name: 'repair-missing-owner-reference',
    input: planInput({
      existing: [edited(eightGpus[0], (slice) => delete slice.metadata.ownerReferences)],
    }),
    updates: 1,
    pools: [summary()],
    then: (plan) => {
      expect(plan.updates[0]?.metadata.ownerReferences).toEqual([
        { apiVersion: 'v1', kind: 'Node', name: NODE, uid: NODE_UID, controller: true },
      ]);
    },
  },

  {
    name: 'publish-consumable-capacity',
    input: planInput({ pools: [pool({ devices: [nic(0)] })] }),
    creates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      expect(plan.creates[0]?.spec.devices).toEqual([nic(0)]);
    },
  },
  {
    name: 'publish-binding-conditions-and-list-attributes',
    input: planInput({ pools: [pool({ devices: [boundGpu(0)] })] }),
    creates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      expect(plan.creates[0]?.spec.devices).toEqual([boundGpu(0)]);
    },
  },
  {
    // Upstream syncPool names a slice `<index>-<driver>-` plus its owner's name, and only a
    // node's controller has an owner: a pool whose devices choose their nodes has neither.
    name: 'per-device-pool-not-node-owned',
    input: planInput({ node: '', nodeUid: '', pools: [fabricPool()] }),
    creates: 1,
    pools: [summary({ name: 'fabric', deviceCount: 3 })],
    then: (plan) => {
      const created = plan.creates[0];
      expect(created?.metadata).toEqual({
        generateName: '00000-gpu.example.com-',
        labels: { [MANAGED_BY_LABEL]: 'slicekeeper' },
      });
      expect(created?.spec).toEqual({
        driver: DRIVER,
        pool: { name: 'fabric', generation: 1, resourceSliceCount: 1 },
        perDeviceNodeSelection: true,
        devices: fabricDevices(),
      });
    },
  },
  {
    name: 'per-device-pool-counters-apart',
    input: planInput({
      node: '',
      nodeUid: '',
      pools: [fabricPool({ sharedCounters: [counterSet('fabric-memory')] })],
    }),
    creates: 2,
    pools: [summary({ name: 'fabric', resourceSliceCount: 2, deviceCount: 3 })],
    then: (plan) => {
      for (const created of plan.creates) {
        expect(created.spec.perDeviceNodeSelection).toBe(true);
        expect(created.metadata.ownerReferences).toBeUndefined();
      }
    },
  },
  {
    name: 'keep-per-device-pool-unchanged',
    input: planInput({
      node: '',
      nodeUid: '',
      pools: [fabricPool()],
      existing: published([fabricPool()], { node: '', nodeUid: '' }),
    }),
    pools: [summary({ name: 'fabric', deviceCount: 3 })],
  },
  {
    name: 'update-when-pool-becomes-per-device',
    input: planInput({
      node: '',
      nodeUid: '',
      pools: [fabricPool()],
      existing: published([pool({ name: 'fabric', scope: { kind: 'all-nodes' } })], {
        node: '',
        nodeUid: '',
      }),
    }),
    updates: 1,
    pools: [summary({ name: 'fabric', deviceCount: 3 })],
    then: (plan) => {
      expect(plan.updates[0]?.spec.allNodes).toBeUndefined();
      expect(plan.updates[0]?.spec.perDeviceNodeSelection).toBe(true);
    },
  },
  {
    name: 'update-when-pool-stops-being-per-device',
    input: planInput({
      node: '',
      nodeUid: '',
      pools: [pool({ name: 'fabric', scope: { kind: 'all-nodes' }, devices: gpus(3) })],
      existing: published([fabricPool()], { node: '', nodeUid: '' }),
    }),
    updates: 1,
    pools: [summary({ name: 'fabric', deviceCount: 3 })],
    then: (plan) => {
      expect(plan.updates[0]?.spec.perDeviceNodeSelection).toBeUndefined();
      expect(plan.updates[0]?.spec.allNodes).toBe(true);
      expect(plan.updates[0]?.spec.devices).toEqual(gpus(3));
    },
  },
  {
    name: 'pass-through-merged',
    input: planInput({ pools: [passThroughPool()] }),
    creates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      const spec = plan.creates[0]?.spec;
      expect(spec).toMatchObject({ partitionTypeAttribute: 'gpu.example.com/profile' });
      expect(spec?.devices).toEqual([
        { ...gpu(0), nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } } },
      ]);
      expect(spec).not.toHaveProperty('passThrough');
    },
  },
  {
    name: 'never-publish-health',
    input: planInput({
      pools: [
        pool({
          devices: [gpu(0, { health: { status: 'unhealthy', message: 'ECC errors' } })],
        }),
      ],
    }),
    creates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      expect(plan.creates[0]?.spec.devices).toEqual([gpu(0)]);
    },
  },
  {
    // The API server writes quantities canonically: `1024Mi` comes back as `1Gi`.
    name: 'keep-unchanged-with-new-fields',
    input: planInput({
      pools: [everyFieldPool()],
      existing: published([everyFieldPool()]).map((stored) =>
        edited(stored, (slice) => {
          const policy = slice.spec.devices?.[0]?.capacity?.bandwidth?.requestPolicy;
          if (policy !== undefined) {
            policy.default = '1Gi';
            policy.validRange = { min: '1024Mi', max: '102400Mi', step: '1073741824' };
          }
        }),
      ),
    }),
    pools: [summary({ resourceSliceCount: 2, deviceCount: 3 })],
  },
  {
    name: 'update-when-request-policy-changes',
    input: planInput({
      pools: [pool({ devices: [nic(0, '2Gi')] })],
      existing: published([pool({ devices: [nic(0)] })]),
    }),
    updates: 1,
    pools: [summary({ deviceCount: 1 })],
  },
  {
    name: 'update-when-list-attribute-changes',
    input: planInput({
      pools: [
        pool({
          devices: [
            boundGpu(0, { attributes: { 'resource.kubernetes.io/pcieRoots': { strings: ['a'] } } }),
          ],
        }),
      ],
      existing: published([pool({ devices: [boundGpu(0)] })]),
    }),
    updates: 1,
    pools: [summary({ deviceCount: 1 })],
  },
  {
    name: 'update-when-pass-through-member-changes',
    input: planInput({
      pools: [passThroughPool('gpu.example.com/shape')],
      existing: published([passThroughPool()]),
    }),
    updates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      expect(plan.updates[0]?.spec).toMatchObject({
        partitionTypeAttribute: 'gpu.example.com/shape',
      });
    },
  },
  {
    name: 'remove-pass-through-member-no-longer-sent',
    input: planInput({
      pools: [pool({ devices: [gpu(0)] })],
      existing: published([passThroughPool()]),
    }),
    updates: 1,
    pools: [summary({ deviceCount: 1 })],
    then: (plan) => {
      expect(plan.updates[0]?.spec).not.toHaveProperty('partitionTypeAttribute');
      expect(plan.updates[0]?.spec.devices).toEqual([gpu(0)]);
    },
  },
  {
    // Upstream DroppedFieldsError: the controller adopts what the server stored, so that it does
    // not rewrite the slices on every sync; here for two slices, which must not bump the
    // generation either.
    name: 'adopt-fields-the-server-drops',
    input: planInput({
      pools: [pool({ devices: boundGpus(100) })],
      existing: published([pool({ devices: boundGpus(100) })]).map(withoutBindingConditions),
      adoptDropped: BINDING_DROPPED,
    }),
    pools: [summary({ resourceSliceCount: 2, deviceCount: 100 })],
  },
  {
    name: 'rewrite-dropped-fields-not-yet-reported',
    input: planInput({
      pools: [pool({ devices: boundGpus(100) })],
      existing: published([pool({ devices: boundGpus(100) })]).map(withoutBindingConditions),
    }),
    updates: 2,
    pools: [summary({ generation: 2, resourceSliceCount: 2, deviceCount: 100 })],
  },
  {
    name: 'write-missing-fields-other-than-the-dropped-ones',
    input: planInput({
      pools: [pool({ devices: boundGpus(100) })],
      existing: published([pool({ devices: boundGpus(100) })]).map(withoutBindingConditions),
      adoptDropped: ['spec.devices[*].taints (DRADeviceTaints)'],
    }),
    updates: 2,
    pools: [summary({ generation: 2, resourceSliceCount: 2, deviceCount: 100 })],
  },
  {
    name: 'write-changes-beside-dropped-fields',
    input: planInput({
      pools: [pool({ devices: [...boundGpus(99), boundGpu(99, { name: 'gpu-x' })] })],
      existing: published([pool({ devices: boundGpus(100) })]).map(withoutBindingConditions),
      adoptDropped: BINDING_DROPPED,
    }),
    updates: 1,
    pools: [summary({ resourceSliceCount: 2, deviceCount: 100 })],
  },
];

describe('planSync', () => {
  it.each(cases)('$name', ({ input, deletes = [], updates = 0, creates = 0, pools, then }) => {
    const plan = planSync(input);

    expect(plan.deletes.map((deletion) => deletion.reason)).toEqual(deletes);
    expect(plan.updates).toHaveLength(updates);
    expect(plan.creates).toHaveLength(creates);
    if (pools !== undefined) expect(plan.pools).toEqual(pools);
    then?.(plan, input);

    // Whatever the case, the API server accepts the plan and the next sync has nothing to do.
    const api = new FakeResourceSliceApi({ initial: input.existing });
    api.apply(plan);
    expect(isEmptyPlan(planSync({ ...input, existing: api.list() }))).toBe(true);
  });

  interface RejectionCase {
    name: string;
    input: PlanSyncInput;
    message: string;
  }

  const rejections: RejectionCase[] = [
    {
      name: 'reject-invalid-device-name',
      input: planInput({ pools: [pool({ devices: [gpu(0, { name: 'GPU_0' })] })] }),
      message:
        "invalid driver resources: pools[0].devices[0].name: Invalid value: \"GPU_0\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    },
    {
      name: 'reject-node-local-pool-on-cluster-key',
      input: planInput({ node: '', nodeUid: '' }),
      message:
        'invalid driver resources: pools[0].scope.kind: Invalid value: "node": a node-local pool needs a node, and this key is cluster-scoped (empty node name)',
    },
    {
      name: 'reject-cluster-pool-on-node-key',
      input: planInput({ pools: [pool({ scope: { kind: 'all-nodes' } })] }),
      message:
        'invalid driver resources: pools[0].scope.kind: Invalid value: "all-nodes": a cluster-scoped pool belongs to the cluster-scoped key (empty node name), not to node "node-1"',
    },
    {
      name: 'reject-missing-node-uid',
      input: planInput({ nodeUid: '' }),
      message:
        "invalid driver resources: nodeUid: Required value: the Node's UID is needed for the owner reference of node-local slices",
    },
    {
      name: 'reject-explicit-slice-over-limit',
      input: planInput({ pools: [pool({ devices: [], slices: [{ devices: gpus(129) }] })] }),
      message:
        'invalid driver resources: pools[0].slices[0].devices: Too many: 129: must have at most 128 items',
    },
  ];

  it.each(rejections)('$name', ({ input, message }) => {
    let thrown: unknown;
    try {
      planSync({ ...input, existing: eightGpus });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidDriverResourcesError);
    expect(isTerminal(thrown)).toBe(true);
    expect((thrown as InvalidDriverResourcesError).code).toBe('invalid');
    expect((thrown as InvalidDriverResourcesError).message).toBe(message);
  });

  it('withdraws no device of a key whose new data is invalid', () => {
    // Invalid data is reported, not half-applied: the last valid state stays published.
    const invalidDevice: Device = gpu(0, { name: '' });
    expect(() =>
      planSync(planInput({ existing: eightGpus, pools: [pool({ devices: [invalidDevice] })] })),
    ).toThrow(InvalidDriverResourcesError);
  });
});
