import type { V1ResourceSlice } from '@kubernetes/client-node';
// Not re-exported by the package root, but it is the serializer the generated API clients use;
// the package has no `exports` map, so this path is public in practice (pinned at 1.4.0).
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { RESOURCE_SLICE_API_VERSION, RESOURCE_SLICE_KIND } from '@slicekeeper/slices';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';

/**
 * Conversion between client-node's ResourceSlice models and the JSON shape that libs/slices
 * plans with. The models differ from the JSON in two ways: some properties are renamed (a device
 * attribute's `int` is `_int`, a capacity policy's `default` is `_default`) and timestamps
 * (`creationTimestamp`, a taint's `timeAdded`, managedFields' `time`) are `Date`s. client-node's
 * own `ObjectSerializer` knows the renames; the timestamps we handle ourselves so that a
 * list → plan → update round trip sends and returns exactly the text the API server stored.
 */

const MODEL_TYPE = 'V1ResourceSlice';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * A time as the API server writes a metav1.Time: RFC 3339 in UTC with whole seconds
 * (`2025-01-02T03:04:05Z`). Sub-second digits, which the server never sends for these fields,
 * are kept rather than silently dropped.
 */
export function formatKubeTime(date: Date): string {
  const iso = date.toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
}

/** A deep copy as plain JSON data: `Date`s become API server time strings, undefined fields go. */
function toPlainJson(value: unknown): unknown {
  if (value instanceof Date) return formatKubeTime(value);
  if (Array.isArray(value)) return value.map(toPlainJson);
  if (!isRecord(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field !== undefined) copy[key] = toPlainJson(field);
  }
  return copy;
}

/**
 * Puts the original strings back where the deserializer made `Date`s, so that the request body
 * carries the planner's timestamps verbatim. The API server is the judge of a malformed one (422,
 * terminal), not `new Date()`, which would read a zone-less time as local time.
 */
function restoreTimestamps(model: unknown, json: unknown): void {
  if (Array.isArray(model)) {
    model.forEach((item: unknown, index) => {
      restoreTimestamps(item, Array.isArray(json) ? (json[index] as unknown) : undefined);
    });
    return;
  }
  if (!isRecord(model) || model instanceof Date) return;
  const source = isRecord(json) ? json : {};
  for (const [key, value] of Object.entries(model)) {
    const original = source[key];
    if (value instanceof Date) {
      if (typeof original === 'string') model[key] = original;
    } else {
      restoreTimestamps(value, original);
    }
  }
}

/**
 * A slice as the API server returned it (a client-node model) in the JSON shape: exactly the
 * API server's JSON for every field client-node 1.4 knows. apiVersion and kind are always set,
 * because list items come without them.
 */
export function toStoredResourceSlice(model: V1ResourceSlice): StoredResourceSlice {
  const json = toPlainJson(ObjectSerializer.serialize(toPlainJson(model), MODEL_TYPE, ''));
  if (!isRecord(json) || !isRecord(json.metadata)) {
    throw new Error('the API server returned a ResourceSlice without metadata');
  }
  const { name, uid, resourceVersion } = json.metadata;
  if (typeof name !== 'string' || typeof uid !== 'string' || typeof resourceVersion !== 'string') {
    throw new Error('the API server returned a ResourceSlice without name, uid or resourceVersion');
  }
  const rest = { ...json };
  delete rest.apiVersion;
  delete rest.kind;
  // The shape is the API server's (checked above where it matters); the field types are
  // client-node's model of resource.k8s.io/v1, which StoredResourceSlice mirrors.
  return {
    apiVersion: RESOURCE_SLICE_API_VERSION,
    kind: RESOURCE_SLICE_KIND,
    ...rest,
  } as unknown as StoredResourceSlice;
}

/** A slice in the JSON shape as the client-node model its API methods take. */
export function toResourceSliceModel(slice: ResourceSlice): V1ResourceSlice {
  const model: unknown = ObjectSerializer.deserialize(slice, MODEL_TYPE, '');
  restoreTimestamps(model, slice);
  // deserialize builds a V1ResourceSlice; timestamps are strings again, which its serializer
  // passes through untouched (it only formats actual Dates).
  return model as V1ResourceSlice;
}
