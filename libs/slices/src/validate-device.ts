import {
  DNS1123_LABEL_MAX_LENGTH,
  DRIVER_NAME_MAX_LENGTH,
  driverNameProblem,
  nodeNameProblem,
} from '@slicekeeper/contracts';
import type {
  CounterSet,
  Device,
  DeviceAttribute,
  DeviceCounterConsumption,
  DeviceTaint,
  NodeSelector,
} from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, keyPath, required, tooLong, tooMany } from './field-error';
import {
  C_IDENTIFIER_MESSAGE,
  dns1123LabelProblems,
  isCIdentifier,
  labelValueProblems,
  qualifiedNameProblems,
  utf8ByteLength,
} from '@slicekeeper/contracts';
import { isQuantity, QUANTITY_FORMAT_MESSAGE } from './quantity';
import {
  MAX_ATTRIBUTE_DOMAIN_LENGTH,
  MAX_ATTRIBUTE_ID_LENGTH,
  MAX_ATTRIBUTE_VALUE_LENGTH,
  MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
  MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
  MAX_COUNTERS_PER_COUNTER_CONSUMPTION,
  MAX_COUNTERS_PER_COUNTER_SET,
  MAX_TAINTS_PER_DEVICE,
} from './resource-slice';
import { parseRfc3339 } from './parse-rfc3339';

/**
 * The per-object checks of the API server's ResourceSlice validation
 * (pkg/apis/resource/validation/validation.go), shared by the driver-data validator (paths into
 * the driver's pools) and the ResourceSlice validator (paths into `spec`). Each function appends
 * to `errors` and builds a child path only when it reports something, so that validating a
 * valid pool allocates almost nothing.
 */

/** Taint effects of resource.k8s.io/v1, sorted as the API server lists them. */
export const DEVICE_TAINT_EFFECTS = ['NoExecute', 'NoSchedule', 'None'] as const;

const SEMVER_NUMERIC = '(0|[1-9]\\d*)';
const SEMVER_PRERELEASE = '(0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)';
const SEMVER_BUILD = '[0-9a-zA-Z-]+';
/** Semantic Versioning 2.0.0, as the API server's `semverRe`. */
const SEMVER = new RegExp(
  `^${SEMVER_NUMERIC}\\.${SEMVER_NUMERIC}\\.${SEMVER_NUMERIC}` +
    `(-${SEMVER_PRERELEASE}(\\.${SEMVER_PRERELEASE})*)?` +
    `(\\+${SEMVER_BUILD}(\\.${SEMVER_BUILD})*)?$`,
);

/** Longest attribute or capacity key shown in a path before it is shortened with `...`. */
const ATTRIBUTE_KEY_PATH_LENGTH = MAX_ATTRIBUTE_DOMAIN_LENGTH + 1 + MAX_ATTRIBUTE_ID_LENGTH;
/** Counter names are DNS labels. */
const COUNTER_KEY_PATH_LENGTH = DNS1123_LABEL_MAX_LENGTH;

