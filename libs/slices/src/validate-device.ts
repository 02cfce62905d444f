import {
  C_IDENTIFIER_MESSAGE,
  DNS1123_LABEL_MAX_LENGTH,
  DRIVER_NAME_MAX_LENGTH,
  dns1123LabelProblems,
  driverNameProblem,
  isCIdentifier,
  labelValueProblems,
  nodeNameProblem,
  qualifiedNameProblems,
} from '@slicekeeper/contracts';
import type {
  CounterSet,
  Device,
  DeviceCounterConsumption,
  DeviceTaint,
} from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, keyPath, required, tooLong, tooMany } from './field-error';
import { isQuantity, QUANTITY_FORMAT_MESSAGE, quantityProblem, readQuantity } from './quantity';
import {
  MAX_ATTRIBUTE_ID_LENGTH,
  MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
  MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
  MAX_COUNTERS_PER_COUNTER_CONSUMPTION,
  MAX_COUNTERS_PER_COUNTER_SET,
  MAX_TAINTS_PER_DEVICE,
} from './resource-slice';
import { parseRfc3339 } from './parse-rfc3339';
import {
  ATTRIBUTE_KEY_PATH_LENGTH,
  attributeValueCount,
  validateAttribute,
  validateAttributeValueCount,
} from './validate-attribute';
import { validateBindingConditions } from './validate-binding-conditions';
import { validateNodeSelector } from './validate-node-selector';
import { validateDevicePassThrough } from './validate-pass-through';
import { validateCapacityRequestPolicy } from './validate-request-policy';

/**
 * The per-object checks of the API server's ResourceSlice validation
 * (pkg/apis/resource/validation/validation.go), shared by the driver-data validator (paths into
 * the driver's pools) and the ResourceSlice validator (paths into `spec`). Each function appends
 * to `errors` and builds a child path only when it reports something, so that validating a
 * valid pool allocates almost nothing.
 */

/** Taint effects of resource.k8s.io/v1, sorted as the API server lists them. */
export const DEVICE_TAINT_EFFECTS = ['NoExecute', 'NoSchedule', 'None'] as const;

/** Counter names are DNS labels. */
const COUNTER_KEY_PATH_LENGTH = DNS1123_LABEL_MAX_LENGTH;

/** What the device's slice or pool decides for it. */
export interface DeviceContext {
  /**
   * The slice sets `perDeviceNodeSelection` (a pool of scope `per-device`): the device must
   * name its own nodes; otherwise it must not.
   */
  readonly perDeviceNodeSelection: boolean;
  /**
   * Attribute and capacity names already found valid on another device of the same pool or
   * slice, which are not checked again: a driver's devices share a handful of names, and
   * checking each on every device was almost half of the validation in
   * `npm run bench:planner` (per 8-device key 9 → 5 µs, per 4096 devices 4.6 → 1.9 ms). Only
   * valid names are kept, so an invalid one is reported on every device that has it. One set
   * per pool or slice, made by the caller.
   * @defaultValue undefined (every name is checked)
   */
  readonly validNames?: Set<string>;
}

const NOT_PER_DEVICE: DeviceContext = { perDeviceNodeSelection: false };

/**
 * Checks one device as upstream's `validateDevice`: name, attributes, capacity and its request
 * policy, taints, counter consumption, its own node selection, binding conditions; then the
 * escape hatch, which upstream does not have.
 */
export function validateDevice(
  device: Device,
  path: string,
  errors: FieldError[],
  context: DeviceContext = NOT_PER_DEVICE,
): void {
  for (const problem of dns1123LabelProblems(device.name)) {
    errors.push(invalid(`${path}.name`, device.name, problem));
  }

  let entries = 0;
  let attributeValues = 0;
  const attributes = device.attributes;
  const capacity = device.capacity;
  if (attributes !== undefined) {
    for (const name in attributes) {
      entries++;
      const attribute = attributes[name];
      if (attribute === undefined) continue;
      attributeValues += attributeValueCount(attribute);
      checkName(name, path, 'attributes', context.validNames, errors);
      validateAttribute(attribute, name, path, errors);
    }
  }
  if (capacity !== undefined) {
    for (const name in capacity) {
      entries++;
      const value = capacity[name];
      if (value === undefined) continue;
      checkName(name, path, 'capacity', context.validNames, errors);
      const policy = value.requestPolicy;
      if (policy === undefined) {
        // The usual case: the syntax alone decides, and no value is built.
        const problem = quantityProblem(value.value);
        if (problem !== undefined) {
          errors.push(invalid(`${capacityPath(path, name)}.value`, value.value, problem));
        }
        continue;
      }
      const reading = readQuantity(value.value);
      const entryPath = capacityPath(path, name);
      if (reading.problem !== undefined) {
        errors.push(invalid(`${entryPath}.value`, value.value, reading.problem));
      }
      validateCapacityRequestPolicy(
        policy,
        { text: value.value, quantity: reading.quantity },
        device.allowMultipleAllocations === true,
        `${entryPath}.requestPolicy`,
        errors,
      );
    }
  }
  if (entries > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE) {
    errors.push(
      invalid(
        path,
        entries,
        `the total number of attributes and capacities must not exceed ${MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}`,
      ),
    );
  }
  validateAttributeValueCount(attributeValues, path, errors);

  const taints = device.taints;
  if (taints !== undefined && taints.length > 0) {
    if (taints.length > MAX_TAINTS_PER_DEVICE) {
      // Like the API server, a list over its limit is not looked into (DoS protection).
      errors.push(tooMany(`${path}.taints`, taints.length, MAX_TAINTS_PER_DEVICE));
    } else {
      for (let i = 0; i < taints.length; i++) {
        const taint = taints[i];
        if (taint !== undefined) validateTaint(taint, `${path}.taints[${i}]`, errors);
      }
    }
  }

  const consumption = device.consumesCounters;
  if (consumption !== undefined && consumption.length > 0) {
    validateCounterConsumption(consumption, `${path}.consumesCounters`, errors);
  }

  validateDeviceNodeSelection(device, path, context.perDeviceNodeSelection, errors);
  validateBindingConditions(device, path, errors);
  if (device.passThrough !== undefined) {
    validateDevicePassThrough(device.passThrough, `${path}.passThrough`, errors);
  }
}

