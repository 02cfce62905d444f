import { deviceSchema, utf8ByteLength } from '@slicekeeper/contracts';
import type { PassThroughFields } from '@slicekeeper/contracts';
import type { FieldError } from './field-error';
import { invalid, keyPath, tooLong } from './field-error';
import { TYPED_SLICE_SPEC_FIELDS } from './published-device';
import { MAX_DEVICE_PASS_THROUGH_BYTES, MAX_POOL_PASS_THROUGH_BYTES } from './resource-slice';

/**
 * The escape hatch for fields of a newer release (`passThrough` of a device or a pool). Its
 * members are merged into the published device or slice spec, so slicekeeper checks only what
 * keeps that merge sound: each member is a JSON field name, none names a field slicekeeper
 * types (a typed field is never overridden), and the whole is bounded. The values are left to
 * the API server, which rejects a malformed one with its own path.
 */

/**
 * Fields of a device slicekeeper publishes from typed data: every field of the inventory's
 * device (so that a typed field added later is protected at once) and v1beta1's `basic`
 * wrapper, which holds them in that version. The planner drops a member of these names too
 * (`publishedDevice`); the slice spec's list is the planner's own.
 */
const DEVICE_TYPED_FIELDS: ReadonlySet<string> = new Set([
  ...Object.keys(deviceSchema.shape),
  'basic',
]);

/** A field name of resource.k8s.io's JSON: a lowerCamelCase identifier. */
const JSON_FIELD_NAME = /^[a-z][A-Za-z0-9]*$/;
const JSON_FIELD_NAME_MESSAGE =
  "a field name must be a lowerCamelCase identifier, as resource.k8s.io's JSON fields are (e.g. 'newField', regex used for validation is '[a-z][A-Za-z0-9]*')";
/** Longest member name shown in a path before it is shortened with `...`. */
const MEMBER_PATH_LENGTH = 64;

/** Checks a device's `passThrough` (at `path`, e.g. `pools[0].devices[3].passThrough`). */
export function validateDevicePassThrough(
  passThrough: PassThroughFields,
  path: string,
  errors: FieldError[],
): void {
  validatePassThrough(
    passThrough,
    DEVICE_TYPED_FIELDS,
    MAX_DEVICE_PASS_THROUGH_BYTES,
    path,
    errors,
  );
}

/** Checks a pool's `passThrough`, merged into every slice spec of the pool. */
export function validatePoolPassThrough(
  passThrough: PassThroughFields,
  path: string,
  errors: FieldError[],
): void {
  validatePassThrough(
    passThrough,
    TYPED_SLICE_SPEC_FIELDS,
    MAX_POOL_PASS_THROUGH_BYTES,
    path,
    errors,
  );
}

function validatePassThrough(
  passThrough: PassThroughFields,
  typedFields: ReadonlySet<string>,
  maxBytes: number,
  path: string,
  errors: FieldError[],
): void {
  for (const name of Object.keys(passThrough)) {
    if (typedFields.has(name)) {
      errors.push({
        path: keyPath(path, name, MEMBER_PATH_LENGTH),
        type: 'Forbidden',
        message: 'names a field slicekeeper publishes from its typed data; set that field instead',
      });
    } else if (!JSON_FIELD_NAME.test(name)) {
      errors.push(invalid(path, name, JSON_FIELD_NAME_MESSAGE));
    }
  }
  const bytes = jsonByteLength(passThrough);
  if (bytes === undefined) {
    errors.push(invalid(path, '<value omitted>', 'must be a JSON object'));
  } else if (bytes > maxBytes) {
    errors.push(tooLong(path, maxBytes));
  }
}

/** The UTF-8 size of `value` as JSON; undefined when it is not JSON (a BigInt, a cycle). */
function jsonByteLength(value: PassThroughFields): number | undefined {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    // The inventory's values come from JSON; only a hand-built object gets here.
    return undefined;
  }
  return utf8ByteLength(text);
}
