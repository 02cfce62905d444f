import { utf8ByteLength } from '@slicekeeper/contracts';
import type { DeviceAttribute } from '@slicekeeper/contracts';
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

/**
 * Checks one attribute (`name` is its key in `devicePath.attributes`). Like the device's
 * validator, it builds a path only for a problem it reports.
 */
export function validateAttribute(
  attribute: DeviceAttribute,
  name: string,
  devicePath: string,
  errors: FieldError[],
): void {
  let values = 0;
  if (attribute.bool !== undefined) values++;
  if (attribute.int !== undefined) values++;
  const text = attribute.string;
  if (text !== undefined) {
    values++;
    if (exceedsValueLength(text)) {
      errors.push(tooLong(valuePath(devicePath, name, 'string'), MAX_ATTRIBUTE_VALUE_LENGTH));
    }
  }
  const version = attribute.version;
  if (version !== undefined) {
    values++;
    validateVersion(version, devicePath, name, 'version', undefined, errors);
  }
  const bools = attribute.bools;
  if (bools !== undefined) {
    values++;
    checkNotEmpty(bools, 'bools', devicePath, name, errors);
  }
  const ints = attribute.ints;
  if (ints !== undefined) {
    values++;
    checkNotEmpty(ints, 'ints', devicePath, name, errors);
  }
  const strings = attribute.strings;
  if (strings !== undefined) {
    values++;
    checkNotEmpty(strings, 'strings', devicePath, name, errors);
    for (let i = 0; i < strings.length; i++) {
      if (exceedsValueLength(strings[i] ?? '')) {
        errors.push(tooLong(valuePath(devicePath, name, 'strings', i), MAX_ATTRIBUTE_VALUE_LENGTH));
      }
    }
  }
  const versions = attribute.versions;
  if (versions !== undefined) {
    values++;
    checkNotEmpty(versions, 'versions', devicePath, name, errors);
    for (let i = 0; i < versions.length; i++) {
      validateVersion(versions[i] ?? '', devicePath, name, 'versions', i, errors);
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
 * What one attribute adds to its device's count of attribute values
 * (`numEntriesDeviceAttribute`): a scalar counts one, a list each of its items (an empty list
 * one, as a scalar: upstream tests the lists' lengths). Upstream adds the lengths of every list
 * of an attribute, invalid ones included. The device's validator sums it while it visits the
 * attributes, so that the bound costs no second pass.
 */
export function attributeValueCount(attribute: DeviceAttribute): number {
  const items =
    (attribute.bools?.length ?? 0) +
    (attribute.ints?.length ?? 0) +
    (attribute.strings?.length ?? 0) +
    (attribute.versions?.length ?? 0);
  return items === 0 ? 1 : items;
}

/**
 * The per-device bound on attribute values (`ResourceSliceMaxAttributeValuesPerDevice`), given
 * the sum of {@link attributeValueCount} over the device's attributes.
 */
export function validateAttributeValueCount(
  count: number,
  path: string,
  errors: FieldError[],
): void {
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
    errors.push(invalid(valuePath(devicePath, name, field), list, EMPTY_LIST_MESSAGE));
  }
}

/** A version (`field` `version`) or an item of a list of them (`versions`, at `index`). */
function validateVersion(
  version: string,
  devicePath: string,
  name: string,
  field: 'version' | 'versions',
  index: number | undefined,
  errors: FieldError[],
): void {
  const semver = SEMVER.test(version);
  const long = exceedsValueLength(version);
  if (semver && !long) return; // the usual case
  const path = valuePath(devicePath, name, field, index);
  if (!semver) errors.push(invalid(path, version, SEMVER_MESSAGE));
  if (long) errors.push(tooLong(path, MAX_ATTRIBUTE_VALUE_LENGTH));
}

function attributePath(devicePath: string, name: string): string {
  return keyPath(`${devicePath}.attributes`, name, ATTRIBUTE_KEY_PATH_LENGTH);
}

/** The path of one of an attribute's fields, or of an item (`index`) of a list field. */
function valuePath(devicePath: string, name: string, field: string, index?: number): string {
  const path = `${attributePath(devicePath, name)}.${field}`;
  return index === undefined ? path : `${path}[${index}]`;
}

const ASCII = /^[\x00-\x7f]*$/;

function exceedsValueLength(value: string): boolean {
  // Every UTF-16 unit is at least one UTF-8 byte, and ASCII exactly one: most values are
  // decided without counting.
  if (value.length > MAX_ATTRIBUTE_VALUE_LENGTH) return true;
  if (value.length * 3 <= MAX_ATTRIBUTE_VALUE_LENGTH || ASCII.test(value)) return false;
  return utf8ByteLength(value) > MAX_ATTRIBUTE_VALUE_LENGTH;
}
