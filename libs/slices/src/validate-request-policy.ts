import type { CapacityRequestPolicy, CapacityRequestPolicyRange } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, required, tooMany } from './field-error';
import type { Quantity } from './quantity';
import { compareQuantities, readQuantity } from './quantity';
import { MAX_REQUEST_POLICY_VALID_VALUES } from './resource-slice';

/**
 * Consumable capacity (gate DRAConsumableCapacity): the checks of
 * pkg/apis/resource/validation/validation.go for a capacity's `requestPolicy`, with its
 * messages and paths. A quantity is compared exactly (`Quantity.Cmp`); the step arithmetic
 * uses whole numbers rounded up, as the API server's `Quantity.Value()` does. Values quote the
 * driver's own strings where the API server prints its canonical form (`1Gi` for `1024Mi`).
 */

const INT64_MAX = (1n << 63n) - 1n;
/** `apimachineryvalidation.IsNegativeErrorMsg`. */
const NEGATIVE_MESSAGE = 'must be greater than or equal to 0';

/** A quantity as the driver wrote it, and its value when it is one. */
export interface Amount {
  readonly text: string;
  /** Undefined when `text` is no quantity (reported where it was read). */
  readonly quantity: Quantity | undefined;
}

/**
 * `validateSingleAllocatableDeviceCapacity` / `validateMultiAllocatableDeviceCapacity`: a
 * request policy only on a device that allows multiple allocations, and then a valid one.
 * `capacity` is the capacity's `value`; comparisons with it are skipped when it is no quantity.
 */
export function validateCapacityRequestPolicy(
  policy: CapacityRequestPolicy,
  capacity: Amount,
  allowMultipleAllocations: boolean,
  path: string,
  errors: FieldError[],
): void {
  if (!allowMultipleAllocations) {
    errors.push({ path, type: 'Forbidden', message: 'allowMultipleAllocations must be true' });
    return;
  }
  validateRequestPolicy(policy, capacity, path, errors);
}

/** `validateRequestPolicy`: at most one of `validValues` and `validRange`, each valid. */
function validateRequestPolicy(
  policy: CapacityRequestPolicy,
  capacity: Amount,
  path: string,
  errors: FieldError[],
): void {
  // A proto3 string has no "unset": an empty one is a field the driver did not set.
  const defaultAmount = isSet(policy.default)
    ? read(policy.default, `${path}.default`, errors)
    : undefined;
  const validValues = policy.validValues ?? [];
  if (validValues.length > 0 && policy.validRange !== undefined) {
    errors.push({
      path,
      type: 'Forbidden',
      message:
        'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time',
    });
    return;
  }
  if (validValues.length > 0) {
    if (defaultAmount === undefined) {
      errors.push(required(`${path}.default`, 'required when validValues is defined'));
    } else {
      validateValidValues(validValues, defaultAmount, capacity, `${path}.validValues`, errors);
    }
  } else if (policy.validRange !== undefined) {
    if (defaultAmount === undefined) {
      errors.push(required(`${path}.default`, 'required when validRange is defined'));
    } else {
      validateRange(policy.validRange, defaultAmount, capacity, `${path}.validRange`, errors);
    }
  }
}

/** `validateRequestPolicyValidValues`. */
function validateValidValues(
  texts: readonly string[],
  defaultAmount: Amount,
  capacity: Amount,
  path: string,
  errors: FieldError[],
): void {
  const options = texts.map((text, i) => read(text, `${path}[${i}]`, errors));
  for (let i = 0; i + 1 < options.length; i++) {
    const current = options[i]?.quantity;
    const next = options[i + 1];
    if (current === undefined || next?.quantity === undefined) continue;
    if (compareQuantities(current, next.quantity) > 0) {
      errors.push(
        invalid(`${path}[${i + 1}]`, next.text, 'values must be sorted in ascending order'),
      );
    }
  }
  let foundDefault = false;
  if (options.length > MAX_REQUEST_POLICY_VALID_VALUES) {
    // Like the API server, a list over its limit is not looked into (DoS protection).
    errors.push(tooMany(path, options.length, MAX_REQUEST_POLICY_VALID_VALUES));
  } else {
    const seen = new Set<string>();
    for (let i = 0; i < options.length; i++) {
      const option = options[i]?.quantity;
      if (option === undefined) continue;
      const text = texts[i] ?? '';
      if (capacity.quantity !== undefined && compareQuantities(option, capacity.quantity) > 0) {
        errors.push(
          invalid(`${path}[${i}]`, text, `option is larger than capacity value: ${capacity.text}`),
        );
      }
      if (
        defaultAmount.quantity !== undefined &&
        compareQuantities(option, defaultAmount.quantity) === 0
      ) {
        foundDefault = true;
      }
      const key = duplicateKey(option);
      if (seen.has(key)) {
        errors.push({ path: `${path}[${i}]`, type: 'Duplicate value', value: key, message: '' });
      } else {
        seen.add(key);
      }
    }
  }
  if (!foundDefault && defaultAmount.quantity !== undefined) {
    errors.push(
      invalid(
        path,
        defaultAmount.text,
        'default value is not valid according to the requestPolicy',
      ),
    );
  }
}

