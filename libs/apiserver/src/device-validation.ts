import { dns1123LabelProblems, qualifiedNameProblems } from '@slicekeeper/contracts';
import { compareQuantities, parseQuantity } from '@slicekeeper/slices';
import type { Quantity } from '@slicekeeper/slices';
import { listAt, objAt, strAt } from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { canonicalQuantity } from './quantity';

/**
 * The rules of pkg/apis/resource/validation/validation.go for the device fields that came with
 * the DRA features after the 1.34 core: counter consumption (DRAPartitionableDevices), consumable
 * capacity (DRAConsumableCapacity), binding conditions (DRADeviceBindingConditions), list-type
 * attributes (DRAListTypeAttributes) and node allocatable resources (DRANodeAllocatableResources).
 * A field reaches validation only when its gate kept it, so these rules run whatever the gates;
 * a release whose types lack a field never decodes it. Function names follow upstream's, so a
 * reader can put the two side by side; messages are copied.
 */

/** `ResourceSliceMaxDeviceCounterConsumptionsPerDevice`. */
const MAX_COUNTER_CONSUMPTIONS_PER_DEVICE = 2;
/** `ResourceSliceMaxCountersPerDeviceCounterConsumption`. */
const MAX_COUNTERS_PER_CONSUMPTION = 32;
/** `ResourceSliceMaxCountersPerCounterSet`. */
export const MAX_COUNTERS_PER_COUNTER_SET = 32;
/** `ResourceSliceMaxAttributeValuesPerDevice`: scalars count one, a list each of its items. */
const MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48;
/** `CapacityRequestPolicyDiscreteMaxOptions`. */
const MAX_VALID_VALUES = 10;
/** `BindingConditionsMaxSize` and `BindingFailureConditionsMaxSize`. */
const MAX_BINDING_CONDITIONS = 4;
/** `DeviceAttributeMaxValueLength`. */
const ATTRIBUTE_MAX_VALUE_LENGTH = 64;
/** `validation.DNS1123LabelMaxLength`, where validateMap truncates a counter name in a path. */
const DNS1123_LABEL_MAX_LENGTH = 63;

/** The four list values of a DeviceAttribute (1.36). */
export const LIST_ATTRIBUTE_FIELDS = ['bools', 'ints', 'strings', 'versions'] as const;

/** apimachinery's `truncateIfTooLong`, which validateMap applies to a key in a path. */
export function truncateKey(value: string, max: number): string {
  const limit = Math.max(max, 16);
  if (value.length <= limit) return value;
  const remaining = limit - 3;
  return `${value.slice(0, Math.floor((remaining + 1) / 2))}...${value.slice(value.length - Math.floor(remaining / 2))}`;
}

function quantityAt(obj: JsonObject | undefined, field: string): Quantity | undefined {
  const value = obj?.[field];
  return typeof value === 'string' ? parseQuantity(value) : undefined;
}

/** `Quantity.String()`: the canonical form the server would write back. */
function quantityText(value: JsonValue | undefined): string {
  return typeof value === 'string' ? canonicalQuantity(value) : '0';
}

/** `Quantity.Value()`: the value rounded up to an integer. */
function quantityValue(q: Quantity): bigint {
  const signed = q.sign === -1 ? -q.mantissa : q.mantissa;
  if (q.exponent >= 0) return signed * 10n ** BigInt(q.exponent);
  const divisor = 10n ** BigInt(-q.exponent);
  const truncated = signed / divisor;
  return signed > 0n && signed % divisor !== 0n ? truncated + 1n : truncated;
}

function addQuantities(a: Quantity, b: Quantity): Quantity {
  const exponent = Math.min(a.exponent, b.exponent);
  const scaled = (q: Quantity) =>
    (q.sign === -1 ? -q.mantissa : q.mantissa) * 10n ** BigInt(q.exponent - exponent);
  const sum = scaled(a) + scaled(b);
  const sign = sum === 0n ? 0 : sum < 0n ? -1 : 1;
  return { sign, mantissa: sum < 0n ? -sum : sum, exponent, format: a.format };
}

/**
 * A sum's `String()`: `Quantity.Add` keeps the format of the quantity added to, so a binary
 * minimum plus a step prints as binary (`2Gi`) when the sum is a whole number of kibibytes.
 */
