import type { CounterSet, Device, Pool } from '@slicekeeper/contracts';
import { usesAdvancedFeatures } from './device-limits';
import {
  MAX_COUNTER_SETS_PER_SLICE,
  MAX_DEVICES_PER_SLICE,
  MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES,
} from './resource-slice';

// The package entry point has always exported the cap from here.
export { maxDevicesPerSlice, usesAdvancedFeatures } from './device-limits';

/** The content of one desired slice: devices or shared counters (a slice never has both). */
export interface SliceContent {
  readonly devices: Device[];
  readonly sharedCounters?: CounterSet[];
}

/**
 * The slice layout rules of a Kubernetes release. 1.35 moved counter sets into slices of their
 * own (a slice holds `sharedCounters` or `devices`, not both) and capped a slice with tainted or
 * counter-consuming devices at 64 devices; before, counter sets sat with the devices and 128
 * was the cap for every slice.
 */
export interface LayoutRules {
  /** Slices with an advanced device ({@link usesAdvancedFeatures}) hold at most 64. */
  readonly advancedCap: boolean;
  /** Counter sets sit in slices of their own; otherwise with the pool's first devices. */
  readonly countersApart: boolean;
}

/** The rules of Kubernetes 1.35 and later. */
export const CURRENT_LAYOUT_RULES: LayoutRules = { advancedCap: true, countersApart: true };

/** The layout rules of a release (`/version`'s major and minor). */
export function layoutRulesFor(release: { major: number; minor: number }): LayoutRules {
  const current = release.major > 1 || release.minor >= 35;
  return current ? CURRENT_LAYOUT_RULES : { advancedCap: false, countersApart: false };
}

export interface LayoutOptions {
  /** The release's rules. @defaultValue {@link CURRENT_LAYOUT_RULES} */
  readonly rules?: LayoutRules;
  /**
   * Lay devices out as if every one of them were tainted (at most 64 per slice), so that a
   * taint slicekeeper adds later (health, driver-unreachable) changes devices in place and
   * never re-lays the pool out.
   */
  readonly taintable?: boolean;
}

/**
 * The slices a pool is published as, in index order.
 *
 * - Explicit `slices` are kept as given (validation rejects one over its limit); none at all
 *   becomes one empty slice.
 * - Otherwise devices are packed in their order into as few slices as the limits allow: a slice
 *   takes devices until the next one would put it over 128, or over 64 once any device in it
 *   is advanced ({@link usesAdvancedFeatures}: taints, counters, list attributes, passThrough).
 *   The scope does not matter: a `per-device` pool is packed alike, its devices' own node
 *   selection does not lower the cap. Keeping the order matters: the scheduler tries
 *   slices by name and devices by position, so the driver's order is its allocation preference.
 *   Taking the longest prefix each time gives the fewest slices for an ordered split, because a
 *   shorter run of a valid slice is always valid too.
 *   With `taintable`, every slice takes at most 64 devices from the start.
 * - Pool-level shared counters follow in slices of their own, at most 8 counter sets each: the
 *   API allows `devices` or `sharedCounters` in a slice, not both, and counter sets are
 *   resolved pool-wide.
 * - A pool with nothing to publish still gets one empty slice: "empty pool" tells the scheduler
 *   the driver is up and has no devices, which is not the same as "no pool".
 */
export function layoutPool(pool: Pool, options: LayoutOptions = {}): SliceContent[] {
  if (pool.slices !== undefined) {
    if (pool.slices.length === 0) return [{ devices: [] }];
    return pool.slices.map((slice) =>
      slice.sharedCounters !== undefined && slice.sharedCounters.length > 0
        ? { devices: slice.devices, sharedCounters: slice.sharedCounters }
        : { devices: slice.devices },
    );
  }

  const rules = options.rules ?? CURRENT_LAYOUT_RULES;
  const slices = packDevices(pool.devices, options.taintable === true, rules.advancedCap);
  const counterSets = pool.sharedCounters ?? [];
  const deviceSlices = slices.length;
  for (let start = 0, i = 0; start < counterSets.length; start += MAX_COUNTER_SETS_PER_SLICE, i++) {
    const sharedCounters = counterSets.slice(start, start + MAX_COUNTER_SETS_PER_SLICE);
    const withDevices = rules.countersApart ? undefined : slices[i];
    if (withDevices !== undefined && i < deviceSlices)
      slices[i] = { ...withDevices, sharedCounters };
    else slices.push({ devices: [], sharedCounters });
  }
  if (slices.length === 0) slices.push({ devices: [] });
  return slices;
}

function packDevices(devices: Device[], taintable: boolean, advancedCap: boolean): SliceContent[] {
  if (devices.length === 0) return [];
  // The common case, a node's handful of devices, fits one slice whatever they use.
  if (devices.length <= MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES) return [{ devices }];
  if (taintable && advancedCap) {
    const slices: SliceContent[] = [];
    for (
      let start = 0;
      start < devices.length;
      start += MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES
    ) {
      slices.push({
        devices: devices.slice(start, start + MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES),
      });
    }
    return slices;
  }

  const slices: SliceContent[] = [];
  let start = 0;
  let advanced = false;
  for (let i = 0; i < devices.length; i++) {
    const device = devices[i];
    if (device === undefined) continue;
    const deviceAdvanced = usesAdvancedFeatures(device);
    const limit =
      advancedCap && (advanced || deviceAdvanced)
        ? MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES
        : MAX_DEVICES_PER_SLICE;
    if (i - start + 1 > limit) {
      slices.push({ devices: devices.slice(start, i) });
      start = i;
      advanced = deviceAdvanced;
    } else {
      advanced ||= deviceAdvanced;
    }
  }
  slices.push({ devices: start === 0 ? devices : devices.slice(start) });
  return slices;
}
