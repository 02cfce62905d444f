import type {
  CapacityRequestPolicy,
  Device,
  DeviceAttribute,
  DeviceCapacity,
  DeviceCounterConsumption,
  DeviceTaint,
} from '@slicekeeper/contracts';
import { fromHealth, toHealth } from './device-health-mapper';
import { toExactNumber } from './exact-number';
import type * as wire from './generated/slicekeeper/v1/resources';
import { fromNodeSelector, toNodeSelector } from './node-selector-mapper';
import { fromPassThrough, toPassThrough } from './pass-through-mapper';

/**
 * The devices of a pool or explicit slice, structure only (see `mapDriverResources`). `path`
 * is that of the list; a device's own path is built only when it has a problem.
 */
export function toDevices(devices: wire.Device[], path: string, problems: string[]): Device[] {
  return devices.map((device, k) => toDevice(device, () => `${path}[${k}]`, problems));
}

/**
 * A wire device in the domain model. A field the wire leaves unset stays unset; an empty list
 * (binding conditions, valid values) is unset too, as proto3 cannot tell the two apart.
 */
function toDevice(device: wire.Device, path: () => string, problems: string[]): Device {
  const mapped: Device = { name: device.name };
  const attributes = Object.entries(device.attributes);
  if (attributes.length > 0) {
    mapped.attributes = Object.fromEntries(
      attributes.map(([name, a]) => [
        name,
        toAttribute(a, () => `${path()}.attributes[${name}]`, problems),
      ]),
    );
  }
  const capacity = Object.entries(device.capacity);
  if (capacity.length > 0) {
    mapped.capacity = Object.fromEntries(capacity.map(([name, c]) => [name, toCapacity(c)]));
  }
  if (device.taints.length > 0) {
    mapped.taints = device.taints.map((taint, t) =>
      toTaint(taint, () => `${path()}.taints[${t}]`, problems),
    );
  }
  if (device.consumesCounters.length > 0) {
    mapped.consumesCounters = device.consumesCounters.map(toConsumption);
  }
  if (device.health !== undefined) {
    const health = toHealth(device.health, () => `${path()}.health`, problems);
    if (health !== undefined) mapped.health = health;
  }
  if (device.nodeName !== undefined) mapped.nodeName = device.nodeName;
  if (device.nodeSelector !== undefined) {
    mapped.nodeSelector = toNodeSelector(device.nodeSelector);
  }
  if (device.allNodes !== undefined) mapped.allNodes = device.allNodes;
  if (device.allowMultipleAllocations !== undefined) {
    mapped.allowMultipleAllocations = device.allowMultipleAllocations;
  }
  if (device.bindsToNode !== undefined) mapped.bindsToNode = device.bindsToNode;
  if (device.bindingConditions.length > 0) mapped.bindingConditions = device.bindingConditions;
  if (device.bindingFailureConditions.length > 0) {
    mapped.bindingFailureConditions = device.bindingFailureConditions;
  }
  const passThrough = toPassThrough(
    device.passThroughJson,
    () => `${path()}.passThrough`,
    problems,
  );
  if (passThrough !== undefined) mapped.passThrough = passThrough;
  return mapped;
}

/**
 * One value, whichever form the wire holds; an attribute without one is kept empty for the
 * validator. Each int, scalar or list element, must be a number exactly.
 */
function toAttribute(
  attribute: wire.DeviceAttribute,
  path: () => string,
  problems: string[],
): DeviceAttribute {
  const value = attribute.value;
  switch (value?.$case) {
    case 'intValue':
      return { int: toExactNumber(value.value, () => `${path()}.int`, problems) };
    case 'boolValue':
      return { bool: value.value };
    case 'stringValue':
      return { string: value.value };
    case 'versionValue':
      return { version: value.value };
    case 'intValues':
      return {
        ints: value.value.values.map((int, i) =>
          toExactNumber(int, () => `${path()}.ints[${i}]`, problems),
        ),
      };
    case 'boolValues':
      return { bools: value.value.values };
    case 'stringValues':
      return { strings: value.value.values };
    case 'versionValues':
      return { versions: value.value.values };
    case undefined:
      return {};
  }
}

function toCapacity(capacity: wire.DeviceCapacity): DeviceCapacity {
  const policy = capacity.requestPolicy;
  if (policy === undefined) return { value: capacity.value };
  const requestPolicy: CapacityRequestPolicy = {};
  if (policy.default !== undefined) requestPolicy.default = policy.default;
  if (policy.validValues.length > 0) requestPolicy.validValues = policy.validValues;
  if (policy.validRange !== undefined) {
    const { min, max, step } = policy.validRange;
    requestPolicy.validRange = { min };
    if (max !== undefined) requestPolicy.validRange.max = max;
    if (step !== undefined) requestPolicy.validRange.step = step;
  }
  return { value: capacity.value, requestPolicy };
}