function formatQuantity(q: Quantity): string {
  const signed = q.sign === -1 ? -q.mantissa : q.mantissa;
  if (q.exponent >= 0) {
    const whole = signed * 10n ** BigInt(q.exponent);
    if (q.format === 'BinarySI' && whole % 1024n === 0n)
      return canonicalQuantity(`${whole / 1024n}Ki`);
    return canonicalQuantity(q.format === 'DecimalExponent' ? `${whole}e0` : whole.toString());
  }
  if (q.format === 'DecimalExponent') return canonicalQuantity(`${signed}e${q.exponent}`);
  const digits = q.mantissa.toString().padStart(1 - q.exponent, '0');
  const point = digits.length + q.exponent;
  const plain = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return canonicalQuantity(q.sign === -1 ? `-${plain}` : plain);
}

// ---------------------------------------------------------------------------------------------
// Counters (DRAPartitionableDevices)

/** `validateCounterName` (`ValidateDNS1123Label`). */
function validateCounterName(name: string, path: FieldPath): FieldError[] {
  return dns1123LabelProblems(name).map((msg) => fieldError.invalid(path, name, msg));
}

/** validateMap of a `counters` map: at most `max` entries, each key a counter name. */
export function validateCounters(counters: JsonObject, max: number, path: FieldPath): FieldError[] {
  const keys = Object.keys(counters);
  if (keys.length > max) return [fieldError.tooMany(path, keys.length, max)];
  return keys.flatMap((key) =>
    validateCounterName(key, path.key(truncateKey(key, DNS1123_LABEL_MAX_LENGTH))),
  );
}

/** `validateDeviceCounterConsumption`. */
function validateDeviceCounterConsumption(consumption: JsonObject, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const counterSet = strAt(consumption, 'counterSet') ?? '';
  if (counterSet === '') errs.push(fieldError.required(path.child('counterSet')));
  else errs.push(...validateCounterName(counterSet, path.child('counterSet')));
  const counters = objAt(consumption, 'counters') ?? {};
  if (Object.keys(counters).length === 0) errs.push(fieldError.required(path.child('counters')));
  else
    errs.push(...validateCounters(counters, MAX_COUNTERS_PER_CONSUMPTION, path.child('counters')));
  return errs;
}

/** validateSet of a device's `consumesCounters`, keyed by counter set. */
export function validateConsumesCounters(device: JsonObject, path: FieldPath): FieldError[] {
  const consumptions = listAt(device, 'consumesCounters') ?? [];
  const listPath = path.child('consumesCounters');
  if (consumptions.length > MAX_COUNTER_CONSUMPTIONS_PER_DEVICE)
    return [fieldError.tooMany(listPath, consumptions.length, MAX_COUNTER_CONSUMPTIONS_PER_DEVICE)];
  const errs: FieldError[] = [];
  consumptions.forEach((c, i) => {
    if (isJsonObject(c)) errs.push(...validateDeviceCounterConsumption(c, listPath.index(i)));
  });
  const seen = new Set<string>();
  consumptions.forEach((c, i) => {
    const key = isJsonObject(c) ? (strAt(c, 'counterSet') ?? '') : '';
    if (seen.has(key)) errs.push(fieldError.duplicate(listPath.index(i), key));
    seen.add(key);
  });
  return errs;
}

// ---------------------------------------------------------------------------------------------
// List-type attributes (DRAListTypeAttributes)

/** `numEntriesDeviceAttribute`: a scalar attribute counts one, a list each of its items. */
export function numEntriesDeviceAttribute(device: JsonObject): number {
  let entries = 0;
  for (const attribute of Object.values(objAt(device, 'attributes') ?? {})) {
    if (!isJsonObject(attribute)) continue;
    const items = LIST_ATTRIBUTE_FIELDS.reduce(
      (sum, field) => sum + (listAt(attribute, field) ?? []).length,
      0,
    );
    entries += items === 0 ? 1 : items;
  }
  return entries;
}

/** `the total number of attribute values must not exceed 48` (validateDevice). */
export function validateAttributeValueCount(device: JsonObject, path: FieldPath): FieldError[] {
  const count = numEntriesDeviceAttribute(device);
  return count > MAX_ATTRIBUTE_VALUES_PER_DEVICE
    ? [
        fieldError.invalid(
          path,
          count,
          `the total number of attribute values must not exceed ${MAX_ATTRIBUTE_VALUES_PER_DEVICE}`,
        ),
      ]
    : [];
}

/**
 * The list half of `validateDeviceAttribute`: each set list counts as one value and must not be
 * empty; strings and versions are checked item by item as their scalars are.
 * @returns the errors and how many list values are set.
 */
