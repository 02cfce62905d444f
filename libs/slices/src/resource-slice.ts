import type { CounterSet, Device, NodeSelector } from '@slicekeeper/contracts';

/**
 * The Kubernetes side of the planner: resource.k8s.io/v1 ResourceSlice in its JSON shape, as
 * the API server returns it and as the slice-syncer sends it. Only the fields slicekeeper reads
 * or writes are typed; anything else an existing object carries (managedFields, annotations,
 * fields of newer API versions) travels through an update untouched, because updates are built
 * by spreading the existing object.
 */

export const RESOURCE_SLICE_API_VERSION = 'resource.k8s.io/v1';
export const RESOURCE_SLICE_KIND = 'ResourceSlice';

/**
 * The label that marks a slice as slicekeeper's. Slices without it (a driver's own, another
 * controller's, a human's) are never updated or deleted, even when they carry our driver and node.
 */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** The value of {@link MANAGED_BY_LABEL} on every slice slicekeeper writes. */
export const MANAGED_BY_VALUE = 'slicekeeper';

/** Most devices in one slice (resource.k8s.io/v1 `ResourceSliceMaxDevices`). */
export const MAX_DEVICES_PER_SLICE = 128;
/**
 * Most devices in one slice when any of them uses taints, counter consumption or list
 * attributes (`ResourceSliceMaxDevicesWithAdvancedFeatures`): those devices are bigger, and the
 * lower count keeps a slice under the etcd object size limit. Which devices count is decided by
 * `usesAdvancedFeatures` alone.
 */
export const MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES = 64;
/** Most attributes plus capacities of one device. */
export const MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32;
/** Longest identifier part of an attribute or capacity name, characters. */
export const MAX_ATTRIBUTE_ID_LENGTH = 32;
/** Longest domain part of an attribute or capacity name, characters. */
export const MAX_ATTRIBUTE_DOMAIN_LENGTH = 63;
/** Longest string or version attribute value, bytes (UTF-8). */
export const MAX_ATTRIBUTE_VALUE_LENGTH = 64;
/**
 * Most attribute values of one device, a list counting each of its items
 * (`ResourceSliceMaxAttributeValuesPerDevice`, 1.36 with list-type attributes).
 */
export const MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48;
/** Most entries of a capacity's `requestPolicy.validValues` (`CapacityRequestPolicyDiscreteMaxOptions`). */
export const MAX_REQUEST_POLICY_VALID_VALUES = 10;
/** Most `bindingConditions` of one device (`BindingConditionsMaxSize`). */
export const MAX_BINDING_CONDITIONS = 4;
/** Most `bindingFailureConditions` of one device (`BindingFailureConditionsMaxSize`). */
export const MAX_BINDING_FAILURE_CONDITIONS = 4;
/**
 * Largest `passThrough` of one device, bytes of its JSON (UTF-8). slicekeeper's own bound, not
 * the API server's: a device's typed fields at their limits are a few KiB, and 64 devices with
 * this much each still leave a slice far below etcd's 1.5 MiB object limit.
 */
export const MAX_DEVICE_PASS_THROUGH_BYTES = 4096;
/**
 * Largest `passThrough` of one pool, bytes of its JSON (UTF-8); it is copied into every slice
 * spec of the pool. slicekeeper's own bound, for the same reason as the device's.
 */
export const MAX_POOL_PASS_THROUGH_BYTES = 16384;
/** Most taints of one device. */
export const MAX_TAINTS_PER_DEVICE = 16;
/** Most counter sets in one slice's `sharedCounters`. */
export const MAX_COUNTER_SETS_PER_SLICE = 8;
/** Most counters in one counter set. */
export const MAX_COUNTERS_PER_COUNTER_SET = 32;
/** Most `consumesCounters` entries of one device. */
export const MAX_COUNTER_CONSUMPTIONS_PER_DEVICE = 2;
/** Most counters in one `consumesCounters` entry. */
export const MAX_COUNTERS_PER_COUNTER_CONSUMPTION = 32;
/** Longest pool name, characters. */
export const MAX_POOL_NAME_LENGTH = 253;
/**
 * Longest `generateName` the API server keeps: it truncates the base to 58 characters before
 * appending 5 random ones (apiserver `names.MaxGeneratedNameLength`). The slice index comes
 * first in our names, so truncation never loses it.
 */
export const MAX_GENERATED_NAME_BASE_LENGTH = 58;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

/** Identifies a pool and which generation of it a slice belongs to. */
export interface ResourcePool {
  name: string;
  /** Slices of an older generation than the newest one of the pool are ignored by the scheduler. */
  generation: number;
  /** How many slices make up the pool at this generation; the scheduler waits for all of them. */
  resourceSliceCount: number;
}

export interface ResourceSliceSpec {
  driver: string;
  pool: ResourcePool;
  /** Set for node-local pools; immutable. Exactly one of nodeName, nodeSelector, allNodes. */
  nodeName?: string;
  nodeSelector?: NodeSelector;
  allNodes?: boolean;
  /** Set for pools of scope `per-device`: each device names its own nodes. */
  perDeviceNodeSelection?: boolean;
  /** A slice holds devices or shared counters, never both (resource.k8s.io/v1). */
  devices?: Device[];
  sharedCounters?: CounterSet[];
}

export interface ResourceSlice {
  apiVersion: typeof RESOURCE_SLICE_API_VERSION;
  kind: typeof RESOURCE_SLICE_KIND;
  metadata: ObjectMeta;
  spec: ResourceSliceSpec;
}

/** A slice as read from the API server: it has a name, a UID and a resource version. */
export interface StoredResourceSlice extends ResourceSlice {
  metadata: ObjectMeta & { name: string; uid: string; resourceVersion: string };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What keeps `value` (JSON from the API server, or a record of it) from being a
 * {@link StoredResourceSlice} the planner can rely on: metadata.name, uid and resourceVersion
 * strings and a spec with a driver. Undefined when nothing does; the other fields are not
 * checked.
 */
export function storedSliceProblem(value: unknown): string | undefined {
  if (!isRecord(value) || !isRecord(value.metadata)) return 'without metadata';
  const { name, uid, resourceVersion } = value.metadata;
  if (typeof name !== 'string' || typeof uid !== 'string' || typeof resourceVersion !== 'string') {
    return 'without name, uid or resourceVersion';
  }
  if (!isRecord(value.spec) || typeof value.spec.driver !== 'string') {
    return `"${name}" without spec.driver`;
  }
  return undefined;
}

/** Whether slicekeeper manages `slice` (it carries {@link MANAGED_BY_LABEL}). */
export function isManagedSlice(slice: ResourceSlice): boolean {
  return slice.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}
