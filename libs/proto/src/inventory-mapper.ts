import type { CounterSet, DriverInventory, Pool, PoolScope } from '@slicekeeper/contracts';
import { TerminalError, listProblems } from '@slicekeeper/errors';
import { fromDevice, toCounters, toDevices } from './device-mapper';
import { toExactNumber } from './exact-number';
import type * as wire from './generated/slicekeeper/v1/resources';
import { fromNodeSelector, toNodeSelector } from './node-selector-mapper';
import { fromPassThrough, toPassThrough } from './pass-through-mapper';

export interface ToInventoryOptions {
  /** The plugin's node: the name of a pool whose name is empty. Empty for a cluster-scoped key. */
  nodeName: string;
}

/**
 * What {@link mapDriverResources} made of a message: the inventory, or why slicekeeper cannot
 * use it at all (`problem` names every field and rule, bounded by `listProblems`).
 * `traceparent` is the message's `traceparent` as the driver sent it, unchecked (the watcher
 * validates it where it traces); absent when the message has none.
 */
export type InventoryMapping =
  | { kind: 'inventory'; inventory: DriverInventory; traceparent?: string }
  | { kind: 'rejected'; problem: string; traceparent?: string };

/**
 * Maps a decoded `DriverResources` message to the domain inventory, and never throws.
 *
 * Structure only: a value that breaks a Kubernetes rule (an attribute without a value, a bad
 * name, a negative generation, a request policy on a device that does not allow multiple
 * allocations) is carried over as it is, so that the validator can name the field and the
 * rule. What the domain model cannot hold is rejected here instead, as silently changing it
 * would publish something the driver did not say: an int64 (attribute, list attribute element
 * or pool generation) beyond ±(2^53−1), which a JavaScript number does not hold exactly, a
 * taint time beyond the range of a JavaScript date, and pass-through text
 * (`pass_through_json`) that is not a JSON object or holds such an integer.
 *
 * Device health is checked here in full, as the domain model cannot carry a broken one: a
 * status that is not a HealthStatus, a message over `MAX_HEALTH_MESSAGE_LENGTH`
 * characters, a timeout that is negative, not a valid Duration or over
 * `MAX_HEALTH_TIMEOUT_SECONDS`. A timeout becomes whole seconds, rounded up (zero: none);
 * a health of status UNSPECIFIED is no health at all.
 */
export function mapDriverResources(
  message: wire.DriverResources,
  { nodeName }: ToInventoryOptions,
): InventoryMapping {
  const problems: string[] = [];
  const pools = message.pools.map((pool, i): Pool => {
    const path = `pools[${i}]`;
    const mapped: Pool = {
      name: pool.name === '' ? nodeName : pool.name,
      scope: toScope(pool.nodeScope),
      devices: toDevices(pool.devices, `${path}.devices`, problems),
    };
    if (pool.generation !== undefined) {
      mapped.generation = toExactNumber(pool.generation, () => `${path}.generation`, problems);
    }
    if (pool.slices.length > 0) {
      mapped.slices = pool.slices.map((slice, j) => {
        const devices = toDevices(slice.devices, `${path}.slices[${j}].devices`, problems);
        return slice.sharedCounters.length > 0
          ? { devices, sharedCounters: slice.sharedCounters.map(toCounterSet) }
          : { devices };
      });
    }
    if (pool.sharedCounters.length > 0) {
      mapped.sharedCounters = pool.sharedCounters.map(toCounterSet);
    }
    const passThrough = toPassThrough(pool.passThroughJson, () => `${path}.passThrough`, problems);
    if (passThrough !== undefined) mapped.passThrough = passThrough;
    return mapped;
  });
  const { traceparent } = message;
  if (problems.length > 0) {
    const problem = listProblems(problems);
    return traceparent === ''
      ? { kind: 'rejected', problem }
      : { kind: 'rejected', problem, traceparent };
  }
  const inventory = { pools };
  return traceparent === ''
    ? { kind: 'inventory', inventory }
    : { kind: 'inventory', inventory, traceparent };
}

/**
 * {@link mapDriverResources} for a message the caller built itself (tests, benchmarks, round
 * trips of a domain inventory), where a rejection is a bug.
 * @throws {TerminalError} (code `rejected`) with the problem, for a message that is rejected.
 */
export function toDriverInventory(
  message: wire.DriverResources,
  options: ToInventoryOptions,
): DriverInventory {
  const mapping = mapDriverResources(message, options);
  if (mapping.kind === 'rejected') throw new TerminalError(mapping.problem, { code: 'rejected' });
  return mapping.inventory;
}

/** A oneof member set to false (all_nodes, per_device_node_selection) means node-local. */
function toScope(scope: wire.Pool['nodeScope']): PoolScope {
  switch (scope?.$case) {
    case undefined:
      return { kind: 'node' };
    case 'allNodes':
      return scope.value ? { kind: 'all-nodes' } : { kind: 'node' };
    case 'perDeviceNodeSelection':
      return scope.value ? { kind: 'per-device' } : { kind: 'node' };
    case 'nodeSelector':
      return { kind: 'node-selector', nodeSelector: toNodeSelector(scope.value) };
  }
}

function toCounterSet(set: wire.CounterSet): CounterSet {
  return { name: set.name, counters: toCounters(set.counters) };
}

/**
 * Maps a domain inventory back to a `DriverResources` message: what a driver written against the
 * domain model (the example driver) sends. `toDriverInventory(fromDriverInventory(x))` is `x`
 * for pools with non-empty names and without empty lists where the domain model allows
 * omitting them (binding conditions, valid values: proto3 sends an empty list as none).
 * `traceparent` is the W3C trace context of the driver's span that produced it; none by default.
 * @throws {RangeError} for a generation or int attribute that is not an integer (the domain
 * schemas allow none).
 */
export function fromDriverInventory(
  inventory: DriverInventory,
  traceparent = '',
): wire.DriverResources {
  return {
    traceparent,
    pools: inventory.pools.map((pool) => ({
      name: pool.name,
      generation: pool.generation === undefined ? undefined : BigInt(pool.generation),
      nodeScope: fromScope(pool.scope),
      devices: pool.devices.map(fromDevice),
      slices: (pool.slices ?? []).map((slice) => ({
        devices: slice.devices.map(fromDevice),
        sharedCounters: (slice.sharedCounters ?? []).map(fromCounterSet),
      })),
      sharedCounters: (pool.sharedCounters ?? []).map(fromCounterSet),
      passThroughJson: fromPassThrough(pool.passThrough),
    })),
  };
}

function fromScope(scope: PoolScope): wire.Pool['nodeScope'] {
  switch (scope.kind) {
    case 'node':
      return undefined;
    case 'all-nodes':
      return { $case: 'allNodes', value: true };
    case 'per-device':
      return { $case: 'perDeviceNodeSelection', value: true };
    case 'node-selector':
      return { $case: 'nodeSelector', value: fromNodeSelector(scope.nodeSelector) };
  }
}

function fromCounterSet(set: CounterSet): wire.CounterSet {
  return { name: set.name, counters: set.counters };
}