export function validateListAttributeValues(
  attribute: JsonObject,
  path: FieldPath,
  validateString: (value: string, path: FieldPath) => FieldError[],
  validateVersion: (value: string, path: FieldPath) => FieldError[],
): { errors: FieldError[]; set: number } {
  const errors: FieldError[] = [];
  let set = 0;
  for (const field of LIST_ATTRIBUTE_FIELDS) {
    const value = attribute[field];
    if (value === undefined || value === null || !Array.isArray(value)) continue;
    set++;
    const fieldPath = path.child(field);
    if (value.length === 0)
      errors.push(fieldError.invalid(fieldPath, value, 'must not be empty if specified'));
    value.forEach((item, i) => {
      if (typeof item !== 'string') return;
      if (field === 'strings') errors.push(...validateString(item, fieldPath.index(i)));
      if (field === 'versions') errors.push(...validateVersion(item, fieldPath.index(i)));
    });
  }
  return { errors, set };
}

/** `haveListAttributes`: a slice using list values has the smaller device cap. */
export function haveListAttributes(devices: readonly JsonValue[]): boolean {
  return devices.some(
    (d) =>
      isJsonObject(d) &&
      Object.values(objAt(d, 'attributes') ?? {}).some(
        (a) =>
          isJsonObject(a) &&
          LIST_ATTRIBUTE_FIELDS.some((field) => a[field] !== undefined && a[field] !== null),
      ),
  );
}

/** `validateDeviceAttributeStringValue` for one item of `strings`. */
export function validateAttributeString(value: string, path: FieldPath): FieldError[] {
  return new TextEncoder().encode(value).length > ATTRIBUTE_MAX_VALUE_LENGTH
    ? [fieldError.tooLong(path, ATTRIBUTE_MAX_VALUE_LENGTH)]
    : [];
}

// ---------------------------------------------------------------------------------------------
// Consumable capacity (DRAConsumableCapacity)

/** `validateRequestPolicyValidValues`. */
function validateRequestPolicyValidValues(
  defaultValue: JsonValue,
  capacity: JsonValue | undefined,
  validValues: readonly JsonValue[],
  path: FieldPath,
): FieldError[] {
  const errs: FieldError[] = [];
  const parsed = validValues.map((v) => (typeof v === 'string' ? parseQuantity(v) : undefined));
  for (let i = 0; i < parsed.length - 1; i++) {
    const a = parsed[i];
    const b = parsed[i + 1];
    if (a !== undefined && b !== undefined && compareQuantities(a, b) > 0)
      errs.push(
        fieldError.invalid(
          path.index(i + 1),
          quantityText(validValues[i + 1]),
          'values must be sorted in ascending order',
        ),
      );
  }
  if (validValues.length > MAX_VALID_VALUES)
    return [...errs, fieldError.tooMany(path, validValues.length, MAX_VALID_VALUES)];
  const max = typeof capacity === 'string' ? parseQuantity(capacity) : undefined;
  const wanted = typeof defaultValue === 'string' ? parseQuantity(defaultValue) : undefined;
  parsed.forEach((option, i) => {
    if (option === undefined) return;
    if (max !== undefined && compareQuantities(option, max) > 0)
      errs.push(
        fieldError.invalid(
          path.index(i),
          quantityText(validValues[i]),
          `option is larger than capacity value: ${quantityText(capacity)}`,
        ),
      );
  });
  // validateSet keys each option by `quantityKeyInt` (its integer value).
  const seen = new Set<bigint>();
  parsed.forEach((option, i) => {
    if (option === undefined) return;
    const key = quantityValue(option);
    if (seen.has(key)) errs.push(fieldError.duplicate(path.index(i), key.toString()));
    seen.add(key);
  });
  const foundDefault =
    wanted !== undefined &&
    parsed.some((option) => option !== undefined && compareQuantities(option, wanted) === 0);
  if (!foundDefault)
    errs.push(
      fieldError.invalid(
        path,
        quantityText(defaultValue),
        'default value is not valid according to the requestPolicy',
      ),
    );
  return errs;
}

/** `validateRequestPolicyRangeStep`, on `Quantity.Value()` as without fractional ranges. */
function validateRequestPolicyRangeStep(
  value: Quantity,
  valueText: JsonValue | undefined,
  min: Quantity,
  minText: JsonValue | undefined,
  step: Quantity,
  stepText: JsonValue | undefined,
  path: FieldPath,
): FieldError[] {
  const stepValue = quantityValue(step);
  if (stepValue === 0n) return [];
  return (quantityValue(value) - quantityValue(min)) % stepValue === 0n
    ? []
    : [
        fieldError.invalid(
          path,
          quantityText(valueText),
          `value is not a multiple of a given step (${quantityText(stepText)}) from (${quantityText(minText)})`,
        ),
      ];
}