/** Checks one device: name, attributes, capacity, taints, counter consumption. */
export function validateDevice(device: Device, path: string, errors: FieldError[]): void {
  for (const problem of dns1123LabelProblems(device.name)) {
    errors.push(invalid(`${path}.name`, device.name, problem));
  }

  let entries = 0;
  const attributes = device.attributes;
  const capacity = device.capacity;
  if (attributes !== undefined) {
    for (const name in attributes) {
      entries++;
      const attribute = attributes[name];
      if (attribute === undefined) continue;
      validateQualifiedName(name, path, 'attributes', errors);
      validateAttribute(attribute, name, path, errors);
    }
  }
  if (capacity !== undefined) {
    for (const name in capacity) {
      entries++;
      const value = capacity[name];
      if (value === undefined) continue;
      validateQualifiedName(name, path, 'capacity', errors);
      if (!isQuantity(value.value)) {
        const capacityPath = keyPath(`${path}.capacity`, name, ATTRIBUTE_KEY_PATH_LENGTH);
        errors.push(invalid(`${capacityPath}.value`, value.value, QUANTITY_FORMAT_MESSAGE));
      }
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

/** Checks a node selector as `corevalidation.ValidateNodeSelector` plus the one-term rule. */
export function validateNodeSelector(
  nodeSelector: NodeSelector,
  path: string,
  errors: FieldError[],
): void {
  const termsPath = `${path}.nodeSelectorTerms`;
  const terms = nodeSelector.nodeSelectorTerms;
  if (terms.length === 0) {
    errors.push(required(termsPath, 'must have at least one node selector term'));
  }
  for (let i = 0; i < terms.length; i++) {
    const term = terms[i];
    if (term === undefined) continue;
    const termPath = `${termsPath}[${i}]`;
    const expressions = term.matchExpressions ?? [];
    for (let j = 0; j < expressions.length; j++) {
      const requirement = expressions[j];
      if (requirement === undefined) continue;
      validateLabelRequirement(requirement, `${termPath}.matchExpressions[${j}]`, errors);
    }
    const fields = term.matchFields ?? [];
    for (let j = 0; j < fields.length; j++) {
      const requirement = fields[j];
      if (requirement === undefined) continue;
      validateFieldRequirement(requirement, `${termPath}.matchFields[${j}]`, errors);
    }
  }
  if (terms.length !== 1) {
    // resource.k8s.io adds this to keep merging selectors of devices from several slices simple.
    errors.push(invalid(termsPath, terms, 'must have exactly one node selector term'));
  }
}

type NodeSelectorRequirement = NonNullable<
  NodeSelector['nodeSelectorTerms'][number]['matchExpressions']
>[number];

/** `corevalidation.ValidateNodeSelectorRequirement`: a node label expression. */
function validateLabelRequirement(
  requirement: NodeSelectorRequirement,
  path: string,
  errors: FieldError[],
): void {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) {
        errors.push(
          required(`${path}.values`, "must be specified when `operator` is 'In' or 'NotIn'"),
        );
      }
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0) {
        errors.push({
          path: `${path}.values`,
          type: 'Forbidden',
          message: "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        });
      }
      break;
    case 'Gt':
    case 'Lt':
      if (values.length !== 1) {
        errors.push(
          required(
            `${path}.values`,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
          ),
        );
      }
      break;
    default:
      errors.push(
        invalid(`${path}.operator`, requirement.operator, 'not a valid selector operator'),
      );
  }
  for (const problem of qualifiedNameProblems(requirement.key)) {
    errors.push(invalid(`${path}.key`, requirement.key, problem));
  }
  for (let k = 0; k < values.length; k++) {
    const value = values[k] ?? '';
    for (const problem of labelValueProblems(value)) {
      errors.push(invalid(`${path}.values[${k}]`, value, problem));
    }
  }
}

/** `corevalidation.ValidateNodeFieldSelectorRequirement`: only `metadata.name In/NotIn`. */
function validateFieldRequirement(
  requirement: NodeSelectorRequirement,
  path: string,
  errors: FieldError[],
): void {
  const values = requirement.values ?? [];
  if (requirement.operator === 'In' || requirement.operator === 'NotIn') {
    if (values.length !== 1) {
      errors.push(
        required(
          `${path}.values`,
          "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        ),
      );
    }
  } else {
    errors.push(invalid(`${path}.operator`, requirement.operator, 'not a valid selector operator'));
  }
  if (requirement.key !== 'metadata.name') {
    errors.push(invalid(`${path}.key`, requirement.key, 'not a valid field selector key'));
    return;
  }
  for (let k = 0; k < values.length; k++) {
    const value = values[k] ?? '';
    const problem = nodeNameProblem(value);
    if (problem !== undefined) errors.push(invalid(`${path}.values[${k}]`, value, problem));
  }
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

function validateAttribute(
  attribute: DeviceAttribute,
  name: string,
  devicePath: string,
  errors: FieldError[],
): void {
  let values = 0;
  if (attribute.int !== undefined) values++;
  if (attribute.bool !== undefined) values++;
  if (attribute.string !== undefined) {
    values++;
    if (exceedsValueLength(attribute.string)) {
      errors.push(tooLong(`${attributePath(devicePath, name)}.string`, MAX_ATTRIBUTE_VALUE_LENGTH));
    }
  }
  if (attribute.version !== undefined) {
    values++;
    const version = attribute.version;
    if (!SEMVER.test(version)) {
      errors.push(
        invalid(
          `${attributePath(devicePath, name)}.version`,
          version,
          'must be a string compatible with semver.org spec 2.0.0',
        ),
      );
    }
    if (exceedsValueLength(version)) {
      errors.push(
        tooLong(`${attributePath(devicePath, name)}.version`, MAX_ATTRIBUTE_VALUE_LENGTH),
      );
    }
  }
  if (values !== 1) {
    errors.push(
      invalid(
        attributePath(devicePath, name),
        values === 0 ? '' : attribute,
        'exactly one value must be specified',
      ),
    );
  }
}

function attributePath(devicePath: string, name: string): string {
  return keyPath(`${devicePath}.attributes`, name, ATTRIBUTE_KEY_PATH_LENGTH);
}

const ASCII = /^[\x00-\x7f]*$/;

function exceedsValueLength(value: string): boolean {
  // Every UTF-16 unit is at least one UTF-8 byte, and ASCII exactly one: most values are
  // decided without counting.
  if (value.length > MAX_ATTRIBUTE_VALUE_LENGTH) return true;
  if (value.length * 3 <= MAX_ATTRIBUTE_VALUE_LENGTH || ASCII.test(value)) return false;
  return utf8ByteLength(value) > MAX_ATTRIBUTE_VALUE_LENGTH;
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
