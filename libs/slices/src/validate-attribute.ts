import { utf8ByteLength } from '@slicekeeper/contracts';
import type { Device, DeviceAttribute } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, keyPath, tooLong } from './field-error';
import {
  MAX_ATTRIBUTE_DOMAIN_LENGTH,
  MAX_ATTRIBUTE_ID_LENGTH,
  MAX_ATTRIBUTE_VALUE_LENGTH,
  MAX_ATTRIBUTE_VALUES_PER_DEVICE,
} from './resource-slice';

/**
 * A device attribute's value as the API server checks it (`validateDeviceAttribute`,
 * `validateDeviceAttributeStringValue`, `validateDeviceAttributeVersionValue`), with the list
 * forms of 1.36 (`ints`, `bools`, `strings`, `versions`, gate DRAListTypeAttributes).
 */

const SEMVER_NUMERIC = '(0|[1-9]\\d*)';
const SEMVER_PRERELEASE = '(0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)';
const SEMVER_BUILD = '[0-9a-zA-Z-]+';
/** Semantic Versioning 2.0.0, as the API server's `semverRe`. */
const SEMVER = new RegExp(
  `^${SEMVER_NUMERIC}\\.${SEMVER_NUMERIC}\\.${SEMVER_NUMERIC}` +
    `(-${SEMVER_PRERELEASE}(\\.${SEMVER_PRERELEASE})*)?` +
    `(\\+${SEMVER_BUILD}(\\.${SEMVER_BUILD})*)?$`,
);
const SEMVER_MESSAGE = 'must be a string compatible with semver.org spec 2.0.0';
const EMPTY_LIST_MESSAGE = 'must not be empty if specified';

/** Longest attribute or capacity key shown in a path before it is shortened with `...`. */
export const ATTRIBUTE_KEY_PATH_LENGTH = MAX_ATTRIBUTE_DOMAIN_LENGTH + 1 + MAX_ATTRIBUTE_ID_LENGTH;

/** Checks one attribute (`name` is its key in `devicePath.attributes`). */
export function validateAttribute(
  attribute: DeviceAttribute,
  name: string,
  devicePath: string,
  errors: FieldError[],
): void {
  let values = 0;
  if (attribute.bool !== undefined) values++;
  if (attribute.int !== undefined) values++;
  if (attribute.string !== undefined) {
    values++;
    validateString(attribute.string, `${attributePath(devicePath, name)}.string`, errors);
  }
  if (attribute.version !== undefined) {
    values++;
    validateVersion(attribute.version, `${attributePath(devicePath, name)}.version`, errors);
  }
  if (attribute.bools !== undefined) {
    values++;
    checkNotEmpty(attribute.bools, 'bools', devicePath, name, errors);
  }
  if (attribute.ints !== undefined) {
    values++;
    checkNotEmpty(attribute.ints, 'ints', devicePath, name, errors);
  }
  if (attribute.strings !== undefined) {
    values++;
    const strings = attribute.strings;
    checkNotEmpty(strings, 'strings', devicePath, name, errors);
    for (let i = 0; i < strings.length; i++) {
      const item = strings[i] ?? '';
      if (exceedsValueLength(item)) {
        errors.push(
          tooLong(`${attributePath(devicePath, name)}.strings[${i}]`, MAX_ATTRIBUTE_VALUE_LENGTH),
        );
      }
    }
  }
  if (attribute.versions !== undefined) {
    values++;
    const versions = attribute.versions;
    checkNotEmpty(versions, 'versions', devicePath, name, errors);
    for (let i = 0; i < versions.length; i++) {
      validateVersion(
        versions[i] ?? '',
        `${attributePath(devicePath, name)}.versions[${i}]`,
        errors,
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

/**
 * `numEntriesDeviceAttribute`: a scalar attribute counts one, a list each of its items (an
 * empty list one, as a scalar: upstream tests the lists' lengths). Upstream adds the lengths of
 * every list of an attribute, invalid ones included.
 */
export function countAttributeValues(device: Device): number {
  const attributes = device.attributes;
  if (attributes === undefined) return 0;
  let count = 0;
  for (const name in attributes) {
    const attribute = attributes[name];
    if (attribute === undefined) continue;
    const items =
      (attribute.bools?.length ?? 0) +
      (attribute.ints?.length ?? 0) +
      (attribute.strings?.length ?? 0) +
      (attribute.versions?.length ?? 0);
    count += items === 0 ? 1 : items;
  }
  return count;
}

/** The per-device bound on attribute values (`ResourceSliceMaxAttributeValuesPerDevice`). */
export function validateAttributeValueCount(
  device: Device,
  path: string,
  errors: FieldError[],
): void {
  const count = countAttributeValues(device);
  if (count > MAX_ATTRIBUTE_VALUES_PER_DEVICE) {
    errors.push(
      invalid(
        path,
        count,
        `the total number of attribute values must not exceed ${MAX_ATTRIBUTE_VALUES_PER_DEVICE}`,
      ),
    );
  }
}

function checkNotEmpty(
  list: readonly unknown[],
  field: 'bools' | 'ints' | 'strings' | 'versions',
  devicePath: string,
  name: string,
  errors: FieldError[],
): void {
  if (list.length === 0) {
    errors.push(invalid(`${attributePath(devicePath, name)}.${field}`, list, EMPTY_LIST_MESSAGE));
  }
}

function validateString(value: string, path: string, errors: FieldError[]): void {
  if (exceedsValueLength(value)) errors.push(tooLong(path, MAX_ATTRIBUTE_VALUE_LENGTH));
}

function validateVersion(version: string, path: string, errors: FieldError[]): void {
  if (!SEMVER.test(version)) errors.push(invalid(path, version, SEMVER_MESSAGE));
  if (exceedsValueLength(version)) errors.push(tooLong(path, MAX_ATTRIBUTE_VALUE_LENGTH));
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