/** `validateRequestPolicyRange`. */
function validateRequestPolicyRange(
  defaultText: JsonValue,
  capacityText: JsonValue | undefined,
  range: JsonObject,
  path: FieldPath,
): FieldError[] {
  const min = quantityAt(range, 'min');
  if (min === undefined)
    return [fieldError.required(path.child('min'), 'required when validRange is defined')];
  const errs: FieldError[] = [];
  const capacity = typeof capacityText === 'string' ? parseQuantity(capacityText) : undefined;
  const defaultValue = typeof defaultText === 'string' ? parseQuantity(defaultText) : undefined;
  const capacityString = quantityText(capacityText);
  if (capacity !== undefined && compareQuantities(min, capacity) > 0)
    errs.push(
      fieldError.invalid(
        path.child('min'),
        quantityText(range.min),
        `min is larger than capacity value: ${capacityString}`,
      ),
    );
  if (defaultValue !== undefined && compareQuantities(defaultValue, min) < 0)
    errs.push(
      fieldError.invalid(
        path.child('default'),
        quantityText(defaultText),
        `default is less than min: ${quantityText(range.min)}`,
      ),
    );
  const max = quantityAt(range, 'max');
  if (max !== undefined) {
    if (compareQuantities(min, max) > 0)
      errs.push(
        fieldError.invalid(
          path.child('max'),
          quantityText(range.min),
          `min is larger than max: ${quantityText(range.max)}`,
        ),
      );
    if (capacity !== undefined && compareQuantities(max, capacity) > 0)
      errs.push(
        fieldError.invalid(
          path.child('max'),
          quantityText(range.max),
          `max is larger than capacity value: ${capacityString}`,
        ),
      );
    if (defaultValue !== undefined && compareQuantities(defaultValue, max) > 0)
      errs.push(
        fieldError.invalid(
          path.child('default'),
          quantityText(defaultText),
          `default is more than max: ${quantityText(range.max)}`,
        ),
      );
  }
  const step = quantityAt(range, 'step');
  if (step !== undefined) {
    if (step.sign <= 0) {
      errs.push(
        fieldError.invalid(
          path.child('step'),
          quantityText(range.step),
          'must be greater than zero',
        ),
      );
    } else {
      const added = addQuantities(min, step);
      if (capacity !== undefined && compareQuantities(added, capacity) > 0)
        errs.push(
          fieldError.invalid(
            path.child('step'),
            quantityText(range.step),
            `one step ${formatQuantity(added)} is larger than capacity value: ${capacityString}`,
          ),
        );
      if (defaultValue !== undefined)
        errs.push(
          ...validateRequestPolicyRangeStep(
            defaultValue,
            defaultText,
            min,
            range.min,
            step,
            range.step,
            path.child('step'),
          ),
        );
      if (max !== undefined)
        errs.push(
          ...validateRequestPolicyRangeStep(
            max,
            range.max,
            min,
            range.min,
            step,
            range.step,
            path.child('step'),
          ),
        );
    }
  }
  return errs;
}

/** `validateRequestPolicy` with `validateValidRequestValues`. */
function validateRequestPolicy(
  capacityValue: JsonValue | undefined,
  policy: JsonObject,
  path: FieldPath,
): FieldError[] {
  const validValues = listAt(policy, 'validValues') ?? [];
  const validRange = objAt(policy, 'validRange');
  if (validValues.length > 0 && validRange !== undefined)
    return [
      fieldError.forbidden(
        path,
        'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time',
      ),
    ];
  const defaultValue = policy.default;
  if (validValues.length > 0) {
    if (defaultValue === undefined || defaultValue === null)
      return [fieldError.required(path.child('default'), 'required when validValues is defined')];
    return validateRequestPolicyValidValues(
      defaultValue,
      capacityValue,
      validValues,
      path.child('validValues'),
    );
  }
  if (validRange !== undefined) {
    if (defaultValue === undefined || defaultValue === null)
      return [fieldError.required(path.child('default'), 'required when validRange is defined')];
    return validateRequestPolicyRange(
      defaultValue,
      capacityValue,
      validRange,
      path.child('validRange'),
    );
  }
  return [];
}

