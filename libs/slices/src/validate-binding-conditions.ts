import { qualifiedNameProblems } from '@slicekeeper/contracts';
import type { Device } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, tooMany } from './field-error';
import { MAX_BINDING_CONDITIONS, MAX_BINDING_FAILURE_CONDITIONS } from './resource-slice';

/** An absent list, without a new array for each device that has none. */
const NONE: readonly string[] = [];

/**
 * Binding conditions (gate DRADeviceBindingConditions): upstream's
 * `validateDeviceBindingParameters`, with its messages and paths. Each condition is a
 * condition type, checked as a label name (`metav1validation.ValidateLabelName`); each list
 * holds at most 4, without duplicates; a failure condition may not also be a binding
 * condition; and either list needs the other. `bindsToNode` is a plain flag the API server
 * does not check, so neither does slicekeeper.
 */
export function validateBindingConditions(
  device: Device,
  path: string,
  errors: FieldError[],
): void {
  const conditions = device.bindingConditions ?? NONE;
  const failureConditions = device.bindingFailureConditions ?? NONE;
  if (conditions.length === 0 && failureConditions.length === 0) return; // the usual case
  const conditionsPath = `${path}.bindingConditions`;
  const failurePath = `${path}.bindingFailureConditions`;
  checkNames(conditions, MAX_BINDING_CONDITIONS, conditionsPath, errors);
  checkNames(failureConditions, MAX_BINDING_FAILURE_CONDITIONS, failurePath, errors);

  // Upstream looks for duplicates and overlap even in a list over its limit.
  const seen = new Set<string>();
  for (let i = 0; i < conditions.length; i++) {
    const condition = conditions[i] ?? '';
    if (seen.has(condition)) errors.push(duplicate(`${conditionsPath}[${i}]`, condition));
    else seen.add(condition);
  }
  const seenFailures = new Set<string>();
  for (let i = 0; i < failureConditions.length; i++) {
    const condition = failureConditions[i] ?? '';
    if (seenFailures.has(condition)) errors.push(duplicate(`${failurePath}[${i}]`, condition));
    else seenFailures.add(condition);
    if (seen.has(condition)) {
      errors.push(
        invalid(
          `${failurePath}[${i}]`,
          condition,
          'bindingFailureConditions must not overlap with bindingConditions',
        ),
      );
    }
  }

  // Go prints an absent list as null, an empty one as [].
  if (conditions.length === 0) {
    errors.push(
      invalid(
        conditionsPath,
        device.bindingConditions ?? null,
        'bindingConditions are required to use bindingFailureConditions',
      ),
    );
  }
  if (failureConditions.length === 0) {
    errors.push(
      invalid(
        failurePath,
        device.bindingFailureConditions ?? null,
        'bindingFailureConditions are required to use bindingConditions',
      ),
    );
  }
}

/** `validateSlice(…, ValidateLabelName)`: a list over its limit is not looked into. */
function checkNames(
  names: readonly string[],
  max: number,
  path: string,
  errors: FieldError[],
): void {
  if (names.length > max) {
    errors.push(tooMany(path, names.length, max));
    return;
  }
  for (let i = 0; i < names.length; i++) {
    const name = names[i] ?? '';
    for (const problem of qualifiedNameProblems(name)) {
      errors.push(invalid(`${path}[${i}]`, name, problem));
    }
  }
}

function duplicate(path: string, value: string): FieldError {
  return { path, type: 'Duplicate value', value, message: '' };
}
