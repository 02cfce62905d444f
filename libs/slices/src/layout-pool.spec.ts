import type { Device, Pool } from '@slicekeeper/contracts';
import { layoutPool, layoutRulesFor } from './layout-pool';
import { counterSet, gpu, gpus, pool, taintedGpu } from './testing/fixtures';

function consuming(index: number): Device {
  return gpu(index, {
    consumesCounters: [{ counterSet: 'c', counters: { memory: { value: '1Gi' } } }],
  });
}

/** GPUs of a per-device pool, each on its own node. */
function onItsNode(count: number): Device[] {
  return gpus(count).map((device, i) => ({ ...device, nodeName: `node-${i}` }));
}

function tainted(count: number, first = 0): Device[] {
  return Array.from({ length: count }, (_, i) => taintedGpu(first + i));
}

interface LayoutCase {
  name: string;
  pool: Pool;
  /** Laid out for taints slicekeeper may add later (`LayoutOptions.taintable`). */
  taintable?: boolean;
  /** Per slice: its device count, or `sets:<n>` for a slice of n counter sets. */
  slices: (number | string)[];
}

const cases: LayoutCase[] = [
  { name: 'empty-pool-has-one-empty-slice', pool: pool({ devices: [] }), slices: [0] },
  {
    // A per-device pool is packed like any other: node selection does not lower the cap.
    name: 'per-device-pool-uses-128',
    pool: pool({ scope: { kind: 'per-device' }, devices: onItsNode(129) }),
    slices: [128, 1],
  },
  {
    name: 'per-device-pool-with-binding-conditions-uses-128',
    pool: pool({
      scope: { kind: 'per-device' },
      devices: onItsNode(129).map((device) => ({
        ...device,
        bindsToNode: true,
        bindingConditions: ['example.com/attached'],
        bindingFailureConditions: ['example.com/attach-failed'],
      })),
    }),
    slices: [128, 1],
  },
  {
    name: 'per-device-pool-with-counters-uses-64',
    pool: pool({
      scope: { kind: 'per-device' },
      devices: onItsNode(65).map((device, i) => ({ ...consuming(i), nodeName: device.nodeName })),
      sharedCounters: [counterSet('c')],
    }),
    slices: [64, 1, 'sets:1'],
  },
  {
    name: 'pass-through-devices-use-64',
    pool: pool({
      devices: gpus(65).map((device) => ({ ...device, passThrough: { futureField: true } })),
    }),
    slices: [64, 1],
  },
  {
    name: 'consumable-capacity-uses-128',
    pool: pool({
      devices: gpus(129).map((device) => ({
        ...device,
        allowMultipleAllocations: true,
        capacity: { bandwidth: { value: '100G', requestPolicy: { default: '1G' } } },
      })),
    }),
    slices: [128, 1],
  },
  { name: 'node-fits-one-slice', pool: pool(), slices: [8] },
  { name: 'exactly-128', pool: pool({ devices: gpus(128) }), slices: [128] },
  { name: 'one-over-128', pool: pool({ devices: gpus(129) }), slices: [128, 1] },
  { name: 'many-plain', pool: pool({ devices: gpus(4096) }), slices: Array<number>(32).fill(128) },
  { name: 'exactly-64-tainted', pool: pool({ devices: tainted(64) }), slices: [64] },
  { name: 'one-over-64-tainted', pool: pool({ devices: tainted(65) }), slices: [64, 1] },
  {
    name: 'counter-consumers-use-64',
    pool: pool({ devices: Array.from({ length: 65 }, (_, i) => consuming(i)) }),
    slices: [64, 1],
  },
  {
    name: 'advanced-device-closes-a-full-plain-slice',
    pool: pool({ devices: [...gpus(100), taintedGpu(100), ...gpus(3, 101)] }),
    slices: [100, 4],
  },
  {
    name: 'advanced-device-fits-a-small-plain-slice',
    pool: pool({ devices: [...gpus(60), taintedGpu(60), ...gpus(10, 61)] }),
    slices: [64, 7],
  },
  {
    name: 'plain-devices-after-advanced-slice-get-128',
    pool: pool({ devices: [taintedGpu(0), ...gpus(200, 1)] }),
    slices: [64, 128, 9],
  },
  {
    name: 'counter-sets-in-slices-of-their-own',
    pool: pool({
      devices: gpus(2),
      sharedCounters: Array.from({ length: 10 }, (_, i) => counterSet(`s${i}`)),
    }),
    slices: [2, 'sets:8', 'sets:2'],
  },
  {
    name: 'counters-only',
    pool: pool({ devices: [], sharedCounters: [counterSet('s')] }),
    slices: ['sets:1'],
  },
  {
    name: 'explicit-slices-as-given',
    pool: pool({
      devices: [],
      slices: [{ devices: gpus(3) }, { devices: [] }, { devices: gpus(1, 3) }],
    }),
    slices: [3, 0, 1],
  },
  {
    name: 'no-explicit-slices-is-an-empty-pool',
    pool: pool({ devices: [], slices: [] }),
    slices: [0],
  },
  {
    name: 'taintable-fits-one-slice-up-to-64',
    pool: pool({ devices: gpus(64) }),
    taintable: true,
    slices: [64],
  },
  {
    name: 'taintable-packs-64-per-slice',
    pool: pool({ devices: gpus(100) }),
    taintable: true,
    slices: [64, 36],
  },
  {
    name: 'taintable-many',
    pool: pool({ devices: gpus(300) }),
    taintable: true,
    slices: [64, 64, 64, 64, 44],
  },
  {
    name: 'taintable-tainted-and-plain-alike',
    pool: pool({ devices: [...gpus(10), ...tainted(60, 10), ...gpus(60, 70)] }),
    taintable: true,
    slices: [64, 64, 2],
  },
  {
    name: 'taintable-counter-sets-in-slices-of-their-own',
    pool: pool({
      devices: gpus(70),
      sharedCounters: Array.from({ length: 10 }, (_, i) => counterSet(`s${i}`)),
    }),
    taintable: true,
    slices: [64, 6, 'sets:8', 'sets:2'],
  },
  {
    name: 'taintable-empty-pool-has-one-empty-slice',
    pool: pool({ devices: [] }),
    taintable: true,
    slices: [0],
  },
  {
    name: 'taintable-explicit-slices-as-given',
    pool: pool({
      devices: [],
      slices: [{ devices: gpus(100) }, { devices: gpus(3, 100) }],
    }),
    taintable: true,
    slices: [100, 3],
  },
];

