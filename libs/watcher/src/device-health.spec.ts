import type { Device, DeviceHealth, DriverInventory } from '@slicekeeper/contracts';
import { expireHealth, onlyHealthDiffers } from './device-health';
import { gpus } from './testing/fakes';

const RECEIVED_AT = Date.parse('2026-11-24T10:00:00Z');

/** `inventory` with each device's health from `healths`, by position (undefined: none). */
function withHealth(
  inventory: DriverInventory,
  ...healths: (DeviceHealth | undefined)[]
): DriverInventory {
  return {
    pools: inventory.pools.map((pool) => ({
      ...pool,
      devices: pool.devices.map((device, i) => {
        const health = healths[i];
        return health === undefined ? device : { ...device, health };
      }),
    })),
  };
}

/** `inventory`'s devices moved into explicit slices of `size`. */
function inSlices(inventory: DriverInventory, size: number): DriverInventory {
  return {
    pools: inventory.pools.map((pool) => {
      const slices: { devices: Device[] }[] = [];
      for (let start = 0; start < pool.devices.length; start += size) {
        slices.push({ devices: pool.devices.slice(start, start + size) });
      }
      return { ...pool, devices: [], slices };
    }),
  };
}

/** The health of every device, pool devices first, then each explicit slice's. */
function healths(inventory: DriverInventory): (DeviceHealth | undefined)[] {
  return inventory.pools.flatMap((pool) =>
    [...pool.devices, ...(pool.slices ?? []).flatMap((slice) => slice.devices)].map(
      (device) => device.health,
    ),
  );
}

const healthy = (timeoutSeconds?: number): DeviceHealth =>
  timeoutSeconds === undefined
    ? { status: 'healthy' }
    : { status: 'healthy', message: 'ok', timeoutSeconds };

describe('expireHealth', () => {
  it('returns the same inventory before any timeout, with the earliest deadline', () => {
    const inventory = withHealth(
      gpus(4),
      healthy(30),
      { status: 'unhealthy', message: 'ECC errors', timeoutSeconds: 10 },
      healthy(),
      healthy(20),
    );

    const result = expireHealth(inventory, RECEIVED_AT, RECEIVED_AT + 9_999);

    expect(result.inventory).toBe(inventory);
    expect(result.nextDeadline).toBe(RECEIVED_AT + 10_000);
  });

  it('has no deadline when no device reports a timeout', () => {
    const inventory = withHealth(gpus(2), healthy());

    const result = expireHealth(inventory, RECEIVED_AT, RECEIVED_AT + 86_400_000);

    expect(result).toEqual({ inventory, nextDeadline: undefined });
    expect(result.inventory).toBe(inventory);
  });

  it('makes a device unknown once its timeout has passed, naming the timeout', () => {
    const inventory = withHealth(
      gpus(3),
      healthy(10),
      { status: 'unhealthy', message: 'ECC errors', timeoutSeconds: 10 },
      healthy(60),
    );
    const before = structuredClone(inventory);

    // At the deadline itself: the timer set for it must find the device expired.
    const result = expireHealth(inventory, RECEIVED_AT, RECEIVED_AT + 10_000);

    const unknown: DeviceHealth = {
      status: 'unknown',
      message: 'no health update from the driver for 10s (its timeout)',
    };
    expect(healths(result.inventory)).toEqual([unknown, unknown, healthy(60)]);
    expect(result.nextDeadline).toBe(RECEIVED_AT + 60_000);
    // Only health changed; the received inventory itself is kept for the next timeout.
    expect(onlyHealthDiffers(inventory, result.inventory)).toBe(true);
    expect(inventory).toEqual(before);
  });

  it('expires devices in explicit slices too', () => {
    const inventory = inSlices(
      withHealth(gpus(4), healthy(5), healthy(5), healthy(5), healthy(90)),
      2,
    );

    const result = expireHealth(inventory, RECEIVED_AT, RECEIVED_AT + 6_000);

    expect(healths(result.inventory).map((health) => health?.status)).toEqual([
      'unknown',
      'unknown',
      'unknown',
      'healthy',
    ]);
    expect(result.inventory.pools[0]?.slices?.map((slice) => slice.devices.length)).toEqual([2, 2]);
    expect(result.nextDeadline).toBe(RECEIVED_AT + 90_000);
  });

  it('gives a device already of unknown health no deadline', () => {
    const inventory = withHealth(gpus(1), {
      status: 'unknown',
      message: 'sensor not answering',
      timeoutSeconds: 5,
    });

    const early = expireHealth(inventory, RECEIVED_AT, RECEIVED_AT);
    const late = expireHealth(inventory, RECEIVED_AT, RECEIVED_AT + 60_000);

    expect(early).toEqual({ inventory, nextDeadline: undefined });
    expect(late.inventory).toBe(inventory);
    expect(healths(late.inventory)).toEqual([
      { status: 'unknown', message: 'sensor not answering', timeoutSeconds: 5 },
    ]);
  });
});

/** `inventory` with the first device's model attribute changed. */
function renamedModel(inventory: DriverInventory): DriverInventory {
  return {
    pools: inventory.pools.map((pool) => ({
      ...pool,
      devices: pool.devices.map((device, i) =>
        i === 0
          ? { ...device, attributes: { ...device.attributes, model: { string: 'B200' } } }
          : device,
      ),
    })),
  };
}

describe('onlyHealthDiffers', () => {
  const base = withHealth(gpus(3), healthy(30), healthy(30), healthy(30));

  const cases: [name: string, after: DriverInventory, healthOnly: boolean][] = [
    ['equal', withHealth(gpus(3), healthy(30), healthy(30), healthy(30)), false],
    [
      'health-status-changed',
      withHealth(gpus(3), healthy(30), { status: 'unhealthy', message: 'ECC' }, healthy(30)),
      true,
    ],
    ['health-timeout-changed', withHealth(gpus(3), healthy(30), healthy(30), healthy(45)), true],
    ['health-no-longer-reported', gpus(3), true],
    ['capacity-changed', withHealth(gpus(3, '40Gi'), healthy(30), healthy(30), healthy(30)), false],
    [
      'attribute-changed',
      withHealth(renamedModel(gpus(3)), healthy(30), healthy(30), healthy(30)),
      false,
    ],
    [
      'attribute-and-health-changed',
      withHealth(gpus(3, '40Gi'), { status: 'unknown' }, healthy(30), healthy(30)),
      false,
    ],
    [
      'device-added',
      withHealth(gpus(4), healthy(30), healthy(30), healthy(30), healthy(30)),
      false,
    ],
    ['device-removed', withHealth(gpus(2), healthy(30), healthy(30)), false],
    ['moved-into-explicit-slices', inSlices(base, 2), false],
  ];

  it.each(cases)('%s', (_, after, healthOnly) => {
    expect(onlyHealthDiffers(base, after)).toBe(healthOnly);
  });

  it('sees a health-only change inside explicit slices', () => {
    const before = inSlices(base, 2);
    const after = inSlices(withHealth(gpus(3), healthy(30), healthy(30), { status: 'unknown' }), 2);
    expect(onlyHealthDiffers(before, after)).toBe(true);
    expect(onlyHealthDiffers(before, inSlices(base, 1))).toBe(false);
  });
});
