import type {
  Device,
  DeviceHealth,
  DeviceTaint,
  Pool,
  PublishedTaints,
} from '@slicekeeper/contracts';
import { applyLifecycleTaints } from './lifecycle-taints';
import type { LifecycleTaintsInput } from './lifecycle-taints';
import { DRIVER, gpu, gpus, pool } from './testing/fixtures';

/** When the stream was lost; the taint carries it in whole seconds. */
const SINCE = '2026-11-24T10:00:00.750Z';

const UNREACHABLE: DeviceTaint = {
  key: `${DRIVER}/driver-unreachable`,
  effect: 'NoSchedule',
  timeAdded: '2026-11-24T10:00:00Z',
};

function unhealthyTaint(effect = 'NoSchedule'): DeviceTaint {
  return { key: `${DRIVER}/unhealthy`, effect };
}

function unknownTaint(effect = 'NoSchedule'): DeviceTaint {
  return { key: `${DRIVER}/health-unknown`, effect };
}

/** A GPU as the driver reports it, with its health. */
function reported(index: number, status: DeviceHealth['status'], taints?: DeviceTaint[]): Device {
  return gpu(index, {
    health: { status, message: `status of gpu-${index}`, timeoutSeconds: 30 },
    ...(taints === undefined ? {} : { taints }),
  });
}

/** A GPU as published: no health, with `taints`. */
function published(index: number, ...taints: DeviceTaint[]): Device {
  return taints.length === 0 ? gpu(index) : gpu(index, { taints });
}

/** `count` taints of the driver's own. */
function ownTaints(count: number): DeviceTaint[] {
  return Array.from({ length: count }, (_, i) => ({ key: `${DRIVER}/own-${i}`, effect: 'None' }));
}

function input(overrides: Partial<LifecycleTaintsInput> = {}): LifecycleTaintsInput {
  return { driver: DRIVER, pools: [pool()], health: 'NoSchedule', ...overrides };
}

/** Each pool's devices, then each of its explicit slices' devices. */
function deviceGroups(pools: readonly Pool[]): Device[][] {
  return pools.flatMap((p) => [p.devices, ...(p.slices ?? []).map((slice) => slice.devices)]);
}

interface TaintCase {
  name: string;
  input: LifecycleTaintsInput;
  /** The published devices, grouped as {@link deviceGroups} does. */
  devices: Device[][];
  summary: PublishedTaints | undefined;
}

