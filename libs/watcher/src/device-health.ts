import { isDeepStrictEqual } from 'node:util';
import type { Device, DriverInventory, Pool } from '@slicekeeper/contracts';

/** What {@link expireHealth} found. */
export interface HealthAtTime {
  /** The inventory as it stands at the time asked: `inventory` itself when nothing expired. */
  readonly inventory: DriverInventory;
  /** When the next device's health times out (ms since the epoch), if any does later. */
  readonly nextDeadline: number | undefined;
}

/**
 * The driver's inventory as it stands at `now`: a device whose health timeout has passed since
 * the message arrived (`receivedAt`) is of `unknown` health (KEP-4680: kubelet marks a device
 * Unknown when its driver stops updating it). Every message updates every device, so the clock
 * restarts with each one; a device already `unknown` has nothing left to time out.
 */
export function expireHealth(
  inventory: DriverInventory,
  receivedAt: number,
  now: number,
): HealthAtTime {
  let nextDeadline: number | undefined;
  let expired = 0;
  const expire = (device: Device): Device => {
    const health = device.health;
    if (health?.timeoutSeconds === undefined || health.status === 'unknown') return device;
    const deadline = receivedAt + health.timeoutSeconds * 1000;
    if (deadline > now) {
      nextDeadline = nextDeadline === undefined ? deadline : Math.min(nextDeadline, deadline);
      return device;
    }
    expired++;
    return {
      ...device,
      health: {
        status: 'unknown',
        message: `no health update from the driver for ${health.timeoutSeconds}s (its timeout)`,
      },
    };
  };
  if (!reportsHealth(inventory)) return { inventory, nextDeadline: undefined };
  const pools = inventory.pools.map((pool): Pool => {
    const devices = pool.devices.map(expire);
    const slices = pool.slices?.map((slice) => ({ ...slice, devices: slice.devices.map(expire) }));
    return slices === undefined ? { ...pool, devices } : { ...pool, devices, slices };
  });
  return { inventory: expired > 0 ? { pools } : inventory, nextDeadline };
}

/** Whether two inventories differ in device health and in nothing else. */
export function onlyHealthDiffers(before: DriverInventory, after: DriverInventory): boolean {
  // Most drivers report no health at all: nothing to compare.
  if (!reportsHealth(before) && !reportsHealth(after)) return false;
  if (isDeepStrictEqual(before, after)) return false;
  return isDeepStrictEqual(withoutHealth(before), withoutHealth(after));
}

function reportsHealth(inventory: DriverInventory): boolean {
  return inventory.pools.some(
    (pool) =>
      pool.devices.some((d) => d.health !== undefined) ||
      (pool.slices ?? []).some((slice) => slice.devices.some((d) => d.health !== undefined)),
  );
}

function withoutHealth(inventory: DriverInventory): DriverInventory {
  const strip = (device: Device): Device => {
    if (device.health === undefined) return device;
    const rest = { ...device };
    delete rest.health;
    return rest;
  };
  return {
    pools: inventory.pools.map((pool) => ({
      ...pool,
      devices: pool.devices.map(strip),
      ...(pool.slices === undefined
        ? {}
        : { slices: pool.slices.map((s) => ({ ...s, devices: s.devices.map(strip) })) }),
    })),
  };
}