describe('layoutPool', () => {
  it.each(cases)('$name', ({ pool: input, taintable, slices }) => {
    const layout = layoutPool(input, { taintable });
    expect(
      layout.map((slice) =>
        slice.sharedCounters === undefined
          ? slice.devices.length
          : `sets:${slice.sharedCounters.length}`,
      ),
    ).toEqual(slices);
    // Whatever the split, the devices keep their order: it is the driver's allocation preference.
    const devices = input.slices?.flatMap((slice) => slice.devices) ?? input.devices;
    expect(layout.flatMap((slice) => slice.devices)).toEqual(devices);
  });
});

describe('layoutPool by release', () => {
  const shape = (layout: ReturnType<typeof layoutPool>) =>
    layout.map((slice) => ({
      devices: slice.devices.length,
      sets: slice.sharedCounters?.map((set) => set.name) ?? [],
    }));

  it('puts counter sets with the devices before 1.35, in slices of their own from 1.35', () => {
    const partitioned = pool({ sharedCounters: [counterSet('a'), counterSet('b')] });
    const before = layoutPool(partitioned, { rules: layoutRulesFor({ major: 1, minor: 34 }) });
    expect(shape(before)).toEqual([{ devices: 8, sets: ['a', 'b'] }]);
    const after = layoutPool(partitioned, { rules: layoutRulesFor({ major: 1, minor: 35 }) });
    expect(shape(after)).toEqual([
      { devices: 8, sets: [] },
      { devices: 0, sets: ['a', 'b'] },
    ]);
  });

  it('caps tainted slices at 64 devices from 1.35 only', () => {
    const tainted = pool({ devices: Array.from({ length: 200 }, (_, i) => taintedGpu(i)) });
    const before = layoutPool(tainted, {
      taintable: true,
      rules: layoutRulesFor({ major: 1, minor: 34 }),
    });
    expect(before.map((s) => s.devices.length)).toEqual([128, 72]);
    const after = layoutPool(tainted, {
      taintable: true,
      rules: layoutRulesFor({ major: 1, minor: 36 }),
    });
    expect(after.map((s) => s.devices.length)).toEqual([64, 64, 64, 8]);
  });
});
