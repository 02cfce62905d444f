import type { Device } from '@slicekeeper/contracts';
import {
  MAX_DEVICES_PER_SLICE,
  MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES,
} from './resource-slice';

/**
 * Whether `device` lowers its slice's limit to 64 devices. The API server's rule
 * (`validateResourceSliceSpec`: `haveDeviceTaints || haveConsumesCounters ||
 * haveListAttributes`, `ResourceSliceMaxDevicesWithAdvancedFeatures` in 1.35 and 1.36) is a
 * device with taints, with counter consumption, or with a list-valued attribute (`ints`,
 * `bools`, `strings`, `versions`, even an empty one: upstream tests for a non-nil list).
 *
 * A device with a non-empty `passThrough` counts too: its fields belong to a release
 * slicekeeper does not know, which may count them as advanced, and a slice the server finds
 * over its limit fails the whole pool, where a slice too few devices costs one more object.
 *
 * The layout (`layoutPool`) and both validators decide the cap with this one function.
 */
export function usesAdvancedFeatures(device: Device): boolean {
  if (device.taints !== undefined && device.taints.length > 0) return true;
  if (device.consumesCounters !== undefined && device.consumesCounters.length > 0) return true;
  const attributes = device.attributes;
  if (attributes !== undefined) {
    for (const name in attributes) {
      const attribute = attributes[name];
      if (attribute === undefined) continue;
      if (
        attribute.ints !== undefined ||
        attribute.bools !== undefined ||
        attribute.strings !== undefined ||
        attribute.versions !== undefined
      ) {
        return true;
      }
    }
  }
  const passThrough = device.passThrough;
  if (passThrough !== undefined) {
    for (const field in passThrough) {
      if (Object.hasOwn(passThrough, field)) return true;
    }
  }
  return false;
}

/** The most devices a slice holding `devices` may have: 128, or 64 when any is advanced. */
export function maxDevicesPerSlice(devices: readonly Device[]): number {
  for (const device of devices) {
    if (usesAdvancedFeatures(device)) return MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES;
  }
  return MAX_DEVICES_PER_SLICE;
}
