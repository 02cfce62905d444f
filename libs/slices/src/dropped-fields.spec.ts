import fc from 'fast-check';
import type { Device } from '@slicekeeper/contracts';
import { droppedFields, summarizeDroppedFields } from './dropped-fields';
import type { DroppedField } from './dropped-fields';
import type { ResourceSlice, StoredResourceSlice } from './resource-slice';
import {
  counterSet,
  gpu,
  gpus,
  pool,
  sentSlices,
  storedSlice,
  taintedGpu,
} from './testing/fixtures';

/** The one slice slicekeeper sends for a pool of `devices`. */
function sent(devices: Device[]): ResourceSlice {
  const [slice] = sentSlices([pool({ devices })]);
  if (slice === undefined) throw new Error('the fixture pool published no slice');
  return slice;
}

/** A sent slice changed by hand, for fields the inventory model does not carry. */
function sentWith(devices: Device[], change: (spec: Record<string, unknown>) => void) {
  const slice = structuredClone(sent(devices));
  change(slice.spec as unknown as Record<string, unknown>);
  return slice;
}

/** The devices of a stored slice as JSON, to remove what a gate would drop. */
function devicesOf(stored: StoredResourceSlice): Record<string, unknown>[] {
  return (stored.spec.devices ?? []) as unknown as Record<string, unknown>[];
}

function drop(...fields: string[]) {
  return (stored: StoredResourceSlice) => {
    for (const device of devicesOf(stored)) {
      for (const field of fields) Reflect.deleteProperty(device, field);
    }
  };
}

const bindingDevice = {
  ...gpu(0),
  bindsToNode: true,
  bindingConditions: ['gpu.example.com/attached'],
  bindingFailureConditions: ['gpu.example.com/attach-failed'],
} as Device;

const sharedGpu = {
  ...gpu(0),
  allowMultipleAllocations: true,
  capacity: {
    memory: {
      value: '80Gi',
      requestPolicy: { default: '10Gi', validRange: { min: '1Gi', max: '80Gi' } },
    },
    multiprocessors: { value: '132' },
  },
} as Device;

const listGpu = gpu(0, {
  attributes: {
    index: { int: 0 },
    numaNodes: { ints: [0, 1] },
    'resource.kubernetes.io/pcieRoots': { strings: ['pci0000:00'] },
  },
});

interface DetectCase {
  name: string;
  sent: ResourceSlice;
  stored: StoredResourceSlice;
  dropped: DroppedField[];
}

const taintedAt0And3 = sent([taintedGpu(0), gpu(1), gpu(2), taintedGpu(3)]);
const counterSlices = sentSlices([
  pool({
    devices: [],
    slices: [
      { devices: [], sharedCounters: [counterSet('gpu-0-memory')] },
      {
        devices: [
          gpu(0, {
            consumesCounters: [
              { counterSet: 'gpu-0-memory', counters: { memory: { value: '40Gi' } } },
            ],
          }),
        ],
      },
    ],
  }),
]);
const countersOnly = counterSlices[0];
const consumer = counterSlices[1];
if (countersOnly === undefined || consumer === undefined) throw new Error('fixture: two slices');