const cases: TaintCase[] = [
  {
    name: 'no-health-no-taints',
    input: input(),
    devices: [gpus(8)],
    summary: undefined,
  },
  {
    name: 'healthy-device-gets-nothing',
    input: input({ pools: [pool({ devices: [reported(0, 'healthy'), gpu(1)] })] }),
    devices: [[published(0), published(1)]],
    summary: undefined,
  },
  {
    name: 'unhealthy-device-gets-unhealthy-taint',
    input: input({ pools: [pool({ devices: [reported(0, 'unhealthy'), gpu(1)] })] }),
    devices: [[published(0, unhealthyTaint()), published(1)]],
    summary: { unhealthy: 1, healthUnknown: 0 },
  },
  {
    name: 'unknown-device-gets-health-unknown-taint',
    input: input({ pools: [pool({ devices: [gpu(0), reported(1, 'unknown')] })] }),
    devices: [[published(0), published(1, unknownTaint())]],
    summary: { unhealthy: 0, healthUnknown: 1 },
  },
  {
    name: 'taints-have-the-policy-effect-and-are-counted',
    input: input({
      health: 'NoExecute',
      pools: [
        pool({
          devices: [
            reported(0, 'unhealthy'),
            reported(1, 'unknown'),
            reported(2, 'healthy'),
            reported(3, 'unhealthy'),
          ],
        }),
        pool({ name: 'spare', devices: [reported(4, 'unhealthy'), reported(5, 'unknown')] }),
      ],
    }),
    devices: [
      [
        published(0, unhealthyTaint('NoExecute')),
        published(1, unknownTaint('NoExecute')),
        published(2),
        published(3, unhealthyTaint('NoExecute')),
      ],
      [published(4, unhealthyTaint('NoExecute')), published(5, unknownTaint('NoExecute'))],
    ],
    summary: { unhealthy: 3, healthUnknown: 2 },
  },
  {
    name: 'effect-none-still-taints',
    input: input({ health: 'None', pools: [pool({ devices: [reported(0, 'unhealthy')] })] }),
    devices: [[published(0, unhealthyTaint('None'))]],
    summary: { unhealthy: 1, healthUnknown: 0 },
  },
  {
    name: 'policy-off-strips-health-without-taints',
    input: input({
      health: 'off',
      pools: [
        pool({
          devices: [reported(0, 'unhealthy'), reported(1, 'unknown'), reported(2, 'healthy')],
        }),
      ],
    }),
    devices: [[published(0), published(1), published(2)]],
    summary: undefined,
  },
  {
    name: 'driver-taints-kept-health-taint-appended',
    input: input({
      pools: [
        pool({
          devices: [reported(0, 'unhealthy', [{ key: 'example.com/ecc', effect: 'NoSchedule' }])],
        }),
      ],
    }),
    devices: [[published(0, { key: 'example.com/ecc', effect: 'NoSchedule' }, unhealthyTaint())]],
    summary: { unhealthy: 1, healthUnknown: 0 },
  },
  {
    name: 'unreachable-taints-every-device',
    input: input({
      unreachableSince: SINCE,
      pools: [
        pool({ devices: [reported(0, 'unhealthy'), gpu(1), reported(2, 'healthy')] }),
        pool({
          name: 'spare',
          devices: [],
          slices: [{ devices: gpus(2, 3) }, { devices: [reported(5, 'unknown')] }],
        }),
      ],
    }),
    devices: [
      [
        published(0, unhealthyTaint(), UNREACHABLE),
        published(1, UNREACHABLE),
        published(2, UNREACHABLE),
      ],
      [],
      [published(3, UNREACHABLE), published(4, UNREACHABLE)],
      [published(5, unknownTaint(), UNREACHABLE)],
    ],
    summary: { unreachable: 'tainted', unhealthy: 1, healthUnknown: 1 },
  },
  {
    name: 'unreachable-time-in-utc-whole-seconds',
    input: input({
      unreachableSince: '2026-11-24T12:00:00.999+02:00',
      pools: [pool({ devices: [gpu(0)] })],
    }),
    devices: [[published(0, UNREACHABLE)]],
    summary: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
  },
  {
    name: 'policy-off-still-taints-unreachable',
    input: input({
      health: 'off',
      unreachableSince: SINCE,
      pools: [pool({ devices: [reported(0, 'unhealthy')] })],
    }),
    devices: [[published(0, UNREACHABLE)]],
    summary: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
  },
  {
    name: 'driver-identical-taint-not-duplicated',
    input: input({
      unreachableSince: SINCE,
      pools: [
        pool({
          devices: [
            reported(0, 'unhealthy', [
              {
                key: `${DRIVER}/unhealthy`,
                effect: 'NoSchedule',
                timeAdded: '2026-11-01T08:00:00Z',
              },
            ]),
            gpu(1, { taints: [{ key: `${DRIVER}/driver-unreachable`, effect: 'NoSchedule' }] }),
          ],
        }),
      ],
    }),
    devices: [
      [
        published(
          0,
          { key: `${DRIVER}/unhealthy`, effect: 'NoSchedule', timeAdded: '2026-11-01T08:00:00Z' },
          UNREACHABLE,
        ),
        published(1, { key: `${DRIVER}/driver-unreachable`, effect: 'NoSchedule' }),
      ],
    ],
    // The summary tells what the devices carry, whoever put it there.
    summary: { unreachable: 'tainted', unhealthy: 1, healthUnknown: 0 },
  },
  {
    name: 'same-key-other-effect-is-another-taint',
    input: input({
      pools: [pool({ devices: [reported(0, 'unhealthy', [unhealthyTaint('NoExecute')])] })],
    }),
    devices: [[published(0, unhealthyTaint('NoExecute'), unhealthyTaint())]],
    summary: { unhealthy: 1, healthUnknown: 0 },
  },
  {
    name: 'device-with-16-taints-gets-none',
    input: input({
      unreachableSince: SINCE,
      pools: [
        pool({ devices: [reported(0, 'unhealthy', ownTaints(16)), reported(1, 'unhealthy')] }),
      ],
    }),
    devices: [[published(0, ...ownTaints(16)), published(1, unhealthyTaint(), UNREACHABLE)]],
    summary: {
      unreachable: 'tainted',
      unhealthy: 1,
      healthUnknown: 0,
      notApplied: "1 device(s) had no room for all of slicekeeper's taints (at most 16 per device)",
    },
  },
  {
    name: 'device-with-15-taints-takes-one-more',
    input: input({ pools: [pool({ devices: [reported(0, 'unknown', ownTaints(15))] })] }),
    devices: [[published(0, ...ownTaints(15), unknownTaint())]],
    summary: { unhealthy: 0, healthUnknown: 1 },
  },
  {
    name: 'explicit-slice-over-64-devices-gets-none',
    input: input({
      unreachableSince: SINCE,
      pools: [
        pool({
          devices: [],
          slices: [
            { devices: [reported(0, 'unhealthy'), ...gpus(64, 1)] },
            { devices: [reported(65, 'unhealthy')] },
          ],
        }),
      ],
    }),
    devices: [[], gpus(65), [published(65, unhealthyTaint(), UNREACHABLE)]],
    summary: {
      unreachable: 'tainted',
      unhealthy: 1,
      healthUnknown: 0,
      notApplied:
        '65 device(s) are in explicit slices of more than 64 devices, which cannot hold taints',
    },
  },
  {
    name: 'explicit-slice-of-64-devices-is-tainted',
    input: input({
      unreachableSince: SINCE,
      pools: [pool({ devices: [], slices: [{ devices: gpus(64) }] })],
    }),
    devices: [[], gpus(64).map((device) => ({ ...device, taints: [UNREACHABLE] }))],
    summary: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
  },
  {
    name: 'not-tainted-only-still-summarized',
    input: input({
      pools: [
        pool({ devices: [reported(0, 'unhealthy', ownTaints(16))] }),
        pool({
          name: 'spare',
          devices: [],
          slices: [{ devices: [reported(1, 'unknown'), ...gpus(64, 2)] }],
        }),
      ],
    }),
    devices: [[published(0, ...ownTaints(16))], [], gpus(65, 1)],
    summary: {
      unhealthy: 0,
      healthUnknown: 0,
      notApplied:
        "1 device(s) had no room for all of slicekeeper's taints (at most 16 per device); " +
        '1 device(s) are in explicit slices of more than 64 devices, which cannot hold taints',
    },
  },
  {
    name: 'healthy-oversized-slice-is-not-reported',
    input: input({
      pools: [
        pool({
          devices: [],
          slices: [{ devices: Array.from({ length: 100 }, (_, i) => reported(i, 'healthy')) }],
        }),
      ],
    }),
    devices: [[], gpus(100)],
    summary: undefined,
  },
];

