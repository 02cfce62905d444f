import { listAt, objAt, resourceSliceSchemasFor } from './api-schemas';
import { releaseInfo } from './kube-release';
import type { KubeRelease } from './kube-release';
import { isJsonObject, normalize } from './object-schema';
import type { JsonObject, StructSchema } from './object-schema';
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
function hubToV1beta1(obj: JsonObject, v1beta1Schema: StructSchema): JsonObject {
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
  return normalize(v1beta1Schema, converted);
}

function versioned(
  hub: ResourceType,
  version: string,
  conversion: VersionConversion,
): ResourceType {
  const apiVersion = `resource.k8s.io/${version}`;
  return {
    ...hub,
    version,
    apiVersion,
    conversion,
    fieldLabelError: (label) =>
      `field label not supported for ${apiVersion}, Kind=ResourceSlice: ${label}`,
  };
}

/**
 * The ResourceSlice type as each resource.k8s.io version of `release` serves it: the fields the
 * release's types have (a newer field is unknown to an older server), v1's shape stored, the
 * same strategy for every version. v1beta2's ResourceSlice has v1's fields, names and order.
 */
export function resourceSliceVersions(release: KubeRelease): ReadonlyMap<string, ResourceType> {
  const schemas = resourceSliceSchemasFor(releaseInfo(release).minor);
  const hub: ResourceType = { ...resourceSliceType, schema: schemas.v1 };
  return new Map([
    ['v1', hub],
    [
      'v1beta2',
      versioned(hub, 'v1beta2', { schema: schemas.v1, toHub: (o) => o, fromHub: (o) => o }),
    ],
    [
      'v1beta1',
      versioned(hub, 'v1beta1', {
        schema: schemas.v1beta1,
        toHub: v1beta1ToHub,
        fromHub: (obj) => hubToV1beta1(obj, schemas.v1beta1),
      }),
    ],
  ]);
}

/** The ResourceSlice type as each resource.k8s.io version of kube-apiserver 1.34 serves it. */
export const RESOURCE_SLICE_VERSIONS: ReadonlyMap<string, ResourceType> =
  resourceSliceVersions('1.34');
