import type {
  CounterSet,
  Device,
  DeviceAttribute,
  DeviceCounterConsumption,
  DeviceTaint,
  DriverInventory,
  NodeSelector,
  Pool,
  PoolScope,
} from '@slicekeeper/contracts';
import type * as wire from './generated/slicekeeper/v1/resources';

export interface ToInventoryOptions {
  /** The plugin's node: the name of a pool whose name is empty. Empty for a cluster-scoped key. */
  nodeName: string;
}

/**
 * Maps a `DriverResources` message to the domain inventory. Structure only: a value that breaks a
 * Kubernetes rule (an attribute without a value, a bad name) is carried over as it is, so that
 * the validator can name the field and the rule.
 */
export function toDriverInventory(
  message: wire.DriverResources,
  { nodeName }: ToInventoryOptions,
): DriverInventory {
  return {
    pools: message.pools.map((pool): Pool => {
      const mapped: Pool = {
        name: pool.name === '' ? nodeName : pool.name,
        scope: toScope(pool.nodeScope),
        devices: pool.devices.map(toDevice),
      };
      if (pool.generation !== undefined) mapped.generation = pool.generation;
      if (pool.slices.length > 0) {
        mapped.slices = pool.slices.map((slice) => {
          const devices = slice.devices.map(toDevice);
          return slice.sharedCounters.length > 0
            ? { devices, sharedCounters: slice.sharedCounters.map(toCounterSet) }
            : { devices };
        });
      }
      if (pool.sharedCounters.length > 0) {
        mapped.sharedCounters = pool.sharedCounters.map(toCounterSet);
      }
      return mapped;
    }),
  };
}

function toScope(scope: wire.Pool['nodeScope']): PoolScope {
  if (scope === undefined) return { kind: 'node' };
  if (scope.$case === 'allNodes') return scope.value ? { kind: 'all-nodes' } : { kind: 'node' };
  return { kind: 'node-selector', nodeSelector: toNodeSelector(scope.value) };
}

function toNodeSelector(selector: wire.NodeSelector): NodeSelector {
  return {
    nodeSelectorTerms: selector.terms.map((term) => {
      const mapped: NodeSelector['nodeSelectorTerms'][number] = {};
      if (term.matchExpressions.length > 0) {
        mapped.matchExpressions = term.matchExpressions.map(toRequirement);
      }
      if (term.matchFields.length > 0) mapped.matchFields = term.matchFields.map(toRequirement);
      return mapped;
    }),
  };
}

function toRequirement(requirement: wire.NodeSelectorRequirement) {
  const { key, operator, values } = requirement;
  return values.length > 0 ? { key, operator, values } : { key, operator };
}

function toDevice(device: wire.Device): Device {
  const mapped: Device = { name: device.name };
  const attributes = Object.entries(device.attributes);
  if (attributes.length > 0) {
    mapped.attributes = Object.fromEntries(attributes.map(([name, a]) => [name, toAttribute(a)]));
  }
  const capacity = Object.entries(device.capacity);
  if (capacity.length > 0) {
    mapped.capacity = Object.fromEntries(capacity.map(([name, c]) => [name, { value: c.value }]));
  }
  if (device.taints.length > 0) mapped.taints = device.taints.map(toTaint);
  if (device.consumesCounters.length > 0) {
    mapped.consumesCounters = device.consumesCounters.map(toConsumption);
  }
  return mapped;
}

function toAttribute(attribute: wire.DeviceAttribute): DeviceAttribute {
  const value = attribute.value;
  switch (value?.$case) {
    case 'intValue':
      return { int: value.value };
    case 'boolValue':
      return { bool: value.value };
    case 'stringValue':
      return { string: value.value };
    case 'versionValue':
      return { version: value.value };
    case undefined:
      return {};
  }
}

function toTaint(taint: wire.DeviceTaint): DeviceTaint {
  const mapped: DeviceTaint = { key: taint.key, effect: taint.effect };
  if (taint.value !== '') mapped.value = taint.value;
  if (taint.timeAdded !== undefined) mapped.timeAdded = taint.timeAdded.toISOString();
  return mapped;
}

function toConsumption(consumption: wire.DeviceCounterConsumption): DeviceCounterConsumption {
  return { counterSet: consumption.counterSet, counters: toCounters(consumption.counters) };
}

function toCounterSet(set: wire.CounterSet): CounterSet {
  return { name: set.name, counters: toCounters(set.counters) };
}

function toCounters(counters: Record<string, wire.Counter>): Record<string, { value: string }> {
  return Object.fromEntries(Object.entries(counters).map(([n, c]) => [n, { value: c.value }]));
}

/**
 * Maps a domain inventory back to a `DriverResources` message: what a driver written against the
 * domain model (the example driver) sends. `toDriverInventory(fromDriverInventory(x))` is `x`
 * for pools with non-empty names.
 */
export function fromDriverInventory(inventory: DriverInventory): wire.DriverResources {
  return {
    pools: inventory.pools.map((pool) => ({
      name: pool.name,
      generation: pool.generation,
      nodeScope: fromScope(pool.scope),
      devices: pool.devices.map(fromDevice),
      slices: (pool.slices ?? []).map((slice) => ({
        devices: slice.devices.map(fromDevice),
        sharedCounters: (slice.sharedCounters ?? []).map(fromCounterSet),
      })),
      sharedCounters: (pool.sharedCounters ?? []).map(fromCounterSet),
    })),
  };
}

function fromScope(scope: PoolScope): wire.Pool['nodeScope'] {
  switch (scope.kind) {
    case 'node':
      return undefined;
    case 'all-nodes':
      return { $case: 'allNodes', value: true };
    case 'node-selector':
      return {
        $case: 'nodeSelector',
        value: {
          terms: scope.nodeSelector.nodeSelectorTerms.map((term) => ({
            matchExpressions: (term.matchExpressions ?? []).map(fromRequirement),
            matchFields: (term.matchFields ?? []).map(fromRequirement),
          })),
        },
      };
  }
}

function fromRequirement(requirement: { key: string; operator: string; values?: string[] }) {
  return { key: requirement.key, operator: requirement.operator, values: requirement.values ?? [] };
}

function fromDevice(device: Device): wire.Device {
  return {
    name: device.name,
    attributes: Object.fromEntries(
      Object.entries(device.attributes ?? {}).map(([name, a]) => [name, fromAttribute(a)]),
    ),
    capacity: Object.fromEntries(
      Object.entries(device.capacity ?? {}).map(([name, c]) => [name, { value: c.value }]),
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
  };
}

function fromAttribute(attribute: DeviceAttribute): wire.DeviceAttribute {
  if (attribute.int !== undefined) return { value: { $case: 'intValue', value: attribute.int } };
  if (attribute.bool !== undefined) return { value: { $case: 'boolValue', value: attribute.bool } };
  if (attribute.string !== undefined) {
    return { value: { $case: 'stringValue', value: attribute.string } };
  }
  if (attribute.version !== undefined) {
    return { value: { $case: 'versionValue', value: attribute.version } };
  }
  return { value: undefined };
}

function fromCounterSet(set: CounterSet): wire.CounterSet {
  return { name: set.name, counters: set.counters };
}