describe('applyLifecycleTaints', () => {
  it.each(cases)('$name', ({ input: given, devices, summary }) => {
    const before = structuredClone(given);

    const result = applyLifecycleTaints(given);

    expect(deviceGroups(result.pools)).toEqual(devices);
    expect(result.summary).toEqual(summary);
    // Health is the driver's word to slicekeeper; the API server has no field for it.
    const all = deviceGroups(result.pools).flat();
    expect(all.filter((device) => 'health' in device).map((device) => device.name)).toEqual([]);
    // The stored snapshot it was given stays as it was.
    expect(given).toEqual(before);
  });

  it('keeps each pool as the driver laid it out', () => {
    const pools = [
      pool({ generation: 4, sharedCounters: [{ name: 's', counters: {} }] }),
      pool({ name: 'spare', devices: [], slices: [{ devices: gpus(1) }, { devices: [] }] }),
    ];
    const result = applyLifecycleTaints(input({ pools, unreachableSince: SINCE }));
    const shape = (p: Pool) => ({
      name: p.name,
      generation: p.generation,
      scope: p.scope,
      sharedCounters: p.sharedCounters,
      slices: p.slices?.map((slice) => slice.devices.length),
    });
    expect(result.pools.map(shape)).toEqual(pools.map(shape));
  });

  it('with room for one taint of two, the device keeps the driver-unreachable one and says so', () => {
    const result = applyLifecycleTaints(
      input({
        pools: [pool({ devices: [reported(0, 'unhealthy', ownTaints(15))] })],
        unreachableSince: SINCE,
      }),
    );
    expect(deviceGroups(result.pools)).toEqual([[published(0, ...ownTaints(15), UNREACHABLE)]]);
    expect(result.summary).toEqual({
      unreachable: 'tainted',
      unhealthy: 0,
      healthUnknown: 0,
      notApplied: "1 device(s) had no room for all of slicekeeper's taints (at most 16 per device)",
    });
  });
});
