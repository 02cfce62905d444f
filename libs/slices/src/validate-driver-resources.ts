import { DRIVER_NAME_MAX_LENGTH, driverNameProblem } from '@slicekeeper/contracts';
import type { CounterSet, Device, Pool } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, required, tooLong, tooMany } from './field-error';
import { maxDevicesPerSlice } from './device-limits';
import { dns1123SubdomainProblems } from '@slicekeeper/contracts';
import { MAX_COUNTER_SETS_PER_SLICE, MAX_POOL_NAME_LENGTH } from './resource-slice';
import { validateCounterSet, validateDevice } from './validate-device';
import type { DeviceContext } from './validate-device';
import { validateNodeSelector } from './validate-node-selector';
import { validatePoolPassThrough } from './validate-pass-through';

export interface ValidateDriverResourcesOptions {
  /**
   * The key's node, `''` for the cluster-scoped key. When given, every pool's scope must fit
   * the key: the syncer finds a key's slices by `spec.nodeName`, so a cluster-scoped pool under
   * a node (or a node-local one under the cluster key) would be recreated on every sync.
   * @defaultValue undefined (scopes are not checked against a key)
   */
  node?: string;
}

const SCOPE_KINDS = ['all-nodes', 'node', 'node-selector', 'per-device'];

/**
 * Every problem with a driver's inventory that would make the API server reject a slice, or
 * make the scheduler unable to use a pool, with Kubernetes-style paths into `pools`
 * (`pools[0].devices[3].name: Invalid value: ...`). Empty when the inventory can be published.
 *
 * Besides the API server's per-slice rules (resource.k8s.io/v1 validation: names, 32 attributes
 * and capacities, 48 attribute values, 64-byte values, semver, quantities, 16 taints, counter
 * limits, one node selection per slice or, in a `per-device` pool, per device, capacity request
 * policies, binding conditions, 128 or 64 devices per slice) and the bounds of the `passThrough`
 * escape hatch, it checks what the API server cannot see because it looks at one slice at a time,
 * as upstream's `validateDriverResources` does: device names and counter set names unique in
 * the whole pool (one duplicate makes the scheduler drop the pool) and every consumed counter
 * defined by the pool. Invalid input is a terminal error: see {@link toTerminalError}.
 */
export function validateDriverResources(
  driver: string,
  pools: readonly Pool[],
  options: ValidateDriverResourcesOptions = {},
): FieldError[] {
  const errors: FieldError[] = [];
  validateDriverName(driver, 'driver', errors);
  const poolNames = new Set<string>();
  for (let i = 0; i < pools.length; i++) {
    const pool = pools[i];
    if (pool === undefined) continue;
    const path = `pools[${i}]`;
    if (poolNames.has(pool.name)) {
      errors.push({ path: `${path}.name`, type: 'Duplicate value', value: pool.name, message: '' });
    }
    poolNames.add(pool.name);
    validatePool(pool, path, options.node, errors);
  }
  return errors;
}

/** Checks a driver name as the API server does for `spec.driver`, using the contracts rule. */
export function validateDriverName(driver: string, path: string, errors: FieldError[]): void {
  const problem = driverNameProblem(driver);
  if (problem === undefined) return;
  if (driver === '') errors.push(required(path));
  else if (driver.length > DRIVER_NAME_MAX_LENGTH)
    errors.push(tooLong(path, DRIVER_NAME_MAX_LENGTH));
  else errors.push(invalid(path, driver, problem));
}

/** A pool name: at most 253 characters of DNS subdomains joined by `/`. */
export function validatePoolName(name: string, path: string, errors: FieldError[]): void {
  if (name === '') {
    errors.push(required(path));
    return;
  }
  if (name.length > MAX_POOL_NAME_LENGTH) errors.push(tooLong(path, MAX_POOL_NAME_LENGTH));
  for (const part of name.split('/')) {
    for (const problem of dns1123SubdomainProblems(part)) errors.push(invalid(path, part, problem));
  }
}

function validatePool(
  pool: Pool,
  path: string,
  node: string | undefined,
  errors: FieldError[],
): void {
  validatePoolName(pool.name, `${path}.name`, errors);
  if (pool.generation !== undefined) {
    if (pool.generation < 0) {
      errors.push(
        invalid(`${path}.generation`, pool.generation, 'must be greater than or equal to zero'),
      );
    } else if (!Number.isSafeInteger(pool.generation)) {
      errors.push(invalid(`${path}.generation`, pool.generation, 'must be a safe integer'));
    }
  }
  validateScope(pool, `${path}.scope`, node, errors);
  if (pool.passThrough !== undefined) {
    validatePoolPassThrough(pool.passThrough, `${path}.passThrough`, errors);
  }

  const context: DeviceContext = {
    perDeviceNodeSelection: pool.scope.kind === 'per-device',
    validNames: new Set(),
  };
  const seen: PoolNames = { devices: new Set(), counterSets: new Map() };
  if (pool.slices === undefined) {
    visitDevices(pool.devices, `${path}.devices`, context, seen, errors);
    visitCounterSets(pool.sharedCounters ?? [], `${path}.sharedCounters`, seen, errors);
  } else {
    if (pool.devices.length > 0) {
      errors.push({
        path: `${path}.devices`,
        type: 'Forbidden',
        message: 'must be empty when `slices` lays out the pool',
      });
    }
    if (pool.sharedCounters !== undefined && pool.sharedCounters.length > 0) {
      errors.push({
        path: `${path}.sharedCounters`,
        type: 'Forbidden',
        message:
          'must be empty when `slices` lays out the pool; give counter sets a slice of their own',
      });
    }
    for (let j = 0; j < pool.slices.length; j++) {
      const slice = pool.slices[j];
      if (slice === undefined) continue;
      const slicePath = `${path}.slices[${j}]`;
      const sets = slice.sharedCounters ?? [];
      if (sets.length > 0 && slice.devices.length > 0) {
        errors.push(invalid(slicePath, '', 'only one of `sharedCounters` or `devices` is allowed'));
      }
      const maxDevices = maxDevicesPerSlice(slice.devices);
      if (slice.devices.length > maxDevices) {
        // Over the limit, the API server does not look at the items (DoS protection).
        errors.push(tooMany(`${slicePath}.devices`, slice.devices.length, maxDevices));
      } else {
        visitDevices(slice.devices, `${slicePath}.devices`, context, seen, errors);
      }
      if (sets.length > MAX_COUNTER_SETS_PER_SLICE) {
        errors.push(
          tooMany(`${slicePath}.sharedCounters`, sets.length, MAX_COUNTER_SETS_PER_SLICE),
        );
      } else {
        visitCounterSets(sets, `${slicePath}.sharedCounters`, seen, errors);
      }
    }
  }

  validateCounterReferences(pool, path, seen.counterSets, errors);
}

