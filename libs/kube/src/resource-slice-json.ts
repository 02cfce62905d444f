import {
  RESOURCE_SLICE_API_VERSION,
  RESOURCE_SLICE_KIND,
  storedSliceProblem,
} from '@slicekeeper/slices';
import type { StoredResourceSlice } from '@slicekeeper/slices';

/**
 * What the API server answers, checked where slicekeeper relies on it before the planner sees
 * it. Objects stay the API server's JSON as it sent it: every field, known to slicekeeper or
 * not, travels through a list → plan → update round trip unchanged.
 */

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A response that breaks the API's contract; classified as a transient 'error'. */
export class MalformedResponseError extends Error {
  override readonly name = 'MalformedResponseError';
}

/** The response body as JSON. */
export function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    const excerpt = body.length > 100 ? `${body.slice(0, 100)}…` : body;
    throw new MalformedResponseError(`the API server answered with no JSON: ${excerpt}`);
  }
}

/**
 * A ResourceSlice as the API server returned it, in the planner's JSON shape (checked by
 * `storedSliceProblem`). apiVersion and kind are always set, because list items come without
 * them.
 */
export function toStoredResourceSlice(json: unknown): StoredResourceSlice {
  const problem = storedSliceProblem(json);
  if (problem !== undefined) {
    throw new MalformedResponseError(`the API server returned a ResourceSlice ${problem}`);
  }
  // Checked where it matters; the rest is resource.k8s.io/v1 as the API server stores it.
  return {
    ...(json as Record<string, unknown>),
    apiVersion: RESOURCE_SLICE_API_VERSION,
    kind: RESOURCE_SLICE_KIND,
  } as unknown as StoredResourceSlice;
}

/** One page of a list: its items and the continue token ('' or absent: the last page). */
export interface ListPage {
  items: unknown[];
  continueToken: string | undefined;
  /** The list's `metadata.resourceVersion`: the state it shows (the same on every page). */
  resourceVersion: string | undefined;
}

/** A list response (`items`, `metadata.continue`). */
export function toListPage(json: unknown, kind: string): ListPage {
  if (!isRecord(json) || !Array.isArray(json.items)) {
    throw new MalformedResponseError(`the API server returned a ${kind} without items`);
  }
  const metadata = isRecord(json.metadata) ? json.metadata : {};
  const { continue: token, resourceVersion } = metadata;
  if (token !== undefined && typeof token !== 'string') {
    throw new MalformedResponseError(
      `the API server returned a ${kind} with a non-string continue`,
    );
  }
  return {
    items: json.items as unknown[],
    continueToken: token === '' ? undefined : token,
    resourceVersion:
      typeof resourceVersion === 'string' && resourceVersion !== '' ? resourceVersion : undefined,
  };
}

/**
 * metadata.name, uid and resourceVersion of an object (a Node's partial metadata), when all are
 * set.
 */
export function nodeMetadataOf(
  json: unknown,
): { name: string; uid: string; resourceVersion: string } | undefined {
  const node = nameAndUidOf(json);
  if (node === undefined || !isRecord(json) || !isRecord(json.metadata)) return undefined;
  const { resourceVersion } = json.metadata;
  return typeof resourceVersion === 'string' ? { ...node, resourceVersion } : undefined;
}

/** metadata.name and metadata.uid of an object (a Node's partial metadata), when both are set. */
export function nameAndUidOf(json: unknown): { name: string; uid: string } | undefined {
  if (!isRecord(json) || !isRecord(json.metadata)) return undefined;
  const { name, uid } = json.metadata;
  if (typeof name !== 'string' || typeof uid !== 'string' || uid === '') return undefined;
  return { name, uid };
}

/** Who owns the fields slicekeeper writes, in managedFields (every replica writes as it). */
export const FIELD_MANAGER = 'slicekeeper';

/**
 * Whether the last write to `object` was slicekeeper's, by its managedFields: every entry with
 * the latest `time` names {@link FIELD_MANAGER}. Any replica's write counts, and so does one
 * whose watch event arrived before its answer was recorded. When another manager wrote in the
 * same second (times have a one-second resolution), or managedFields are missing, the answer is
 * no: a needless sync is cheap, a missed repair is not.
 */
export function lastWrittenBySlicekeeper(object: { metadata: object }): boolean {
  const entries = (object.metadata as { managedFields?: unknown }).managedFields;
  if (!Array.isArray(entries) || entries.length === 0) return false;
  let latest = '';
  let managers = new Set<unknown>();
  for (const entry of entries as { manager?: unknown; time?: unknown }[]) {
    const time = typeof entry.time === 'string' ? entry.time : '';
    if (time > latest) {
      latest = time;
      managers = new Set([entry.manager]);
    } else if (time === latest) {
      managers.add(entry.manager);
    }
  }
  return latest !== '' && managers.size === 1 && managers.has(FIELD_MANAGER);
}