/**
 * `validateRequestPolicyRange` as upstream has it since the 1.34 original was fixed: the
 * default's errors on `validRange.default` (1.34 put them on `validRange.min` / `.max`), a step
 * that must be positive (1.34 divided by it unchecked) and the whole-number bounds of
 * `validateInt64Range`. A policy valid here is valid for either. The milli-unit arithmetic of
 * gate DRAFractionalCapacityRange (after 1.36) is not modelled.
 */
function validateRange(
  range: CapacityRequestPolicyRange,
  defaultAmount: Amount,
  capacity: Amount,
  path: string,
  errors: FieldError[],
): void {
  if (!isSet(range.min)) {
    errors.push(required(`${path}.min`, 'required when validRange is defined'));
    return;
  }
  const min = read(range.min, `${path}.min`, errors);
  const max = isSet(range.max) ? read(range.max, `${path}.max`, errors) : undefined;
  const step = isSet(range.step) ? read(range.step, `${path}.step`, errors) : undefined;
  const cap = capacity.quantity;
  const dflt = defaultAmount.quantity;
  const lo = min.quantity;
  if (lo === undefined) return;
  if (cap !== undefined && compareQuantities(lo, cap) > 0) {
    errors.push(
      invalid(`${path}.min`, min.text, `min is larger than capacity value: ${capacity.text}`),
    );
  }
  if (dflt !== undefined && compareQuantities(dflt, lo) < 0) {
    errors.push(
      invalid(`${path}.default`, defaultAmount.text, `default is less than min: ${min.text}`),
    );
  }
  const hi = max?.quantity;
  if (max !== undefined && hi !== undefined) {
    if (compareQuantities(lo, hi) > 0) {
      // Upstream reports the min's value on the max's path.
      errors.push(invalid(`${path}.max`, min.text, `min is larger than max: ${max.text}`));
    }
    if (cap !== undefined && compareQuantities(hi, cap) > 0) {
      errors.push(
        invalid(`${path}.max`, max.text, `max is larger than capacity value: ${capacity.text}`),
      );
    }
    if (dflt !== undefined && compareQuantities(dflt, hi) > 0) {
      errors.push(
        invalid(`${path}.default`, defaultAmount.text, `default is more than max: ${max.text}`),
      );
    }
  }
  const stride = step?.quantity;
  if (step === undefined || stride === undefined) return;
  if (stride.sign <= 0) {
    errors.push(invalid(`${path}.step`, step.text, 'must be greater than zero'));
    return;
  }
  // Beyond 10^64 the sum is not built: such a min or step is reported by the bound below.
  const oneStep =
    Math.max(lo.exponent, stride.exponent) <= 64 ? addQuantities(lo, stride) : undefined;
  if (cap !== undefined && oneStep !== undefined && compareQuantities(oneStep, cap) > 0) {
    errors.push(
      invalid(
        `${path}.step`,
        step.text,
        `one step ${formatDecimal(oneStep)} is larger than capacity value: ${capacity.text}`,
      ),
    );
  }
  // `validateInt64Range`: the step arithmetic reads whole numbers, which only hold in
  // [0, 2^63-1]; outside, upstream reports the bound and skips it.
  const bounded: [Amount | undefined, string][] = [
    [defaultAmount, 'default'],
    [min, 'min'],
    [max, 'max'],
    [step, 'step'],
  ];
  let unsafe = false;
  for (const [amount, name] of bounded) {
    const quantity = amount?.quantity;
    if (amount === undefined || quantity === undefined) continue;
    if (quantity.sign < 0) {
      errors.push(invalid(`${path}.${name}`, amount.text, NEGATIVE_MESSAGE));
      unsafe = true;
    } else if (exceedsInt64(quantity)) {
      errors.push(invalid(`${path}.${name}`, amount.text, `must not be larger than ${INT64_MAX}`));
      unsafe = true;
    }
  }
  if (unsafe || dflt === undefined) return;
  checkStep(defaultAmount, lo, min.text, stride, step.text, `${path}.step`, errors);
  if (max !== undefined && hi !== undefined) {
    checkStep(max, lo, min.text, stride, step.text, `${path}.step`, errors);
  }
}