const cases: DetectCase[] = [
  {
    name: 'nothing-dropped',
    sent: taintedAt0And3,
    stored: storedSlice(taintedAt0And3),
    dropped: [],
  },
  {
    name: 'server-defaults-are-not-drops',
    sent: taintedAt0And3,
    stored: storedSlice(taintedAt0And3, (stored) => {
      // The server stamps taints, writes quantities canonically and may add fields of its own.
      const [first] = devicesOf(stored);
      const taint = (first?.taints as Record<string, unknown>[] | undefined)?.[0];
      if (taint !== undefined) taint.timeAdded = '2025-06-01T12:00:00Z';
      if (first !== undefined)
        first.capacity = { memory: { value: '81920Mi' }, multiprocessors: { value: '132' } };
      (stored.spec as unknown as Record<string, unknown>).serverOnly = { set: true };
    }),
    dropped: [],
  },
  {
    name: 'empty-values-are-not-drops',
    sent: sentWith(gpus(2), (spec) => {
      const [device] = spec.devices as Record<string, unknown>[];
      if (device !== undefined)
        Object.assign(device, { taints: [], allowMultipleAllocations: false });
      spec.perDeviceNodeSelection = false;
    }),
    stored: storedSlice(sent(gpus(2))),
    dropped: [],
  },
  {
    name: 'device-taints',
    sent: taintedAt0And3,
    stored: storedSlice(taintedAt0And3, drop('taints')),
    dropped: [
      { path: 'spec.devices[0].taints', gate: 'DRADeviceTaints' },
      { path: 'spec.devices[3].taints', gate: 'DRADeviceTaints' },
    ],
  },
  {
    name: 'shared-counters',
    sent: countersOnly,
    stored: storedSlice(countersOnly, (stored) => {
      delete stored.spec.sharedCounters;
    }),
    dropped: [{ path: 'spec.sharedCounters', gate: 'DRAPartitionableDevices' }],
  },
  {
    name: 'consumes-counters',
    sent: consumer,
    stored: storedSlice(consumer, drop('consumesCounters')),
    dropped: [{ path: 'spec.devices[0].consumesCounters', gate: 'DRAPartitionableDevices' }],
  },
  {
    name: 'per-device-node-selection',
    sent: sentWith(gpus(2), (spec) => {
      delete spec.nodeName;
      spec.perDeviceNodeSelection = true;
      const [first, second] = spec.devices as Record<string, unknown>[];
      Object.assign(first ?? {}, { nodeName: 'node-1' });
      Object.assign(second ?? {}, {
        nodeSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
          ],
        },
      });
    }),
    stored: storedSlice(sent(gpus(2)), (stored) => {
      delete stored.spec.nodeName;
    }),
    dropped: [
      { path: 'spec.devices[0].nodeName', gate: 'DRAPartitionableDevices' },
      { path: 'spec.devices[1].nodeSelector', gate: 'DRAPartitionableDevices' },
      { path: 'spec.perDeviceNodeSelection', gate: 'DRAPartitionableDevices' },
    ],
  },
  {
    name: 'binding-conditions',
    sent: sent([bindingDevice]),
    stored: storedSlice(
      sent([bindingDevice]),
      drop('bindsToNode', 'bindingConditions', 'bindingFailureConditions'),
    ),
    dropped: [
      { path: 'spec.devices[0].bindsToNode', gate: 'DRADeviceBindingConditions' },
      { path: 'spec.devices[0].bindingConditions', gate: 'DRADeviceBindingConditions' },
      { path: 'spec.devices[0].bindingFailureConditions', gate: 'DRADeviceBindingConditions' },
    ],
  },
  {
    name: 'consumable-capacity',
    sent: sent([sharedGpu, gpu(1)]),
    stored: storedSlice(sent([sharedGpu, gpu(1)]), (stored) => {
      const [device] = devicesOf(stored);
      Reflect.deleteProperty(device ?? {}, 'allowMultipleAllocations');
      const capacity = device?.capacity as Record<string, Record<string, unknown>> | undefined;
      Reflect.deleteProperty(capacity?.memory ?? {}, 'requestPolicy');
    }),
    dropped: [
      { path: 'spec.devices[0].capacity[memory].requestPolicy', gate: 'DRAConsumableCapacity' },
      { path: 'spec.devices[0].allowMultipleAllocations', gate: 'DRAConsumableCapacity' },
    ],
  },
  {
    name: 'devices-matched-by-name',
    sent: taintedAt0And3,
    stored: storedSlice(taintedAt0And3, (stored) => {
      stored.spec.devices?.reverse();
      const tainted = devicesOf(stored).find((d) => d.name === 'gpu-3');
      Reflect.deleteProperty(tainted ?? {}, 'taints');
    }),
    dropped: [{ path: 'spec.devices[3].taints', gate: 'DRADeviceTaints' }],
  },
  {
    name: 'unknown-field-has-no-gate',
    sent: sentWith(gpus(1), (spec) => {
      const [device] = spec.devices as Record<string, unknown>[];
      Object.assign(device ?? {}, { futureField: { enabled: true } });
    }),
    stored: storedSlice(sent(gpus(1))),
    dropped: [{ path: 'spec.devices[0].futureField' }],
  },
  {
    // strategy.go dropDisableDRAListTypeAttributesFields clears the list value and keeps the
    // attribute's entry, which is then empty: the gated field is named, not the entry.
    name: 'list-type-attributes',
    sent: sent([listGpu]),
    stored: storedSlice(sent([listGpu]), (stored) => {
      const [device] = devicesOf(stored);
      const attributes = device?.attributes as Record<string, Record<string, unknown>> | undefined;
      if (attributes !== undefined) {
        attributes.numaNodes = {};
        attributes['resource.kubernetes.io/pcieRoots'] = {};
      }
    }),
    dropped: [
      { path: 'spec.devices[0].attributes[numaNodes].ints', gate: 'DRAListTypeAttributes' },
      {
        path: 'spec.devices[0].attributes[resource.kubernetes.io/pcieRoots].strings',
        gate: 'DRAListTypeAttributes',
      },
    ],
  },
  {
    name: 'list-type-attribute-entry-removed-has-no-gate',
    sent: sent([listGpu]),
    stored: storedSlice(sent([listGpu]), (stored) => {
      const [device] = devicesOf(stored);
      const attributes = device?.attributes as Record<string, unknown> | undefined;
      Reflect.deleteProperty(attributes ?? {}, 'numaNodes');
    }),
    dropped: [{ path: 'spec.devices[0].attributes[numaNodes]' }],
  },
  {
    name: 'pass-through-members-with-a-known-gate-or-none',
    sent:
      sentSlices([
        pool({
          devices: [
            gpu(0, {
              passThrough: { nodeAllocatableResources: { cpu: {}, memory: { perPod: '1Gi' } } },
            }),
          ],
          passThrough: { partitionTypeAttribute: 'gpu.example.com/profile' },
        }),
      ])[0] ?? sent(gpus(1)),
    stored: storedSlice(sent([gpu(0)])),
    dropped: [
      { path: 'spec.partitionTypeAttribute' },
      { path: 'spec.devices[0].nodeAllocatableResources', gate: 'DRANodeAllocatableResources' },
    ],
  },
  {
    name: 'missing-device-has-no-gate',
    sent: sent(gpus(2)),
    stored: storedSlice(sent(gpus(2)), (stored) => {
      stored.spec.devices?.pop();
    }),
    dropped: [{ path: 'spec.devices[1]' }],
  },
];