function capacityPath(devicePath: string, name: string): string {
  return keyPath(`${devicePath}.capacity`, name, ATTRIBUTE_KEY_PATH_LENGTH);
}

const DEVICE_NODE_SELECTION_MESSAGE =
  'exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec';

/**
 * Per-device node selection (gate DRAPartitionableDevices), as upstream's `validateDevice`:
 * with `perDeviceNodeSelection` exactly one of `nodeName`, `nodeSelector`, `allNodes` (true);
 * without it, none of them.
 */
function validateDeviceNodeSelection(
  device: Device,
  path: string,
  perDeviceNodeSelection: boolean,
  errors: FieldError[],
): void {
  const { nodeName, nodeSelector, allNodes } = device;
  if (!perDeviceNodeSelection) {
    if (nodeName !== undefined || nodeSelector !== undefined || allNodes !== undefined) {
      errors.push(
        invalid(
          path,
          null,
          '`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec',
        ),
      );
    }
    return;
  }
  // The fields set, as the message lists them; a string, so that the usual single field
  // allocates nothing.
  let selections = 0;
  let selected = '';
  if (nodeName !== undefined) {
    if (nodeName === '') {
      errors.push(invalid(`${path}.nodeName`, '', 'must not be empty'));
    } else {
      selections++;
      selected = listed(selected, '`nodeName`');
      const problem = nodeNameProblem(nodeName);
      if (problem !== undefined) errors.push(invalid(`${path}.nodeName`, nodeName, problem));
    }
  }
  if (nodeSelector !== undefined) {
    selections++;
    selected = listed(selected, '`nodeSelector`');
    validateNodeSelector(nodeSelector, `${path}.nodeSelector`, errors);
  }
  if (allNodes !== undefined) {
    if (allNodes) {
      selections++;
      selected = listed(selected, '`allNodes`');
    } else {
      errors.push(invalid(`${path}.allNodes`, false, 'must be either unset or set to true'));
    }
  }
  if (selections === 0) {
    errors.push(required(path, DEVICE_NODE_SELECTION_MESSAGE));
  } else if (selections > 1) {
    errors.push(invalid(path, `{${selected}}`, DEVICE_NODE_SELECTION_MESSAGE));
  }
}

/** `list` with `item` appended, comma-separated. */
function listed(list: string, item: string): string {
  return list === '' ? item : `${list}, ${item}`;
}

/** Checks one counter set (`sharedCounters[i]`). */
export function validateCounterSet(
  counterSet: CounterSet,
  path: string,
  errors: FieldError[],
): void {
  if (counterSet.name === '') {
    errors.push(required(`${path}.name`));
  } else {
    for (const problem of dns1123LabelProblems(counterSet.name)) {
      errors.push(invalid(`${path}.name`, counterSet.name, problem));
    }
  }
  validateCounters(counterSet.counters, MAX_COUNTERS_PER_COUNTER_SET, `${path}.counters`, errors);
}

/** {@link validateQualifiedName}, skipped for a name in `validNames` and remembered there. */
function checkName(
  name: string,
  devicePath: string,
  field: 'attributes' | 'capacity',
  validNames: Set<string> | undefined,
  errors: FieldError[],
): void {
  if (validNames === undefined) {
    validateQualifiedName(name, devicePath, field, errors);
    return;
  }
  if (validNames.has(name)) return;
  const before = errors.length;
  validateQualifiedName(name, devicePath, field, errors);
  if (errors.length === before) validNames.add(name);
}

/**
 * Checks an attribute or capacity name: a C identifier of at most 32 characters, optionally
 * qualified with a domain (`<domain>/<id>`) that is a valid driver name. The API server reports
 * these on the map's path (`devices[0].attributes`), not the key's.
 */
