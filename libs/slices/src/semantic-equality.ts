import type {
  CapacityRequestPolicy,
  CapacityRequestPolicyRange,
  Counter,
  CounterSet,
  Device,
  DeviceAttribute,
  DeviceCapacity,
  DeviceCounterConsumption,
  DeviceTaint,
} from '@slicekeeper/contracts';
import { quantitiesEqual } from './quantity';
import { parseRfc3339 } from './parse-rfc3339';
import { TYPED_SLICE_SPEC_FIELDS } from './published-device';
import type { ResourceSliceSpec } from './resource-slice';

/**
 * "Is the stored slice already what we want?" — answered as upstream's controller does with
 * `apiequality.Semantic.DeepEqual` plus its `DevicesDeepEqual` taint rule, without serializing:
 *
 * - maps compare by key, whatever their order;
 * - quantities compare by value (`1Gi` equals `1024Mi`), as `Quantity.Cmp`;
 * - a taint's `timeAdded` matches within ±1 s (the API server stores whole seconds), and an
 *   unset one matches any (the API server may fill it in);
 * - an absent list or map equals an empty one, and an absent `taint.value` equals `""`, because
 *   the API server omits empty fields when it answers;
 * - list order matters: reordering devices changes the scheduler's preference, so it is a change;
 * - fields slicekeeper does not model (set by a newer writer or by hand, or a driver's
 *   pass-through members) compare structurally: the stored object must carry what the desired
 *   one does, and nothing else but empty values, or the update rewrites them. Quantities inside
 *   pass-through members compare as text, because nothing says which members are quantities.
 */

const DEVICE_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'attributes',
  'capacity',
  'taints',
  'consumesCounters',
]);
const ATTRIBUTE_FIELDS: ReadonlySet<string> = new Set(['int', 'bool', 'string', 'version']);
const QUANTITY_FIELDS: ReadonlySet<string> = new Set(['value']);
const CAPACITY_FIELDS: ReadonlySet<string> = new Set(['value', 'requestPolicy']);
const REQUEST_POLICY_FIELDS: ReadonlySet<string> = new Set([
  'default',
  'validValues',
  'validRange',
]);
const RANGE_FIELDS: ReadonlySet<string> = new Set(['min', 'max', 'step']);
const TAINT_FIELDS: ReadonlySet<string> = new Set(['key', 'value', 'effect', 'timeAdded']);
const CONSUMPTION_FIELDS: ReadonlySet<string> = new Set(['counterSet', 'counters']);
const COUNTER_SET_FIELDS: ReadonlySet<string> = new Set(['name', 'counters']);

/** How far apart two taint `timeAdded` values may be and still match, ms. */
export const TAINT_TIME_TOLERANCE_MS = 1000;

/** Whether two device lists are semantically equal, in order. */
export function devicesEqual(
  stored: readonly Device[] | undefined,
  desired: readonly Device[] | undefined,
): boolean {
  return listsEqual(stored, desired, deviceEqual);
}

export function deviceEqual(stored: Device, desired: Device): boolean {
  if (stored === desired) return true;
  return (
    stored.name === desired.name &&
    recordsEqual(stored.attributes, desired.attributes, attributeEqual) &&
    recordsEqual(stored.capacity, desired.capacity, capacityEqual) &&
    listsEqual(stored.taints, desired.taints, taintEqual) &&
    listsEqual(stored.consumesCounters, desired.consumesCounters, consumptionEqual) &&
    otherFieldsEqual(stored, desired, DEVICE_FIELDS)
  );
}

/**
 * Whether two ResourceSlice specs publish the same thing (upstream `syncPool`'s comparison of
 * a stored slice with the desired one): pool, node selection, devices and counter sets by their
 * meaning, and every other member (a pool's pass-through fields, a newer writer's) with
 * {@link semanticEqual}. Unset booleans equal `false`, as the API server omits them.
 */
export function sliceSpecsEqual(stored: ResourceSliceSpec, desired: ResourceSliceSpec): boolean {
  return (
    stored.driver === desired.driver &&
    stored.pool.name === desired.pool.name &&
    stored.pool.generation === desired.pool.generation &&
    stored.pool.resourceSliceCount === desired.pool.resourceSliceCount &&
    otherFieldsEqual(stored.pool, desired.pool, POOL_FIELDS) &&
    (stored.nodeName ?? '') === (desired.nodeName ?? '') &&
    semanticEqual(stored.nodeSelector, desired.nodeSelector) &&
    (stored.allNodes === true) === (desired.allNodes === true) &&
    (stored.perDeviceNodeSelection === true) === (desired.perDeviceNodeSelection === true) &&
    devicesEqual(stored.devices, desired.devices) &&
    counterSetsEqual(stored.sharedCounters, desired.sharedCounters) &&
    otherFieldsEqual(stored, desired, TYPED_SLICE_SPEC_FIELDS)
  );
}