describe('droppedFields', () => {
  it.each(cases)('$name', ({ sent: slice, stored, dropped }) => {
    expect(droppedFields(slice, stored)).toEqual(dropped);
  });

  it('reports exactly the devices whose taints were dropped, one entry each', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 64 })
          .chain((count) =>
            fc.tuple(fc.constant(count), fc.uniqueArray(fc.nat(count - 1), { maxLength: count })),
          ),
        ([count, strippedIndexes]) => {
          const slice = sent(Array.from({ length: count }, (_, i) => taintedGpu(i)));
          const stored = storedSlice(slice, (copy) => {
            for (const i of strippedIndexes)
              Reflect.deleteProperty(devicesOf(copy)[i] ?? {}, 'taints');
          });
          const paths = droppedFields(slice, stored).map((field) => field.path);
          expect(paths.sort()).toEqual(
            strippedIndexes.map((i) => `spec.devices[${i}].taints`).sort(),
          );
        },
      ),
    );
  });
});

describe('summarizeDroppedFields', () => {
  it('folds many devices into one line per field, with its gate', () => {
    const slice = sent(Array.from({ length: 64 }, (_, i) => taintedGpu(i)));
    const fields = droppedFields(slice, storedSlice(slice, drop('taints')));
    expect(fields).toHaveLength(64);
    expect(summarizeDroppedFields(fields)).toEqual(['spec.devices[*].taints (DRADeviceTaints)']);
  });

  it('keeps the order of first appearance and leaves out a gate nobody knows', () => {
    expect(
      summarizeDroppedFields([
        { path: 'spec.sharedCounters', gate: 'DRAPartitionableDevices' },
        { path: 'spec.devices[0].capacity[memory].requestPolicy', gate: 'DRAConsumableCapacity' },
        { path: 'spec.devices[0].futureField' },
        {
          path: 'spec.devices[1].capacity[example.com/slots].requestPolicy',
          gate: 'DRAConsumableCapacity',
        },
      ]),
    ).toEqual([
      'spec.sharedCounters (DRAPartitionableDevices)',
      'spec.devices[*].capacity[*].requestPolicy (DRAConsumableCapacity)',
      'spec.devices[*].futureField',
    ]);
  });

  it('says nothing when nothing was dropped', () => {
    expect(summarizeDroppedFields([])).toEqual([]);
  });
});