/**
 * One capacity of a device: with `allowMultipleAllocations` its request policy is checked
 * (`validateMultiAllocatableDeviceCapacity`), without it none may be set
 * (`validateSingleAllocatableDeviceCapacity`).
 */
export function validateDeviceCapacity(
  capacity: JsonObject,
  allowMultipleAllocations: boolean,
  path: FieldPath,
): FieldError[] {
  const policy = objAt(capacity, 'requestPolicy');
  if (policy === undefined) return [];
  const policyPath = path.child('requestPolicy');
  return allowMultipleAllocations
    ? validateRequestPolicy(capacity.value, policy, policyPath)
    : [fieldError.forbidden(policyPath, 'allowMultipleAllocations must be true')];
}

// ---------------------------------------------------------------------------------------------
// Binding conditions (DRADeviceBindingConditions)

function stringsAt(device: JsonObject, field: string): string[] {
  return (listAt(device, field) ?? []).filter((c): c is string => typeof c === 'string');
}

/** validateSlice of condition types (`metav1validation.ValidateLabelName`), at most four. */
function validateConditionTypes(conditions: readonly string[], path: FieldPath): FieldError[] {
  if (conditions.length > MAX_BINDING_CONDITIONS)
    return [fieldError.tooMany(path, conditions.length, MAX_BINDING_CONDITIONS)];
  return conditions.flatMap((condition, i) =>
    qualifiedNameProblems(condition).map((msg) =>
      fieldError.invalid(path.index(i), condition, msg),
    ),
  );
}