const POOL_FIELDS: ReadonlySet<string> = new Set(['name', 'generation', 'resourceSliceCount']);

/** Whether two `sharedCounters` lists are semantically equal, in order. */
export function counterSetsEqual(
  stored: readonly CounterSet[] | undefined,
  desired: readonly CounterSet[] | undefined,
): boolean {
  return listsEqual(stored, desired, counterSetEqual);
}

/**
 * Upstream `deviceTaintEqual`: times within ±1 s match, and an unset time matches any, because
 * the API server rounds to seconds and may set `timeAdded` itself.
 */
export function taintTimesEqual(stored: string | undefined, desired: string | undefined): boolean {
  if (stored === undefined || desired === undefined || stored === desired) return true;
  const storedMs = parseRfc3339(stored);
  const desiredMs = parseRfc3339(desired);
  if (storedMs === undefined || desiredMs === undefined) return false;
  return Math.abs(storedMs - desiredMs) <= TAINT_TIME_TOLERANCE_MS;
}

/**
 * Generic semantic equality for JSON values whose schema slicekeeper does not model (a node
 * selector, fields of newer API versions): structural, with empty values (`undefined`, `null`,
 * `false`, `0`, `""`, `[]`, `{}`) equal to each other and to an absent field, because the API
 * server drops empty fields when it answers.
 */
export function semanticEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isEmptyValue(a) && isEmptyValue(b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (!semanticEqual(a[i], b[i])) return false;
    }
    return true;
  }
  const left = fieldsOf(a);
  const right = fieldsOf(b);
  for (const key in left) {
    if (!semanticEqual(left[key], right[key])) return false;
  }
  for (const key in right) {
    if (!(key in left) && !isEmptyValue(right[key])) return false;
  }
  return true;
}

/**
 * Scalar values compare exactly; the list values of 1.36 (`ints`, `bools`, `strings`,
 * `versions`) compare in order, with the other unmodelled fields.
 */
function attributeEqual(stored: DeviceAttribute, desired: DeviceAttribute): boolean {
  return (
    stored.int === desired.int &&
    stored.bool === desired.bool &&
    stored.string === desired.string &&
    stored.version === desired.version &&
    otherFieldsEqual(stored, desired, ATTRIBUTE_FIELDS)
  );
}

function quantityValueEqual(stored: Counter, desired: Counter): boolean {
  return (
    quantitiesEqual(stored.value, desired.value) &&
    otherFieldsEqual(stored, desired, QUANTITY_FIELDS)
  );
}

/** A capacity's value and its consumable-capacity request policy, quantities by value. */
function capacityEqual(stored: DeviceCapacity, desired: DeviceCapacity): boolean {
  return (
    quantitiesEqual(stored.value, desired.value) &&
    optionalEqual(stored.requestPolicy, desired.requestPolicy, requestPolicyEqual) &&
    otherFieldsEqual(stored, desired, CAPACITY_FIELDS)
  );
}

function requestPolicyEqual(
  stored: CapacityRequestPolicy,
  desired: CapacityRequestPolicy,
): boolean {
  return (
    optionalQuantitiesEqual(stored.default, desired.default) &&
    listsEqual(stored.validValues, desired.validValues, quantitiesEqual) &&
    optionalEqual(stored.validRange, desired.validRange, rangeEqual) &&
    otherFieldsEqual(stored, desired, REQUEST_POLICY_FIELDS)
  );
}

function rangeEqual(
  stored: CapacityRequestPolicyRange,
  desired: CapacityRequestPolicyRange,
): boolean {
  return (
    quantitiesEqual(stored.min, desired.min) &&
    optionalQuantitiesEqual(stored.max, desired.max) &&
    optionalQuantitiesEqual(stored.step, desired.step) &&
    otherFieldsEqual(stored, desired, RANGE_FIELDS)
  );
}

