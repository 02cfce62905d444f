import { listAt, objAt, resourceSliceV1beta1Schema } from './api-schemas';
import { isJsonObject, normalize } from './object-schema';
import type { JsonObject } from './object-schema';
import { resourceSliceType } from './resource-types';
import type { ResourceType, VersionConversion } from './resource-types';

/*
 * ResourceSlices are kept in one shape, v1's (which is also the internal type's: devices flat,
 * nodeName and allNodes pointers), and converted at the edge to the version a request names.
 * Validation runs on that shape, so its field paths are the internal ones for every version:
 * upstream maps v1beta1's `spec.devices[i].basic.` to `spec.devices[i].` (ResourceNormalizationRules
 * in pkg/apis/resource/validation).
 */

function copyWith(obj: JsonObject, spec: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(obj)) out[key] = key === 'spec' ? spec : value;
  return out;
}

/**
 * v1beta1 → v1: a device's `basic` fields move up; an empty nodeName and a false allNodes are
 * unset (the pointers of v1 are nil), as the generated conversion of v1beta1 does.
 */
function v1beta1ToHub(obj: JsonObject): JsonObject {
  const spec = objAt(obj, 'spec');
  if (spec === undefined) return obj;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(spec)) {
    if (key === 'nodeName' && value === '') continue;
    if (key === 'allNodes' && value === false) continue;
    if (key === 'devices' && Array.isArray(value)) {
      out.devices = value.map((device) => {
        if (!isJsonObject(device)) return device;
        const flat: JsonObject = {};
        for (const [field, fieldValue] of Object.entries(device)) {
          if (field === 'basic') {
            if (isJsonObject(fieldValue)) Object.assign(flat, fieldValue);
          } else {
            flat[field] = fieldValue;
          }
        }
        return flat;
      });
      continue;
    }
    out[key] = value;
  }
  return copyWith(obj, out);
}

/** v1 → v1beta1: every device's fields but its name go into `basic`. */
function hubToV1beta1(obj: JsonObject): JsonObject {
  const spec = objAt(obj, 'spec');
  if (spec === undefined) return obj;
  const out: JsonObject = { ...spec };
  const devices = listAt(spec, 'devices');
  if (devices !== undefined) {
    out.devices = devices.map((device) => {
      if (!isJsonObject(device)) return device;
      const basic: JsonObject = {};
      for (const [field, value] of Object.entries(device))
        if (field !== 'name') basic[field] = value;
      return { name: device.name ?? '', basic };
    });
  }
  if (out.nodeName === null) Reflect.deleteProperty(out, 'nodeName');
  if (out.allNodes === null) Reflect.deleteProperty(out, 'allNodes');
  const converted = copyWith(obj, out);
  return normalize(resourceSliceV1beta1Schema, converted);
}

const V1BETA1: VersionConversion = {
  schema: resourceSliceV1beta1Schema,
  toHub: v1beta1ToHub,
  fromHub: hubToV1beta1,
};

/** v1beta2's ResourceSlice has v1's fields, names and order. */
const V1BETA2: VersionConversion = {
  schema: resourceSliceType.schema,
  toHub: (obj) => obj,
  fromHub: (obj) => obj,
};

function versioned(version: string, conversion: VersionConversion): ResourceType {
  const apiVersion = `resource.k8s.io/${version}`;
  return {
    ...resourceSliceType,
    version,
    apiVersion,
    conversion,
    fieldLabelError: (label) =>
      `field label not supported for ${apiVersion}, Kind=ResourceSlice: ${label}`,
  };
}

/** The ResourceSlice type as each resource.k8s.io version serves it. */
export const RESOURCE_SLICE_VERSIONS: ReadonlyMap<string, ResourceType> = new Map([
  ['v1', resourceSliceType],
  ['v1beta2', versioned('v1beta2', V1BETA2)],
  ['v1beta1', versioned('v1beta1', V1BETA1)],
]);
