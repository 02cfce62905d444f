import { MAX_HEALTH_MESSAGE_LENGTH, MAX_HEALTH_TIMEOUT_SECONDS } from '@slicekeeper/contracts';
import type {
  CounterSet,
  Device,
  DeviceAttribute,
  DeviceCounterConsumption,
  DeviceHealth,
  DeviceHealthStatus,
  DeviceTaint,
  DriverInventory,
  NodeSelector,
  Pool,
  PoolScope,
} from '@slicekeeper/contracts';
import { TerminalError, listProblems } from '@slicekeeper/errors';
import type { Duration } from './generated/google/protobuf/duration';
import type * as wire from './generated/slicekeeper/v1/resources';
import { HealthStatus } from './generated/slicekeeper/v1/resources';

export interface ToInventoryOptions {
  /** The plugin's node: the name of a pool whose name is empty. Empty for a cluster-scoped key. */
  nodeName: string;
}

/**
 * What {@link mapDriverResources} made of a message: the inventory, or why slicekeeper cannot
 * use it at all (`problem` names every field and rule, bounded by `listProblems`).
 */
export type InventoryMapping =
  | { kind: 'inventory'; inventory: DriverInventory }
  | { kind: 'rejected'; problem: string };

/** Largest int64 magnitude a JavaScript number (the domain model's integers) holds exactly. */
const MAX_EXACT_INTEGER = BigInt(Number.MAX_SAFE_INTEGER);

/** Largest magnitude of a Duration's nanos (protobuf's rule). */
const MAX_DURATION_NANOS = 999_999_999;

/** The domain status of each wire status; UNSPECIFIED means the driver reports no health. */
const HEALTH_STATUSES: ReadonlyMap<number, DeviceHealthStatus | 'unspecified'> = new Map([
  [HealthStatus.HEALTH_STATUS_UNSPECIFIED, 'unspecified'],
  [HealthStatus.HEALTH_STATUS_HEALTHY, 'healthy'],
  [HealthStatus.HEALTH_STATUS_UNHEALTHY, 'unhealthy'],
  [HealthStatus.HEALTH_STATUS_UNKNOWN, 'unknown'],
]);

const WIRE_HEALTH_STATUSES: Readonly<Record<DeviceHealthStatus, HealthStatus>> = {
  healthy: HealthStatus.HEALTH_STATUS_HEALTHY,
  unhealthy: HealthStatus.HEALTH_STATUS_UNHEALTHY,
  unknown: HealthStatus.HEALTH_STATUS_UNKNOWN,
};

/**
 * Maps a decoded `DriverResources` message to the domain inventory, and never throws.
 *
 * Structure only: a value that breaks a Kubernetes rule (an attribute without a value, a bad
 * name, a negative generation) is carried over as it is, so that the validator can name the
 * field and the rule. What the domain model cannot hold is rejected here instead, as silently
 * changing it would publish something the driver did not say: an int64 (attribute or pool
 * generation) beyond ±(2^53−1), which a JavaScript number does not hold exactly, and a taint
 * time beyond the range of a JavaScript date.
 *
 * Device health is checked here in full, as the domain model cannot carry a broken one: a
 * status that is not a HealthStatus, a message over {@link MAX_HEALTH_MESSAGE_LENGTH}
 * characters, a timeout that is negative, not a valid Duration or over
 * {@link MAX_HEALTH_TIMEOUT_SECONDS}. A timeout becomes whole seconds, rounded up (zero: none);
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
    return mapped;
  });
  if (problems.length > 0) return { kind: 'rejected', problem: listProblems(problems) };
  return { kind: 'inventory', inventory: { pools } };
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

/**
 * The int64 as a number, or 0 after recording why it cannot be one exactly. Shared with the
 * named-resources mapper (not exported from the package).
 */
export function toExactNumber(value: bigint, path: () => string, problems: string[]): number {
  if (value >= -MAX_EXACT_INTEGER && value <= MAX_EXACT_INTEGER) return Number(value);
  problems.push(
    `${path()}: ${value} is outside the range slicekeeper can publish exactly ` +
      `(±${Number.MAX_SAFE_INTEGER})`,
  );
  return 0;
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

/** `path` is that of the list; a device's own path is built only when it has a problem. */
function toDevices(devices: wire.Device[], path: string, problems: string[]): Device[] {
  return devices.map((device, k) => toDevice(device, () => `${path}[${k}]`, problems));
}

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
    mapped.capacity = Object.fromEntries(capacity.map(([name, c]) => [name, { value: c.value }]));
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
  return mapped;
}