/**
 * Optional quantities: both unset (absent or `null`: Go encodes an unset `default` as `null`)
 * or equal by value.
 */
function optionalQuantitiesEqual(
  stored: string | null | undefined,
  desired: string | null | undefined,
): boolean {
  if (stored === undefined || stored === null) return desired === undefined || desired === null;
  if (desired === undefined || desired === null) return false;
  return quantitiesEqual(stored, desired);
}

/**
 * Optional objects: both unset, or set and equal. An object with nothing but empty members
 * (`{"default": null}`, as Go encodes an empty request policy) counts as unset.
 */
function optionalEqual<T extends object>(
  stored: T | null | undefined,
  desired: T | null | undefined,
  equal: (stored: T, desired: T) => boolean,
): boolean {
  const storedUnset = semanticEqual(stored ?? {}, {});
  const desiredUnset = semanticEqual(desired ?? {}, {});
  if (storedUnset || desiredUnset) return storedUnset && desiredUnset;
  if (stored === undefined || stored === null || desired === undefined || desired === null) {
    return false;
  }
  return equal(stored, desired);
}

function taintEqual(stored: DeviceTaint, desired: DeviceTaint): boolean {
  return (
    stored.key === desired.key &&
    (stored.value ?? '') === (desired.value ?? '') &&
    stored.effect === desired.effect &&
    taintTimesEqual(stored.timeAdded, desired.timeAdded) &&
    otherFieldsEqual(stored, desired, TAINT_FIELDS)
  );
}

function consumptionEqual(
  stored: DeviceCounterConsumption,
  desired: DeviceCounterConsumption,
): boolean {
  return (
    stored.counterSet === desired.counterSet &&
    recordsEqual(stored.counters, desired.counters, quantityValueEqual) &&
    otherFieldsEqual(stored, desired, CONSUMPTION_FIELDS)
  );
}

function counterSetEqual(stored: CounterSet, desired: CounterSet): boolean {
  return (
    stored.name === desired.name &&
    recordsEqual(stored.counters, desired.counters, quantityValueEqual) &&
    otherFieldsEqual(stored, desired, COUNTER_SET_FIELDS)
  );
}

function listsEqual<T>(
  stored: readonly T[] | undefined,
  desired: readonly T[] | undefined,
  equal: (stored: T, desired: T) => boolean,
): boolean {
  const storedLength = stored?.length ?? 0;
  if (storedLength !== (desired?.length ?? 0)) return false;
  if (stored === undefined || desired === undefined) return true; // both empty
  for (let i = 0; i < storedLength; i++) {
    const left = stored[i];
    const right = desired[i];
    if (left === undefined || right === undefined) {
      if (left !== right) return false;
    } else if (!equal(left, right)) {
      return false;
    }
  }
  return true;
}

/** Maps compared by key: same keys, equal values, in any order. */
function recordsEqual<T>(
  stored: Readonly<Record<string, T>> | undefined,
  desired: Readonly<Record<string, T>> | undefined,
  equal: (stored: T, desired: T) => boolean,
): boolean {
  if (stored === desired) return true;
  let storedCount = 0;
  if (stored !== undefined) {
    for (const key in stored) {
      const left = stored[key];
      if (left === undefined) continue;
      storedCount++;
      const right = desired?.[key];
      if (right === undefined || !equal(left, right)) return false;
    }
  }
  let desiredCount = 0;
  if (desired !== undefined) {
    for (const key in desired) {
      if (desired[key] !== undefined) desiredCount++;
    }
  }
  return storedCount === desiredCount;
}

/** The fields outside `known` of two objects, compared with {@link semanticEqual}. */
function otherFieldsEqual(stored: object, desired: object, known: ReadonlySet<string>): boolean {
  const left = fieldsOf(stored);
  const right = fieldsOf(desired);
  for (const key in left) {
    if (!known.has(key) && !semanticEqual(left[key], right[key])) return false;
  }
  for (const key in right) {
    if (!known.has(key) && !(key in left) && !isEmptyValue(right[key])) return false;
  }
  return true;
}

function isEmptyValue(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') {
    return true;
  }
  if (typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.length === 0;
  for (const key in value) {
    if (Object.hasOwn(value, key)) return false;
  }
  return true;
}

/** A JSON object's fields, for looking at keys the static type does not name. */
function fieldsOf(value: object): Readonly<Record<string, unknown>> {
  return value as Readonly<Record<string, unknown>>;
}
