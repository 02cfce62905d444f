import { nodeNameProblem } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, required, tooMany } from './field-error';
import { maxDevicesPerSlice } from './device-limits';
import {
  dns1123SubdomainProblems,
  labelValueProblems,
  qualifiedNameProblems,
} from '@slicekeeper/contracts';
import type { ResourceSlice } from './resource-slice';
import { MAX_COUNTER_SETS_PER_SLICE } from './resource-slice';
import { validateDriverName, validatePoolName } from './validate-driver-resources';
import { validateCounterSet, validateDevice } from './validate-device';
import type { DeviceContext } from './validate-device';
import { validateNodeSelector } from './validate-node-selector';

/**
 * What the API server would reject in `slice` on create or update (resource.k8s.io/v1
 * `ValidateResourceSlice`, for the fields slicekeeper models), with paths from the object root
 * (`spec.devices[3].name`). The planner never needs it for its own output, which is valid by
 * construction once the driver data passed {@link validateDriverResources}; it is the oracle of
 * the planner's property tests and the check a fake API server can apply.
 */
export function validateResourceSlice(slice: ResourceSlice): FieldError[] {
  const errors: FieldError[] = [];
  validateMetadata(slice, errors);

  const spec = slice.spec;
  validateDriverName(spec.driver, 'spec.driver', errors);
  validatePoolName(spec.pool.name, 'spec.pool.name', errors);
  if (!(spec.pool.resourceSliceCount > 0)) {
    errors.push(
      invalid(
        'spec.pool.resourceSliceCount',
        spec.pool.resourceSliceCount,
        'must be greater than zero',
      ),
    );
  }
  if (spec.pool.generation < 0) {
    errors.push(
      invalid(
        'spec.pool.generation',
        spec.pool.generation,
        'must be greater than or equal to zero',
      ),
    );
  }

  const selections: string[] = [];
  if (spec.nodeName !== undefined) {
    if (spec.nodeName === '') {
      errors.push(
        invalid('spec.nodeName', '', 'must be either unset or set to a non-empty string'),
      );
    } else {
      selections.push('`nodeName`');
      const problem = nodeNameProblem(spec.nodeName);
      if (problem !== undefined) errors.push(invalid('spec.nodeName', spec.nodeName, problem));
    }
  }
  if (spec.nodeSelector !== undefined) {
    selections.push('`nodeSelector`');
    validateNodeSelector(spec.nodeSelector, 'spec.nodeSelector', errors);
  }
  if (spec.allNodes !== undefined) {
    if (spec.allNodes) selections.push('`allNodes`');
    else errors.push(invalid('spec.allNodes', false, 'must be either unset or set to true'));
  }
  if (spec.perDeviceNodeSelection !== undefined) {
    if (spec.perDeviceNodeSelection) selections.push('`perDeviceNodeSelection`');
    else
      errors.push(
        invalid('spec.perDeviceNodeSelection', false, 'must be either unset or set to true'),
      );
  }
  const oneOf =
    'exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required';
  if (selections.length === 0) errors.push(required('spec', oneOf));
  if (selections.length > 1) {
    errors.push(
      invalid('spec', `{${selections.join(', ')}}`, `${oneOf}, but multiple fields are set`),
    );
  }

  if (spec.sharedCounters !== undefined && spec.devices !== undefined) {
    errors.push(invalid('spec', '', 'only one of `sharedCounters` or `devices` is allowed'));
  }
  const devices = spec.devices ?? [];
  const maxDevices = maxDevicesPerSlice(devices);
  if (devices.length > maxDevices) {
    errors.push(tooMany('spec.devices', devices.length, maxDevices));
  } else {
    const context: DeviceContext = {
      perDeviceNodeSelection: spec.perDeviceNodeSelection === true,
      validNames: new Set(),
    };
    const names = new Set<string>();
    for (let i = 0; i < devices.length; i++) {
      const device = devices[i];
      if (device === undefined) continue;
      validateDevice(device, `spec.devices[${i}]`, errors, context);
      if (names.has(device.name)) {
        errors.push({
          path: `spec.devices[${i}]`,
          type: 'Duplicate value',
          value: device.name,
          message: '',
        });
      }
      names.add(device.name);
    }
  }
  const counterSets = spec.sharedCounters ?? [];
  if (counterSets.length > MAX_COUNTER_SETS_PER_SLICE) {
    errors.push(tooMany('spec.sharedCounters', counterSets.length, MAX_COUNTER_SETS_PER_SLICE));
  } else {
    const names = new Set<string>();
    for (let i = 0; i < counterSets.length; i++) {
      const counterSet = counterSets[i];
      if (counterSet === undefined) continue;
      validateCounterSet(counterSet, `spec.sharedCounters[${i}]`, errors);
      if (names.has(counterSet.name)) {
        errors.push({
          path: `spec.sharedCounters[${i}]`,
          type: 'Duplicate value',
          value: counterSet.name,
          message: '',
        });
      }
      names.add(counterSet.name);
    }
  }
  return errors;
}

function validateMetadata(slice: ResourceSlice, errors: FieldError[]): void {
  const metadata = slice.metadata;
  const name = metadata.name ?? '';
  const generateName = metadata.generateName ?? '';
  if (name === '' && generateName === '') {
    errors.push(required('metadata.name', 'name or generateName is required'));
  }
  if (name !== '') {
    for (const problem of dns1123SubdomainProblems(name)) {
      errors.push(invalid('metadata.name', name, problem));
    }
  }
  if (generateName !== '') {
    // A prefix may end in '-' (`NameIsDNSSubdomain(name, prefix=true)` masks it).
    const masked = generateName.endsWith('-') ? `${generateName.slice(0, -1)}a` : generateName;
    for (const problem of dns1123SubdomainProblems(masked)) {
      errors.push(invalid('metadata.generateName', generateName, problem));
    }
  }
  for (const [key, value] of Object.entries(metadata.labels ?? {})) {
    for (const problem of qualifiedNameProblems(key)) {
      errors.push(invalid('metadata.labels', key, problem));
    }
    for (const problem of labelValueProblems(value)) {
      errors.push(invalid(`metadata.labels[${key}]`, value, problem));
    }
  }
  let controllers = 0;
  const references = metadata.ownerReferences ?? [];
  for (let i = 0; i < references.length; i++) {
    const reference = references[i];
    if (reference === undefined) continue;
    const path = `metadata.ownerReferences[${i}]`;
    if (reference.apiVersion === '')
      errors.push(invalid(`${path}.apiVersion`, '', 'version must not be empty'));
    if (reference.kind === '') errors.push(invalid(`${path}.kind`, '', 'kind must not be empty'));
    if (reference.name === '') errors.push(invalid(`${path}.name`, '', 'name must not be empty'));
    if (reference.uid === '') errors.push(invalid(`${path}.uid`, '', 'uid must not be empty'));
    if (reference.controller === true) controllers++;
  }
  if (controllers > 1) {
    errors.push(
      invalid(
        'metadata.ownerReferences',
        references,
        'Only one reference can have Controller set to true',
      ),
    );
  }
}