function toTaint(taint: wire.DeviceTaint, path: () => string, problems: string[]): DeviceTaint {
  const mapped: DeviceTaint = { key: taint.key, effect: taint.effect };
  if (taint.value !== '') mapped.value = taint.value;
  if (taint.timeAdded !== undefined) {
    // The decoder turns seconds beyond ±8.64e12 into an invalid Date, which has no ISO form.
    if (Number.isNaN(taint.timeAdded.getTime())) {
      problems.push(
        `${path()}.timeAdded: is outside the range of a timestamp ` +
          '(0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z)',
      );
    } else {
      mapped.timeAdded = taint.timeAdded.toISOString();
    }
  }
  return mapped;
}

function toConsumption(consumption: wire.DeviceCounterConsumption): DeviceCounterConsumption {
  return { counterSet: consumption.counterSet, counters: toCounters(consumption.counters) };
}

/** Counters by name, of a consumption or a counter set. */
export function toCounters(
  counters: Record<string, wire.Counter>,
): Record<string, { value: string }> {
  return Object.fromEntries(Object.entries(counters).map(([n, c]) => [n, { value: c.value }]));
}

/** The wire form of a domain device (see `fromDriverInventory`). */
export function fromDevice(device: Device): wire.Device {
  return {
    name: device.name,
    attributes: Object.fromEntries(
      Object.entries(device.attributes ?? {}).map(([name, a]) => [name, fromAttribute(a)]),
    ),
    capacity: Object.fromEntries(
      Object.entries(device.capacity ?? {}).map(([name, c]) => [name, fromCapacity(c)]),
    ),
    taints: (device.taints ?? []).map((taint) => ({
      key: taint.key,
      value: taint.value ?? '',
      effect: taint.effect,
      timeAdded: taint.timeAdded === undefined ? undefined : new Date(taint.timeAdded),
    })),
    consumesCounters: (device.consumesCounters ?? []).map((c) => ({
      counterSet: c.counterSet,
      counters: c.counters,
    })),
    health: device.health === undefined ? undefined : fromHealth(device.health),
    nodeName: device.nodeName,
    nodeSelector:
      device.nodeSelector === undefined ? undefined : fromNodeSelector(device.nodeSelector),
    allNodes: device.allNodes,
    allowMultipleAllocations: device.allowMultipleAllocations,
    bindsToNode: device.bindsToNode,
    bindingConditions: device.bindingConditions ?? [],
    bindingFailureConditions: device.bindingFailureConditions ?? [],
    passThroughJson: fromPassThrough(device.passThrough),
  };
}

/**
 * The first value the attribute holds, in the wire's order; none for an empty one.
 * @throws {RangeError} for an int that is not an integer (the domain schema allows none).
 */
function fromAttribute(attribute: DeviceAttribute): wire.DeviceAttribute {
  if (attribute.int !== undefined) {
    return { value: { $case: 'intValue', value: BigInt(attribute.int) } };
  }
  if (attribute.bool !== undefined) return { value: { $case: 'boolValue', value: attribute.bool } };
  if (attribute.string !== undefined) {
    return { value: { $case: 'stringValue', value: attribute.string } };
  }
  if (attribute.version !== undefined) {
    return { value: { $case: 'versionValue', value: attribute.version } };
  }
  if (attribute.ints !== undefined) {
    return {
      value: { $case: 'intValues', value: { values: attribute.ints.map((n) => BigInt(n)) } },
    };
  }
  if (attribute.bools !== undefined) {
    return { value: { $case: 'boolValues', value: { values: attribute.bools } } };
  }
  if (attribute.strings !== undefined) {
    return { value: { $case: 'stringValues', value: { values: attribute.strings } } };
  }
  if (attribute.versions !== undefined) {
    return { value: { $case: 'versionValues', value: { values: attribute.versions } } };
  }
  return { value: undefined };
}

function fromCapacity(capacity: DeviceCapacity): wire.DeviceCapacity {
  const policy = capacity.requestPolicy;
  return {
    value: capacity.value,
    requestPolicy:
      policy === undefined
        ? undefined
        : {
            default: policy.default,
            validValues: policy.validValues ?? [],
            validRange: policy.validRange,
          },
  };
}