function validateQualifiedName(
  name: string,
  devicePath: string,
  field: 'attributes' | 'capacity',
  errors: FieldError[],
): void {
  const slash = name.indexOf('/');
  if (slash < 0) {
    if (name.length <= MAX_ATTRIBUTE_ID_LENGTH && isCIdentifier(name)) return; // the usual case
    validateCIdentifier(name, `${devicePath}.${field}`, errors);
    return;
  }
  const mapPath = `${devicePath}.${field}`;
  if (name.indexOf('/', slash + 1) >= 0) {
    errors.push(invalid(mapPath, name, 'must not contain more than one slash'));
    return;
  }
  const domain = name.slice(0, slash);
  const id = name.slice(slash + 1);
  if (domain === '') {
    errors.push(invalid(mapPath, '', 'the domain must not be empty'));
  } else {
    const problem = driverNameProblem(domain);
    if (problem !== undefined) {
      if (domain.length > DRIVER_NAME_MAX_LENGTH) {
        errors.push(tooLong(mapPath, DRIVER_NAME_MAX_LENGTH));
      } else {
        errors.push(invalid(mapPath, domain, problem));
      }
    }
  }
  if (id === '') {
    errors.push(invalid(mapPath, '', 'the name must not be empty'));
  } else {
    validateCIdentifier(id, mapPath, errors);
  }
}

function validateCIdentifier(id: string, path: string, errors: FieldError[]): void {
  if (id.length > MAX_ATTRIBUTE_ID_LENGTH) errors.push(tooLong(path, MAX_ATTRIBUTE_ID_LENGTH));
  if (!isCIdentifier(id)) errors.push(invalid(path, id, C_IDENTIFIER_MESSAGE));
}

function validateTaint(taint: DeviceTaint, path: string, errors: FieldError[]): void {
  for (const problem of qualifiedNameProblems(taint.key)) {
    errors.push(invalid(`${path}.key`, taint.key, problem));
  }
  if (taint.value !== undefined && taint.value !== '') {
    for (const problem of labelValueProblems(taint.value)) {
      errors.push(invalid(`${path}.value`, taint.value, problem));
    }
  }
  if (taint.effect === '') {
    errors.push(required(`${path}.effect`));
  } else if (!(DEVICE_TAINT_EFFECTS as readonly string[]).includes(taint.effect)) {
    errors.push({
      path: `${path}.effect`,
      type: 'Unsupported value',
      value: taint.effect,
      message: `supported values: ${DEVICE_TAINT_EFFECTS.map((effect) => `"${effect}"`).join(', ')}`,
    });
  }
  if (taint.timeAdded !== undefined && parseRfc3339(taint.timeAdded) === undefined) {
    errors.push(invalid(`${path}.timeAdded`, taint.timeAdded, 'must be an RFC 3339 time'));
  }
}

function validateCounterConsumption(
  consumption: readonly DeviceCounterConsumption[],
  path: string,
  errors: FieldError[],
): void {
  if (consumption.length > MAX_COUNTER_CONSUMPTIONS_PER_DEVICE) {
    errors.push(tooMany(path, consumption.length, MAX_COUNTER_CONSUMPTIONS_PER_DEVICE));
    return;
  }
  for (let i = 0; i < consumption.length; i++) {
    const entry = consumption[i];
    if (entry === undefined) continue;
    const entryPath = `${path}[${i}]`;
    if (entry.counterSet === '') {
      errors.push(required(`${entryPath}.counterSet`));
    } else {
      for (const problem of dns1123LabelProblems(entry.counterSet)) {
        errors.push(invalid(`${entryPath}.counterSet`, entry.counterSet, problem));
      }
    }
    validateCounters(
      entry.counters,
      MAX_COUNTERS_PER_COUNTER_CONSUMPTION,
      `${entryPath}.counters`,
      errors,
    );
    for (let j = 0; j < i; j++) {
      if (consumption[j]?.counterSet === entry.counterSet) {
        errors.push({
          path: entryPath,
          type: 'Duplicate value',
          value: entry.counterSet,
          message: '',
        });
        break;
      }
    }
  }
}

function validateCounters(
  counters: Readonly<Record<string, { value: string }>>,
  max: number,
  path: string,
  errors: FieldError[],
): void {
  let count = 0;
  for (const name in counters) {
    if (counters[name] !== undefined) count++;
  }
  if (count === 0) {
    errors.push(required(path));
    return;
  }
  if (count > max) {
    errors.push(tooMany(path, count, max));
    return;
  }
  for (const name in counters) {
    const counter = counters[name];
    if (counter === undefined) continue;
    for (const problem of dns1123LabelProblems(name)) errors.push(invalid(path, name, problem));
    if (!isQuantity(counter.value)) {
      errors.push(
        invalid(
          `${keyPath(path, name, COUNTER_KEY_PATH_LENGTH)}.value`,
          counter.value,
          QUANTITY_FORMAT_MESSAGE,
        ),
      );
    }
  }
}
