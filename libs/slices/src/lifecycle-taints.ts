import type { Device, DeviceTaint, Pool, PublishedTaints } from '@slicekeeper/contracts';
import {
  MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES,
  MAX_TAINTS_PER_DEVICE,
} from './resource-slice';

/** The effects a device taint can have (resource.k8s.io/v1 DeviceTaint.effect). */
export const taintEffects = ['None', 'NoSchedule', 'NoExecute'] as const;
export type TaintEffect = (typeof taintEffects)[number];

/** How a driver's device health becomes taints: an effect, or `off` (health is not published). */
export type HealthTaintPolicy = TaintEffect | 'off';

/** The conditions slicekeeper taints devices for, each under `<driver>/<condition>`. */
export const TAINT_CONDITIONS = {
  /** The driver reported the device unhealthy. */
  unhealthy: 'unhealthy',
  /** The driver reported the device's health unknown, or its health timeout passed. */
  healthUnknown: 'health-unknown',
  /** The key's stream failed and has not come back (an error, not EOF). */
  driverUnreachable: 'driver-unreachable',
} as const;

/** The key of the taint slicekeeper puts on `driver`'s devices for `condition`. */
export function lifecycleTaintKey(
  driver: string,
  condition: (typeof TAINT_CONDITIONS)[keyof typeof TAINT_CONDITIONS],
): string {
  return `${driver}/${condition}`;
}

export interface LifecycleTaintsInput {
  readonly driver: string;
  /** The driver's pools as stored in the snapshot: devices may carry `health`. */
  readonly pools: readonly Pool[];
  /** What unhealthy and unknown devices get. */
  readonly health: HealthTaintPolicy;
  /**
   * Since when the key's stream is lost (RFC 3339), when it is: every device gets the
   * `driver-unreachable` NoSchedule taint with this as its `timeAdded`.
   */
  readonly unreachableSince?: string;
}

export interface LifecycleTaints {
  /** The pools to publish: no `health` left on any device, slicekeeper's taints added. */
  readonly pools: Pool[];
  /** What was tainted, for the key's status; undefined when nothing was. */
  readonly summary: PublishedTaints | undefined;
}

/**
 * Turns a key's lifecycle into device taints, the way DRA users ask for it (KEP-4680 health,
 * kubernetes#141912): an unhealthy device gets `<driver>/unhealthy`, one of unknown health
 * `<driver>/health-unknown` (both with the policy's effect), and while the key's stream is lost
 * every device gets `<driver>/driver-unreachable` (NoSchedule: nothing new is scheduled there,
 * running pods stay). A taint's `timeAdded` is left to the planner, which keeps the stored one
 * while the condition lasts; the unreachable taint carries the time the stream was lost.
 *
 * A device's taints are a driver's first: slicekeeper's fill the room left of the most a device
 * may have (driver-unreachable first), and the devices of an explicit slice over the 64 devices a tainted
 * slice may hold get none either; the summary says so (`notApplied`).
 */
export function applyLifecycleTaints(input: LifecycleTaintsInput): LifecycleTaints {
  const unhealthy = lifecycleTaintKey(input.driver, TAINT_CONDITIONS.unhealthy);
  const unknown = lifecycleTaintKey(input.driver, TAINT_CONDITIONS.healthUnknown);
  const unreachable: DeviceTaint | undefined =
    input.unreachableSince === undefined
      ? undefined
      : {
          key: lifecycleTaintKey(input.driver, TAINT_CONDITIONS.driverUnreachable),
          effect: 'NoSchedule',
          timeAdded: wholeSeconds(input.unreachableSince),
        };
  const counts = { unhealthy: 0, healthUnknown: 0, tainted: 0, full: 0, oversized: 0 };

  const taint = (device: Device, taintable: boolean): Device => {
    const { health, ...published } = device;
    const added: DeviceTaint[] = [];
    if (health !== undefined && input.health !== 'off') {
      if (health.status === 'unhealthy') added.push({ key: unhealthy, effect: input.health });
      if (health.status === 'unknown') added.push({ key: unknown, effect: input.health });
    }
    if (unreachable !== undefined) added.push(unreachable);
    if (added.length === 0) return health === undefined ? device : published;
    if (!taintable) {
      counts.oversized++;
      return published;
    }
    const own = published.taints ?? [];
    const carries = (t: DeviceTaint) => own.some((o) => o.key === t.key && o.effect === t.effect);
    // When room is short, the driver-unreachable taint goes first: it matters most.
    const fresh = added.filter((t) => !carries(t));
    const room = Math.max(0, MAX_TAINTS_PER_DEVICE - own.length);
    const kept = [...fresh].sort((a, b) => Number(b === unreachable) - Number(a === unreachable));
    const applied = fresh.filter((t) => kept.indexOf(t) < room);
    if (applied.length < fresh.length) counts.full++;
    // What the device carries of ours, whether we added it or the driver sent the same.
    const carried = [...added.filter(carries), ...applied];
    if (carried.some((t) => t.key === unhealthy)) counts.unhealthy++;
    if (carried.some((t) => t.key === unknown)) counts.healthUnknown++;
    if (carried.some((t) => t.key === unreachable?.key)) counts.tainted++;
    return applied.length === 0 ? published : { ...published, taints: [...own, ...applied] };
  };

  const pools = input.pools.map((pool): Pool => {
    const devices = pool.devices.map((device) => taint(device, true));
    if (pool.slices === undefined) return { ...pool, devices };
    const slices = pool.slices.map((slice) => {
      const taintable = slice.devices.length <= MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES;
      return { ...slice, devices: slice.devices.map((device) => taint(device, taintable)) };
    });
    return { ...pool, devices, slices };
  });

  if (
    counts.unhealthy + counts.healthUnknown + counts.tainted + counts.full + counts.oversized ===
    0
  ) {
    return { pools, summary: undefined };
  }
  const notApplied: string[] = [];
  if (counts.full > 0) {
    notApplied.push(
      `${counts.full} device(s) had no room for all of slicekeeper's taints ` +
        `(at most ${MAX_TAINTS_PER_DEVICE} per device)`,
    );
  }
  if (counts.oversized > 0) {
    notApplied.push(
      `${counts.oversized} device(s) are in explicit slices of more than ` +
        `${MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES} devices, which cannot hold taints`,
    );
  }
  return {
    pools,
    summary: {
      ...(counts.tainted > 0 ? { unreachable: 'tainted' as const } : {}),
      unhealthy: counts.unhealthy,
      healthUnknown: counts.healthUnknown,
      ...(notApplied.length > 0 ? { notApplied: notApplied.join('; ') } : {}),
    },
  };
}

/** An RFC 3339 time in whole seconds, as the API server stores `timeAdded`. */
function wholeSeconds(time: string): string {
  const ms = Date.parse(time);
  return new Date(ms - (((ms % 1000) + 1000) % 1000)).toISOString().replace('.000Z', 'Z');
}