/** `validateDeviceBindingParameters`. */
export function validateDeviceBindingParameters(device: JsonObject, path: FieldPath): FieldError[] {
  const conditions = stringsAt(device, 'bindingConditions');
  const failures = stringsAt(device, 'bindingFailureConditions');
  const conditionsPath = path.child('bindingConditions');
  const failuresPath = path.child('bindingFailureConditions');
  const errs = [
    ...validateConditionTypes(conditions, conditionsPath),
    ...validateConditionTypes(failures, failuresPath),
  ];
  const seenConditions = new Set<string>();
  conditions.forEach((condition, i) => {
    if (seenConditions.has(condition))
      errs.push(fieldError.duplicate(conditionsPath.index(i), condition));
    seenConditions.add(condition);
  });
  const seenFailures = new Set<string>();
  failures.forEach((condition, i) => {
    if (seenFailures.has(condition))
      errs.push(fieldError.duplicate(failuresPath.index(i), condition));
    seenFailures.add(condition);
    if (conditions.includes(condition))
      errs.push(
        fieldError.invalid(
          failuresPath.index(i),
          condition,
          'bindingFailureConditions must not overlap with bindingConditions',
        ),
      );
  });
  if (conditions.length === 0 && failures.length > 0)
    errs.push(
      fieldError.invalid(
        conditionsPath,
        listAt(device, 'bindingConditions') ?? null,
        'bindingConditions are required to use bindingFailureConditions',
      ),
    );
  if (failures.length === 0 && conditions.length > 0)
    errs.push(
      fieldError.invalid(
        failuresPath,
        listAt(device, 'bindingFailureConditions') ?? null,
        'bindingFailureConditions are required to use bindingConditions',
      ),
    );
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Node allocatable resources (DRANodeAllocatableResources)

/** core/helper `IsNodeAllocatableResourceName`: cpu, memory and hugepages. */
function isNodeAllocatableResourceName(name: string): boolean {
  return name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
}

function validateResourceName(name: string, path: FieldPath): FieldError[] {
  return isNodeAllocatableResourceName(name)
    ? []
    : [fieldError.invalid(path, name, 'must be a node allocatable resource name')];
}

function validateCapacityKey(
  capacityKey: JsonValue | undefined,
  device: JsonObject,
  path: FieldPath,
): FieldError[] {
  if (typeof capacityKey !== 'string') return [];
  if (capacityKey === '')
    return [fieldError.invalid(path, '', 'capacityKey must not be an empty string')];
  return Object.hasOwn(objAt(device, 'capacity') ?? {}, capacityKey)
    ? []
    : [fieldError.notFound(path, capacityKey)];
}

function validatePositive(value: JsonValue | undefined, path: FieldPath): FieldError[] {
  if (typeof value !== 'string') return [];
  const q = parseQuantity(value);
  return q !== undefined && q.sign <= 0
    ? [fieldError.invalid(path, quantityText(value), 'must be positive')]
    : [];
}

function validateNonNegative(value: JsonValue | undefined, path: FieldPath): FieldError[] {
  if (typeof value !== 'string') return [];
  const q = parseQuantity(value);
  return q !== undefined && q.sign < 0
    ? [fieldError.invalid(path, quantityText(value), 'must be non-negative')]
    : [];
}

/**
 * 1.36's `nodeAllocatableResourceMappings`: each key a node allocatable resource name, a
 * `capacityKey` naming one of the device's capacities, a positive `allocationMultiplier`.
 * 1.36's own function was not found in the sources searched; the rules and messages are those
 * 1.37's `validateNodeAllocatableResources` applies to the same fields.
 */
export function validateNodeAllocatableResourceMappings(
  device: JsonObject,
  path: FieldPath,
): FieldError[] {
  const mappingsPath = path.child('nodeAllocatableResourceMappings');
  const errs: FieldError[] = [];
  for (const [name, mapping] of Object.entries(
    objAt(device, 'nodeAllocatableResourceMappings') ?? {},
  )) {
    const keyPath = mappingsPath.key(name);
    errs.push(...validateResourceName(name, keyPath));
    if (!isJsonObject(mapping)) continue;
    errs.push(...validateCapacityKey(mapping.capacityKey, device, keyPath.child('capacityKey')));
    errs.push(
      ...validatePositive(mapping.allocationMultiplier, keyPath.child('allocationMultiplier')),
    );
  }
  return errs;
}

/** `validateNodeAllocatableMapping` (1.37). */
function validateNodeAllocatableMapping(
  mapping: JsonObject,
  device: JsonObject,
  path: FieldPath,
): FieldError[] {
  const errs: FieldError[] = [];
  const hasKey = mapping.capacityKey !== undefined && mapping.capacityKey !== null;
  const hasCapacityMultiplier =
    mapping.capacityMultiplier !== undefined && mapping.capacityMultiplier !== null;
  if (hasKey) {
    errs.push(...validateCapacityKey(mapping.capacityKey, device, path.child('capacityKey')));
    if (!hasCapacityMultiplier)
      errs.push(
        fieldError.required(
          path.child('capacityMultiplier'),
          'capacityMultiplier is required when capacityKey is set',
        ),
      );
    else
      errs.push(...validatePositive(mapping.capacityMultiplier, path.child('capacityMultiplier')));
  }
  errs.push(...validatePositive(mapping.deviceMultiplier, path.child('deviceMultiplier')));
  if (hasCapacityMultiplier && !hasKey)
    errs.push(
      fieldError.required(
        path.child('capacityKey'),
        'capacityKey is required when capacityMultiplier is set',
      ),
    );
  return errs;
}

/** `validateNodeAllocatableOverheadMapping` (1.37). */
function validateNodeAllocatableOverhead(overhead: JsonObject, path: FieldPath): FieldError[] {
  const perPod = overhead.perPod;
  const perContainer = overhead.perContainer;
  if (
    (perPod === undefined || perPod === null) &&
    (perContainer === undefined || perContainer === null)
  )
    return [fieldError.invalid(path, '', 'at least one of perPod or perContainer must be set')];
  return [
    ...validateNonNegative(perPod, path.child('perPod')),
    ...validateNonNegative(perContainer, path.child('perContainer')),
  ];
}

/** `validateNodeAllocatableResources` (1.37's `nodeAllocatableResources`). */
export function validateNodeAllocatableResources(
  device: JsonObject,
  path: FieldPath,
): FieldError[] {
  const resourcesPath = path.child('nodeAllocatableResources');
  const errs: FieldError[] = [];
  for (const [name, resource] of Object.entries(objAt(device, 'nodeAllocatableResources') ?? {})) {
    const keyPath = resourcesPath.key(name);
    errs.push(...validateResourceName(name, keyPath));
    if (!isJsonObject(resource)) continue;
    const mapping = objAt(resource, 'mapping');
    const overhead = objAt(resource, 'overhead');
    if (mapping === undefined && overhead === undefined)
      errs.push(fieldError.required(keyPath, 'at least one of mapping or overhead must be set'));
    if (mapping !== undefined)
      errs.push(...validateNodeAllocatableMapping(mapping, device, keyPath.child('mapping')));
    if (overhead !== undefined)
      errs.push(...validateNodeAllocatableOverhead(overhead, keyPath.child('overhead')));
  }
  return errs;
}