/** Names already used in the pool being validated. */
interface PoolNames {
  readonly devices: Set<string>;
  readonly counterSets: Map<string, CounterSet>;
}

function visitDevices(
  devices: readonly Device[],
  devicesPath: string,
  context: DeviceContext,
  seen: PoolNames,
  errors: FieldError[],
): void {
  for (let k = 0; k < devices.length; k++) {
    const device = devices[k];
    if (device === undefined) continue;
    const devicePath = `${devicesPath}[${k}]`;
    validateDevice(device, devicePath, errors, context);
    if (seen.devices.has(device.name)) {
      // The API server only checks names within a slice; the scheduler drops a whole pool
      // with a duplicate (upstream's validatePool: "found duplicate device").
      errors.push({
        path: `${devicePath}.name`,
        type: 'Duplicate value',
        value: device.name,
        message: '',
      });
    }
    seen.devices.add(device.name);
  }
}

function visitCounterSets(
  sets: readonly CounterSet[],
  setsPath: string,
  seen: PoolNames,
  errors: FieldError[],
): void {
  for (let k = 0; k < sets.length; k++) {
    const counterSet = sets[k];
    if (counterSet === undefined) continue;
    const setPath = `${setsPath}[${k}]`;
    validateCounterSet(counterSet, setPath, errors);
    if (seen.counterSets.has(counterSet.name)) {
      errors.push({
        path: `${setPath}.name`,
        type: 'Duplicate value',
        value: counterSet.name,
        message: '',
      });
    } else {
      seen.counterSets.set(counterSet.name, counterSet);
    }
  }
}

function validateScope(
  pool: Pool,
  path: string,
  node: string | undefined,
  errors: FieldError[],
): void {
  const scope = pool.scope;
  if (!SCOPE_KINDS.includes(scope.kind)) {
    errors.push({
      path: `${path}.kind`,
      type: 'Unsupported value',
      value: scope.kind,
      message: `supported values: ${SCOPE_KINDS.map((kind) => `"${kind}"`).join(', ')}`,
    });
    return;
  }
  if (scope.kind === 'node-selector') {
    validateNodeSelector(scope.nodeSelector, `${path}.nodeSelector`, errors);
  }
  if (node === undefined) return;
  if (node === '' && scope.kind === 'node') {
    errors.push(
      invalid(
        `${path}.kind`,
        scope.kind,
        'a node-local pool needs a node, and this key is cluster-scoped (empty node name)',
      ),
    );
  } else if (node !== '' && scope.kind !== 'node') {
    errors.push(
      invalid(
        `${path}.kind`,
        scope.kind,
        `a cluster-scoped pool belongs to the cluster-scoped key (empty node name), not to node "${node}"`,
      ),
    );
  }
}

/**
 * Every counter a device consumes must exist in a counter set of the same pool (upstream's
 * `validatePool`); otherwise the scheduler cannot allocate from the pool.
 */
function validateCounterReferences(
  pool: Pool,
  path: string,
  counterSets: ReadonlyMap<string, CounterSet>,
  errors: FieldError[],
): void {
  if (pool.slices === undefined) {
    checkCounterReferences(pool.devices, `${path}.devices`, counterSets, errors);
  } else {
    for (let j = 0; j < pool.slices.length; j++) {
      const slice = pool.slices[j];
      if (slice === undefined) continue;
      checkCounterReferences(slice.devices, `${path}.slices[${j}].devices`, counterSets, errors);
    }
  }
}

function checkCounterReferences(
  devices: readonly Device[],
  devicesPath: string,
  counterSets: ReadonlyMap<string, CounterSet>,
  errors: FieldError[],
): void {
  for (let k = 0; k < devices.length; k++) {
    const consumption = devices[k]?.consumesCounters;
    if (consumption === undefined) continue;
    for (let c = 0; c < consumption.length; c++) {
      const entry = consumption[c];
      if (entry === undefined || entry.counterSet === '') continue;
      const entryPath = `${devicesPath}[${k}].consumesCounters[${c}]`;
      const counterSet = counterSets.get(entry.counterSet);
      if (counterSet === undefined) {
        errors.push({
          path: `${entryPath}.counterSet`,
          type: 'Not found',
          value: entry.counterSet,
          message: 'no counter set of this name in the pool',
        });
        continue;
      }
      for (const counter in entry.counters) {
        if (!Object.hasOwn(counterSet.counters, counter)) {
          errors.push({
            path: `${entryPath}.counters`,
            type: 'Not found',
            value: counter,
            message: `no counter of this name in counter set "${counterSet.name}"`,
          });
        }
      }
    }
  }
}