/** `validateRequestPolicyRangeStep`: `value - min` is a multiple of `step`. */
function checkStep(
  value: Amount,
  min: Quantity,
  minText: string,
  step: Quantity,
  stepText: string,
  path: string,
  errors: FieldError[],
): void {
  if (value.quantity === undefined) return;
  if ((roundedUp(value.quantity) - roundedUp(min)) % roundedUp(step) !== 0n) {
    errors.push(
      invalid(
        path,
        value.text,
        `value is not a multiple of a given step (${stepText}) from (${minText})`,
      ),
    );
  }
}

function isSet(text: string | undefined): text is string {
  return text !== undefined && text !== '';
}

/** Reads a policy quantity, reporting one that is none at `path`. */
function read(text: string, path: string, errors: FieldError[]): Amount {
  const reading = readQuantity(text);
  if (reading.problem !== undefined) errors.push(invalid(path, text, reading.problem));
  return { text, quantity: reading.quantity };
}

/** Whether `q` is above 2^63-1, decided on the digit count before any big power is built. */
function exceedsInt64(q: Quantity): boolean {
  if (q.sign <= 0) return false;
  const digits = q.mantissa.toString().length + q.exponent;
  if (digits <= 18) return false;
  if (digits > 19) return true;
  return roundedUp(q) > INT64_MAX;
}

/**
 * `Quantity.Value()`: the whole number, rounded away from zero. Only called on quantities whose
 * magnitude is bounded (checked by the caller), so the power of ten stays small.
 */
function roundedUp(q: Quantity): bigint {
  const signed = q.sign < 0 ? -q.mantissa : q.mantissa;
  if (q.exponent >= 0) return signed * 10n ** BigInt(q.exponent);
  const divisor = 10n ** BigInt(-q.exponent);
  const whole = q.mantissa / divisor;
  const up = q.mantissa % divisor === 0n ? whole : whole + 1n;
  return q.sign < 0 ? -up : up;
}

/**
 * Upstream keys the set by `Quantity.Value()`, so options equal once rounded up collide. A
 * value too large for a whole number is keyed exactly instead of being built digit by digit.
 */
function duplicateKey(q: Quantity): string {
  if (q.mantissa.toString().length + q.exponent > 20) {
    return `${q.sign < 0 ? '-' : ''}${q.mantissa}e${q.exponent}`;
  }
  return roundedUp(q).toString();
}

function addQuantities(a: Quantity, b: Quantity): Quantity {
  const exponent = Math.min(a.exponent, b.exponent);
  const scaled = (q: Quantity): bigint =>
    (q.sign < 0 ? -q.mantissa : q.mantissa) * 10n ** BigInt(q.exponent - exponent);
  const sum = scaled(a) + scaled(b);
  const sign = sum > 0n ? 1 : sum < 0n ? -1 : 0;
  return { sign, mantissa: sum < 0n ? -sum : sum, exponent, format: 'DecimalSI' };
}

/** A plain decimal (`10737418240`, `1.5`): the API server would print `10Gi`, `1500m`. */
function formatDecimal(q: Quantity): string {
  if (q.sign === 0) return '0';
  const sign = q.sign < 0 ? '-' : '';
  const digits = q.mantissa.toString();
  if (q.exponent >= 0) return `${sign}${digits}${'0'.repeat(q.exponent)}`;
  const point = digits.length + q.exponent;
  if (point > 0) return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
  return `${sign}0.${'0'.repeat(-point)}${digits}`;
}