/** The device's health; undefined for none (status UNSPECIFIED) or after recording problems. */
function toHealth(
  health: wire.DeviceHealth,
  path: () => string,
  problems: string[],
): DeviceHealth | undefined {
  const status = HEALTH_STATUSES.get(health.status);
  if (status === undefined) {
    const known = [...HEALTH_STATUSES.keys()].map((n) => HealthStatus[n]).join(', ');
    problems.push(`${path()}.status: must be one of ${known} (is ${health.status})`);
    return undefined;
  }
  if (status === 'unspecified') return undefined;
  const mapped: DeviceHealth = { status };
  const before = problems.length;
  if (health.message.length > MAX_HEALTH_MESSAGE_LENGTH) {
    problems.push(
      `${path()}.message: must be at most ${MAX_HEALTH_MESSAGE_LENGTH} characters ` +
        `(is ${health.message.length})`,
    );
  } else if (health.message !== '') {
    mapped.message = health.message;
  }
  if (health.timeout !== undefined) {
    const seconds = toTimeoutSeconds(health.timeout, () => `${path()}.timeout`, problems);
    if (seconds > 0) mapped.timeoutSeconds = seconds;
  }
  return problems.length === before ? mapped : undefined;
}

/** The timeout in whole seconds, rounded up; 0 for none or after recording why it is bad. */
function toTimeoutSeconds(timeout: Duration, path: () => string, problems: string[]): number {
  const { seconds, nanos } = timeout;
  if (nanos < -MAX_DURATION_NANOS || nanos > MAX_DURATION_NANOS) {
    problems.push(`${path()}.nanos: must be within ±${MAX_DURATION_NANOS} (is ${nanos})`);
    return 0;
  }
  if ((seconds > 0n && nanos < 0) || (seconds < 0n && nanos > 0)) {
    problems.push(
      `${path()}: seconds and nanos must have the same sign (is ${seconds}s and ${nanos}ns)`,
    );
    return 0;
  }
  if (seconds < 0n || nanos < 0) {
    problems.push(`${path()}: must not be negative (is ${formatDuration(timeout)})`);
    return 0;
  }
  const whole = seconds + (nanos > 0 ? 1n : 0n);
  if (whole > BigInt(MAX_HEALTH_TIMEOUT_SECONDS)) {
    problems.push(
      `${path()}: must be at most ${MAX_HEALTH_TIMEOUT_SECONDS}s (24h) ` +
        `(is ${formatDuration(timeout)})`,
    );
    return 0;
  }
  return Number(whole);
}

/** A valid Duration as protobuf's JSON form writes it: `1.5s`, `-0.000000001s`. */
function formatDuration({ seconds, nanos }: Duration): string {
  const sign = seconds < 0n || nanos < 0 ? '-' : '';
  const whole = seconds < 0n ? -seconds : seconds;
  const fraction = String(Math.abs(nanos)).padStart(9, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction === '' ? '' : `.${fraction}`}s`;
}

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
    case undefined:
      return {};
  }
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
 * @throws {RangeError} for a generation or int attribute that is not an integer (the domain
 * schemas allow none).
 */
export function fromDriverInventory(inventory: DriverInventory): wire.DriverResources {
  return {
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
    health: device.health === undefined ? undefined : fromHealth(device.health),
  };
}

function fromHealth(health: DeviceHealth): wire.DeviceHealth {
  return {
    status: WIRE_HEALTH_STATUSES[health.status],
    message: health.message ?? '',
    timeout:
      health.timeoutSeconds === undefined
        ? undefined
        : { seconds: BigInt(health.timeoutSeconds), nanos: 0 },
  };
}

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
  return { value: undefined };
}

function fromCounterSet(set: CounterSet): wire.CounterSet {
  return { name: set.name, counters: set.counters };
}
