import { deviceSchema } from '@slicekeeper/contracts';
import type { Device, PassThroughFields } from '@slicekeeper/contracts';

/**
 * What a driver's device and pool become in a ResourceSlice. The domain model spells every
 * typed field as resource.k8s.io/v1 does, so publishing means leaving out what is only
 * slicekeeper's (`health`, which becomes taints before planning, and `passThrough`) and
 * merging the pass-through members: fields of a newer release that slicekeeper has no typed
 * field for, sent as the driver wrote them and checked by the API server alone.
 */

/**
 * The Device fields slicekeeper types, its domain-only ones included: a pass-through member of
 * one of these names is never published, so that it cannot override (or stand in for) a typed
 * field. The validator refuses such a member; this keeps the planner safe without it.
 */
const TYPED_DEVICE_FIELDS: ReadonlySet<string> = new Set(Object.keys(deviceSchema.shape));

/**
 * The ResourceSliceSpec fields the planner writes: a pool's pass-through member of one of these
 * names is never published.
 */
export const TYPED_SLICE_SPEC_FIELDS: ReadonlySet<string> = new Set([
  'driver',
  'pool',
  'nodeName',
  'nodeSelector',
  'allNodes',
  'perDeviceNodeSelection',
  'devices',
  'sharedCounters',
]);

/**
 * `device` as the planner publishes it (resource.k8s.io/v1 Device): without `health` and
 * `passThrough`, with the pass-through members that name no typed field. Typed fields always
 * win. Returns `device` itself when it has neither domain-only field, so that unchanged
 * inventories share structure with the plan.
 */
export function publishedDevice(device: Device): Device {
  if (device.health === undefined && device.passThrough === undefined) return device;
  const { passThrough, ...typed } = device;
  delete typed.health;
  return { ...untypedMembers(passThrough, TYPED_DEVICE_FIELDS), ...typed };
}

/** {@link publishedDevice} of every device; `devices` itself when none changes. */
export function publishedDevices(devices: Device[]): Device[] {
  let result = devices;
  for (let i = 0; i < devices.length; i++) {
    const device = devices[i];
    if (device === undefined) continue;
    const published = publishedDevice(device);
    if (published === device) continue;
    if (result === devices) result = devices.slice();
    result[i] = published;
  }
  return result;
}

/**
 * The members of `passThrough` whose names are not in `typed`, in their order; an empty object
 * when there is none.
 */
export function untypedMembers(
  passThrough: PassThroughFields | undefined,
  typed: ReadonlySet<string>,
): PassThroughFields {
  const members: PassThroughFields = {};
  if (passThrough === undefined) return members;
  for (const [name, value] of Object.entries(passThrough)) {
    if (!typed.has(name)) members[name] = value;
  }
  return members;
}
