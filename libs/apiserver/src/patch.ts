import { goQuote } from './field-errors';
import { goFormatValue } from './go-json';
import { isJsonObject, setOwn } from './object-schema';
import type { JsonObject, JsonValue, Schema } from './object-schema';

/**
 * The three classic patch formats: RFC 7386 JSON merge patch, RFC 6902 JSON patch and Kubernetes
 * strategic merge patch (schema-aware: lists with a merge key merge item by item, atomic lists
 * such as `spec.devices` are replaced whole, and merged lists are ordered as apimachinery's
 * `strategicpatch` orders them).
 */

export class PatchError extends Error {
  override readonly name = 'PatchError';
  /**
   * 400 for a malformed patch document, 422 when a well-formed patch does not apply, 500 for the
   * strategic merge patch failures the real server does not turn into a Status either (a list
   * item without its merge key, an unknown `$patch`): it answers them as internal errors.
   */
  constructor(
    message: string,
    readonly code: 400 | 422 | 500,
  ) {
    super(message);
  }
}

/** RFC 7386. */
export function applyMergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return structuredClone(patch);
  const out: JsonObject = isJsonObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) Reflect.deleteProperty(out, key);
    else setOwn(out, key, applyMergePatch(out[key] ?? null, value));
  }
  return out;
}

function unescapePointer(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/'))
    throw new PatchError(`JSON pointer must be empty or start with a "/"`, 422);
  return pointer.slice(1).split('/').map(unescapePointer);
}

interface Located {
  parent: JsonObject | JsonValue[];
  key: string;
}

function locate(doc: JsonValue, tokens: string[], op: string, pointer: string): Located {
  let node: JsonValue = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const token = tokens[i] ?? '';
    let next: JsonValue | undefined;
    if (Array.isArray(node)) {
      next = /^\d+$/.test(token) ? node[Number(token)] : undefined;
    } else if (isJsonObject(node)) {
      next = Object.hasOwn(node, token) ? node[token] : undefined;
    }
    if (next === undefined || next === null || typeof next !== 'object') {
      throw new PatchError(
        `${op} operation does not apply: doc is missing path: "${pointer}": missing value`,
        422,
      );
    }
    node = next;
  }
  if (!Array.isArray(node) && !isJsonObject(node)) {
    throw new PatchError(
      `${op} operation does not apply: doc is missing path: "${pointer}": missing value`,
      422,
    );
  }
  return { parent: node, key: tokens[tokens.length - 1] ?? '' };
}

function getAt(doc: JsonValue, pointer: string, op: string): JsonValue {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return doc;
  const { parent, key } = locate(doc, tokens, op, pointer);
  const value = Array.isArray(parent)
    ? /^\d+$/.test(key)
      ? parent[Number(key)]
      : undefined
    : Object.hasOwn(parent, key)
      ? parent[key]
      : undefined;
  if (value === undefined)
    throw new PatchError(`${op} operation does not apply: doc is missing key: ${pointer}`, 422);
  return value;
}

function removeAt(doc: JsonValue, pointer: string, op: string): JsonValue {
  const tokens = parsePointer(pointer);
  const { parent, key } = locate(doc, tokens, op, pointer);
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!/^\d+$/.test(key) || index >= parent.length) {
      throw new PatchError(
        `${op} operation does not apply: doc is missing path: "${pointer}": missing value`,
        422,
      );
    }
    return parent.splice(index, 1)[0] ?? null;
  }
  if (!Object.hasOwn(parent, key)) {
    throw new PatchError(
      `${op} operation does not apply: doc is missing path: "${pointer}": missing value`,
      422,
    );
  }
  const value = parent[key] ?? null;
  Reflect.deleteProperty(parent, key);
  return value;
}

function addAt(doc: JsonValue, pointer: string, value: JsonValue, op: string): JsonValue {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return value;
  const { parent, key } = locate(doc, tokens, op, pointer);
  if (Array.isArray(parent)) {
    if (key === '-') parent.push(value);
    else {
      const index = Number(key);
      if (!/^\d+$/.test(key) || index > parent.length) {
        throw new PatchError(
          `${op} operation does not apply: doc is missing path: "${pointer}": missing value`,
          422,
        );
      }
      parent.splice(index, 0, value);
    }
  } else {
    setOwn(parent, key, value);
  }
  return doc;
}

/** RFC 6902, with evanphx/json-patch's error messages. */
export function applyJsonPatch(target: JsonValue, patch: JsonValue): JsonValue {
  if (!Array.isArray(patch)) {
    throw new PatchError(
      'json: cannot unmarshal object into Go value of type jsonpatch.Patch',
      400,
    );
  }
  let doc = structuredClone(target);
  for (const operation of patch) {
    if (!isJsonObject(operation))
      throw new PatchError(
        'json: cannot unmarshal value into Go value of type jsonpatch.Operation',
        400,
      );
    const op = typeof operation.op === 'string' ? operation.op : '';
    const path = typeof operation.path === 'string' ? operation.path : undefined;
    if (path === undefined)
      throw new PatchError(
        `${op} operation does not apply: doc is missing path: "": missing value`,
        422,
      );
    const value = operation.value;
    switch (op) {
      case 'add':
        if (value === undefined)
          throw new PatchError('add operation does not apply: doc is missing value', 422);
        doc = addAt(doc, path, structuredClone(value), op);
        break;
      case 'remove':
        removeAt(doc, path, op);
        break;
      case 'replace': {
        if (value === undefined)
          throw new PatchError('replace operation does not apply: doc is missing value', 422);
        const tokens = parsePointer(path);
        if (tokens.length === 0) {
          doc = structuredClone(value);
          break;
        }
        getAt(doc, path, op);
        const { parent, key } = locate(doc, tokens, op, path);
        if (Array.isArray(parent)) parent[Number(key)] = structuredClone(value);
        else setOwn(parent, key, structuredClone(value));
        break;
      }
      case 'move': {
        const from = typeof operation.from === 'string' ? operation.from : '';
        const moved = removeAt(doc, from, op);
        doc = addAt(doc, path, moved, op);
        break;
      }
      case 'copy': {
        const from = typeof operation.from === 'string' ? operation.from : '';
        doc = addAt(doc, path, structuredClone(getAt(doc, from, op)), op);
        break;
      }
      case 'test': {
        const actual = getAt(doc, path, op);
        if (JSON.stringify(actual) !== JSON.stringify(value ?? null)) {
          throw new PatchError(`testing value ${path} failed: test failed`, 422);
        }
        break;
      }
      default:
        throw new PatchError(`Unexpected kind: ${op}`, 422);
    }
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch: apimachinery's `strategicpatch.StrategicMergeMapPatch` (v0.36, apply
// side) with `MergeParallelList` and `IgnoreUnmatchedNulls`, as the patch handler runs it. A
// list merges when its field's patch strategy is `merge`; this server reads that from the schema:
// a `map` list merges by its first key, a `set` list merges its scalars, an `atomic` list is
// replaced.

const DIRECTIVE = '$patch';
const SET_ELEMENT_ORDER = '$setElementOrder';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList';
const RETAIN_KEYS = '$retainKeys';

/** What `reflect.TypeOf` tells apart in a decoded patch. */
type Kind = 'map' | 'slice' | 'string' | 'int64' | 'float64' | 'bool' | 'nil';

function kindOf(value: JsonValue): Kind {
  if (value === null) return 'nil';
  if (Array.isArray(value)) return 'slice';
  if (typeof value === 'object') return 'map';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int64' : 'float64';
  return typeof value === 'string' ? 'string' : 'bool';
}

const GO_TYPE: Record<Kind, string> = {
  map: 'map[string]interface {}',
  slice: '[]interface {}',
  string: 'string',
  int64: 'int64',
  float64: 'float64',
  bool: 'bool',
  nil: '%!s(<nil>)',
};

function internal(message: string): PatchError {
  return new PatchError(message, 500);
}

/** `mergepatch.ErrBadArgType`. */
function badArgType(expected: Kind, actual: JsonValue): PatchError {
  return internal(`expected a ${GO_TYPE[expected]}, but received a ${GO_TYPE[kindOf(actual)]}`);
}

/** `mergepatch.ErrNoMergeKey`. */
function noMergeKey(item: JsonObject, mergeKey: string): PatchError {
  return internal(`map: ${goFormatValue(item)} does not contain declared merge key: ${mergeKey}`);
}

/** `mergepatch.ErrBadPatchType`: `%s` of the directive's value. */
function badPatchType(directive: JsonValue, item: JsonObject): PatchError {
  const shown =
    typeof directive === 'string'
      ? directive
      : directive === null
        ? '%!s(<nil>)'
        : `%!s(${GO_TYPE[kindOf(directive)]}=${goFormatValue(directive)})`;
  return internal(`unknown patch type: ${shown} in map: ${goFormatValue(item)}`);
}

/** The field's type, as `LookupPatchMetadataForStruct` finds it; undefined below raw fields. */
function fieldSchema(schema: Schema | undefined, key: string): Schema | undefined {
  if (schema === undefined || schema.t === 'raw') return undefined;
  if (schema.t === 'map') return schema.values;
  if (schema.t === 'struct') {
    const field = schema.byName.get(key);
    if (field === undefined) {
      throw internal(
        `unable to find api field in struct ${schema.goName} for the json field ${goQuote(key)}`,
      );
    }
    return field.schema;
  }
  return undefined;
}

interface SliceStrategy {
  merge: boolean;
  /** Empty for a list of scalars. */
  mergeKey: string;
  items: Schema | undefined;
}

function sliceStrategy(schema: Schema | undefined): SliceStrategy {
  if (schema?.t !== 'list') return { merge: false, mergeKey: '', items: undefined };
  return {
    merge: schema.listType !== 'atomic',
    mergeKey: schema.listType === 'map' ? (schema.keys[0] ?? '') : '',
    items: schema.items,
  };
}

/** `extractKey`: the field a `$directive/<field>` key names. @throws PatchError 400 */
function extractKey(key: string, prefix: string): string {
  const slash = key.indexOf('/');
  if (slash < 0 || key.slice(0, slash) !== prefix) {
    throw new PatchError(
      prefix === SET_ELEMENT_ORDER
        ? 'invalid patch format of setElementOrder list'
        : 'invalid patch format of primitive list',
      400,
    );
  }
  return key.slice(slash + 1);
}

/** Drops `null` values everywhere below a value that is new to the object. */
function discardNullValues(value: JsonValue): void {
  if (Array.isArray(value)) {
    for (const item of value) discardNullValues(item);
  } else if (isJsonObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (item === null) Reflect.deleteProperty(value, key);
      else discardNullValues(item);
    }
  }
}

/** `removeDirectives`: a map carrying `$patch` is dropped, wherever it is. */
function removeDirectives(value: JsonValue): { value: JsonValue; keep: boolean } {
  if (Array.isArray(value)) {
    const out: JsonValue[] = [];
    for (const item of value) {
      const cleaned = removeDirectives(item);
      if (cleaned.keep) out.push(cleaned.value);
    }
    return { value: out, keep: true };
  }
  if (isJsonObject(value)) {
    if (Object.hasOwn(value, DIRECTIVE)) return { value: null, keep: false };
    for (const [key, item] of Object.entries(value)) {
      const cleaned = removeDirectives(item);
      if (cleaned.keep) setOwn(value, key, cleaned.value);
      else Reflect.deleteProperty(value, key);
    }
  }
  return { value, keep: true };
}

/** Takes a patch value as is (the field is new, or of another type than the patch's). */
function takePatchValue(original: JsonObject, key: string, value: JsonValue): void {
  discardNullValues(value);
  const cleaned = removeDirectives(value);
  if (cleaned.keep) setOwn(original, key, cleaned.value);
  else Reflect.deleteProperty(original, key);
}

/** Kubernetes strategic merge patch for the typed objects this server stores. */
export function applyStrategicMergePatch(
  target: JsonValue,
  patch: JsonValue,
  schema: Schema | undefined,
): JsonValue {
  if (!isJsonObject(patch))
    throw new PatchError('unable to find api field in struct for the patch', 400);
  const original = isJsonObject(target) ? structuredClone(target) : {};
  return mergeMap(original, structuredClone(patch), schema);
}

/** `mergeMap`; both arguments are the caller's copies and are modified. */
function mergeMap(original: JsonObject, patch: JsonObject, schema: Schema | undefined): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE] ?? null;
    if (directive === 'replace') {
      Reflect.deleteProperty(patch, DIRECTIVE);
      return patch;
    }
    if (directive === 'delete') return {};
    throw badPatchType(directive, patch);
  }
  applyRetainKeys(original, patch);
  mergeOrderedLists(original, patch, schema);
  for (const [patchKey, patchValue] of Object.entries(patch)) {
    let key = patchKey;
    let isDeleteList = false;
    if (patchKey.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      key = extractKey(patchKey, DELETE_FROM_PRIMITIVE_LIST);
      isDeleteList = true;
    }
    if (patchValue === null) {
      Reflect.deleteProperty(original, key);
      continue;
    }
    const current = Object.hasOwn(original, key) ? (original[key] ?? null) : undefined;
    if (current === undefined || kindOf(current) !== kindOf(patchValue)) {
      if (!isDeleteList) takePatchValue(original, key, patchValue);
      continue;
    }
    if (isJsonObject(current) && isJsonObject(patchValue)) {
      setOwn(original, key, mergeMap(current, patchValue, fieldSchema(schema, key)));
    } else if (Array.isArray(current) && Array.isArray(patchValue)) {
      const strategy = sliceStrategy(fieldSchema(schema, key));
      setOwn(
        original,
        key,
        strategy.merge || isDeleteList
          ? mergeSlice(current, patchValue, strategy, isDeleteList)
          : patchValue,
      );
    } else {
      takePatchValue(original, key, patchValue);
    }
  }
  return original;
}

/** `applyRetainKeysDirective`: keys the directive does not list are cleared from the original. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const retain = patch[RETAIN_KEYS];
  Reflect.deleteProperty(patch, RETAIN_KEYS);
  const invalid = () => new PatchError('invalid patch format of retainKeys', 400);
  if (!Array.isArray(retain)) throw invalid();
  const keep = new Set(retain.filter((k) => typeof k === 'string'));
  for (const [key, value] of Object.entries(patch)) {
    if (
      value === null ||
      key.startsWith(DELETE_FROM_PRIMITIVE_LIST) ||
      key.startsWith(SET_ELEMENT_ORDER)
    )
      continue;
    if (!keep.has(key)) throw invalid();
  }
  for (const key of Object.keys(original)) {
    if (!keep.has(key)) Reflect.deleteProperty(original, key);
  }
}

/**
 * `mergePatchIntoOriginal`: each `$setElementOrder/<field>` list is merged together with the
 * patch's `<field>` and put in the order the directive gives (which a client's two-way patch
 * generates to keep its own order); the field is then done.
 */
function mergeOrderedLists(
  original: JsonObject,
  patch: JsonObject,
  schema: Schema | undefined,
): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = patch[key] ?? null;
    Reflect.deleteProperty(patch, key);
    if (!Array.isArray(order)) throw badArgType('slice', order);
    const field = extractKey(key, SET_ELEMENT_ORDER);
    const foundOriginal = Object.hasOwn(original, field);
    const foundPatch = Object.hasOwn(patch, field);
    const originalList = foundOriginal ? (original[field] ?? null) : [];
    const patchList = foundPatch ? (patch[field] ?? null) : [];
    if (!Array.isArray(originalList)) throw badArgType('slice', originalList);
    if (!Array.isArray(patchList)) throw badArgType('slice', patchList);
    const strategy = sliceStrategy(fieldSchema(schema, field));
    validateAgainstOrder(patchList, order, strategy.mergeKey);
    let merged: JsonValue[];
    if (foundOriginal && foundPatch) {
      merged = strategy.merge ? mergeSlice(originalList, patchList, strategy, false) : patchList;
    } else if (foundOriginal) {
      merged = originalList;
    } else if (foundPatch) {
      merged = removeDirectives(patchList).value as JsonValue[];
    } else {
      continue;
    }
    const { inPatch, serverOnly } = partition(merged, order, strategy.mergeKey);
    const kind = elementKind([originalList, patchList]);
    setOwn(
      original,
      field,
      normalizeElementOrder(inPatch, serverOnly, order, originalList, strategy.mergeKey, kind),
    );
    Reflect.deleteProperty(patch, field);
  }
}

/** `mergeKeyValueEqual`. */
function sameKey(left: JsonValue, right: JsonValue, mergeKey: string): boolean {
  if (mergeKey === '') return left === right;
  if (!isJsonObject(left)) throw badArgType('map', left);
  if (!isJsonObject(right)) throw badArgType('map', right);
  if (!Object.hasOwn(left, mergeKey)) throw noMergeKey(left, mergeKey);
  if (!Object.hasOwn(right, mergeKey)) throw noMergeKey(right, mergeKey);
  return left[mergeKey] === right[mergeKey];
}

/** `validatePatchWithSetOrderList`: the patch's items appear in the directive, in its order. */
function validateAgainstOrder(patchList: JsonValue[], order: JsonValue[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  const items = mergeKey === '' ? patchList : splitDeletions(patchList).keep;
  let p = 0;
  let o = 0;
  while (p < items.length && o < order.length) {
    const item = items[p] ?? null;
    if (isJsonObject(item) && Object.hasOwn(item, DIRECTIVE)) {
      p++;
      continue;
    }
    if (sameKey(item, order[o] ?? null, mergeKey)) p++;
    o++;
  }
  if (p < items.length && o >= order.length) {
    throw internal(
      `The order in patch list:\n${goFormatValue(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goFormatValue(order)}\n`,
    );
  }
}

/** `sliceElementType`: every item of the lists is of one type, and not a list. */
function elementKind(lists: readonly JsonValue[][]): Kind {
  let kind: Kind | undefined;
  for (const list of lists) {
    for (const item of list) {
      const current = kindOf(item);
      if (kind === undefined) {
        if (current === 'slice') throw new PatchError('lists of lists are not supported', 422);
        kind = current;
      } else if (kind !== current) {
        throw internal(`list element types are not identical: ${goFormatValue(lists)}`);
      }
    }
  }
  if (kind === undefined) throw internal('no elements in any of the given slices');
  return kind;
}

/** `mergeSlice`. */
function mergeSlice(
  original: JsonValue[],
  patch: JsonValue[],
  strategy: SliceStrategy,
  isDeleteList: boolean,
): JsonValue[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind([original, patch]);
  const { mergeKey } = strategy;
  let serverOrder = original;
  let patchItems = patch;
  let merged: JsonValue[];
  if (kind !== 'map') {
    if (isDeleteList) {
      const drop = new Set(patch);
      return original.filter((item) => !drop.has(item));
    }
    merged = deduplicateScalars([...original, ...patch]);
  } else {
    if (mergeKey === '') throw internal('cannot merge lists without merge key');
    ({ original: serverOrder, patch: patchItems } = applyListDirectives(original, patch, mergeKey));
    merged = [...serverOrder];
    for (const item of patchItems) {
      const entry = item as JsonObject;
      if (!Object.hasOwn(entry, mergeKey)) throw noMergeKey(entry, mergeKey);
      const index = indexByKey(merged, mergeKey, entry[mergeKey] ?? null);
      if (index >= 0) {
        merged[index] = mergeMap(merged[index] as JsonObject, entry, strategy.items);
      } else {
        merged.push(entry);
      }
    }
  }
  const { inPatch, serverOnly } = partition(merged, patchItems, mergeKey);
  return normalizeElementOrder(inPatch, serverOnly, patchItems, serverOrder, mergeKey, kind);
}

/** `mergeSliceWithSpecialElements`: `$patch: delete` items remove, `$patch: replace` replaces. */
function applyListDirectives(
  original: JsonValue[],
  patch: JsonValue[],
  mergeKey: string,
): { original: JsonValue[]; patch: JsonValue[] } {
  const plain: JsonValue[] = [];
  let kept = original;
  let replace = false;
  for (const item of patch) {
    const entry = item as JsonObject;
    if (!Object.hasOwn(entry, DIRECTIVE)) {
      plain.push(entry);
      continue;
    }
    const directive = entry[DIRECTIVE] ?? null;
    if (directive === 'delete') {
      if (!Object.hasOwn(entry, mergeKey)) throw noMergeKey(entry, mergeKey);
      const value = entry[mergeKey] ?? null;
      kept = kept.filter(
        (x) => !(isJsonObject(x) && Object.hasOwn(x, mergeKey) && x[mergeKey] === value),
      );
    } else if (directive === 'replace') {
      replace = true;
    } else if (directive === 'merge') {
      throw internal('merging lists cannot yet be specified in the patch');
    } else {
      throw badPatchType(directive, entry);
    }
  }
  return replace ? { original: plain, patch: [] } : { original: kept, patch: plain };
}

/** `findMapInSliceBasedOnKeyValue`, the index only. */
function indexByKey(list: readonly JsonValue[], mergeKey: string, value: JsonValue): number {
  for (let i = 0; i < list.length; i++) {
    const item = list[i] ?? null;
    if (!isJsonObject(item)) throw internal(`value for key ${i} is not a map.`);
    if (Object.hasOwn(item, mergeKey) && item[mergeKey] === value) return i;
  }
  return -1;
}

/** Go's `deduplicateScalars`, including the order it leaves (the last item fills a gap). */
function deduplicateScalars(items: JsonValue[]): JsonValue[] {
  const out = [...items];
  let last = out.length - 1;
  for (let i = 0; i < last; i++) {
    for (let j = i + 1; j <= last; j++) {
      if (out[i] === out[j]) {
        out[j] = out[last] ?? null;
        out.length = last;
        last--;
        j--;
      }
    }
  }
  return out;
}

/** `partitionMapsByPresentInList` / `partitionPrimitivesByPresentInList`. */
function partition(
  merged: readonly JsonValue[],
  by: readonly JsonValue[],
  mergeKey: string,
): { inPatch: JsonValue[]; serverOnly: JsonValue[] } {
  const inPatch: JsonValue[] = [];
  const serverOnly: JsonValue[] = [];
  for (const item of merged) {
    let found: boolean;
    if (mergeKey === '') {
      found = by.includes(item);
    } else {
      if (!isJsonObject(item)) throw badArgType('map', item);
      if (!Object.hasOwn(item, mergeKey)) throw noMergeKey(item, mergeKey);
      found = indexByKey(by, mergeKey, item[mergeKey] ?? null) >= 0;
    }
    (found ? inPatch : serverOnly).push(item);
  }
  return { inPatch, serverOnly };
}

/** `extractToDeleteItems`. */
function splitDeletions(list: readonly JsonValue[]): { keep: JsonValue[]; deletions: JsonValue[] } {
  const keep: JsonValue[] = [];
  const deletions: JsonValue[] = [];
  for (const item of list) {
    if (!isJsonObject(item)) throw badArgType('map', item);
    (item[DIRECTIVE] === 'delete' ? deletions : keep).push(item);
  }
  return { keep, deletions };
}

/** `index`: where an item (by merge key, or by value for scalars) is in a list; -1 if absent. */
function positionIn(
  list: readonly JsonValue[],
  item: JsonValue,
  mergeKey: string,
  kind: Kind,
): number {
  if (kind !== 'map') return list.indexOf(item);
  const value = isJsonObject(item) ? item[mergeKey] : undefined;
  return list.findIndex((x) => isJsonObject(x) && x[mergeKey] === value);
}

/** `normalizeSliceOrder`: sorts by the position in `order`; deletion directives go last. */
function sortByOrder(
  items: JsonValue[],
  order: readonly JsonValue[],
  mergeKey: string,
  kind: Kind,
): JsonValue[] {
  let sortable = items;
  let deletions: JsonValue[] = [];
  if (kind === 'map') {
    for (const list of [items, order]) {
      for (const item of list) {
        if (!isJsonObject(item)) throw badArgType('map', item);
        if (!Object.hasOwn(item, mergeKey)) throw noMergeKey(item, mergeKey);
      }
    }
    ({ keep: sortable, deletions } = splitDeletions(items));
  }
  const sorted = [...sortable].sort((a, b) => {
    const ia = positionIn(order, a, mergeKey, kind);
    const ib = positionIn(order, b, mergeKey, kind);
    return ia >= 0 && ib >= 0 ? ia - ib : 0;
  });
  return [...sorted, ...deletions];
}

/**
 * `normalizeElementOrder`: the patch's items in the patch's (or the directive's) order, the
 * server's other items in their order, interleaved as `mergeSortedSlice` does. An item new to
 * the list has no place in the server's order and so comes before the server's items: a patch
 * that adds a condition puts it first.
 */
function normalizeElementOrder(
  inPatch: JsonValue[],
  serverOnly: JsonValue[],
  patchOrder: readonly JsonValue[],
  serverOrder: readonly JsonValue[],
  mergeKey: string,
  kind: Kind,
): JsonValue[] {
  const right = sortByOrder(inPatch, patchOrder, mergeKey, kind);
  const left = sortByOrder(serverOnly, serverOrder, mergeKey, kind);
  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++] ?? null);
    else if (j >= right.length) out.push(left[i++] ?? null);
    else {
      const li = positionIn(serverOrder, left[i] ?? null, mergeKey, kind);
      const ri = positionIn(serverOrder, right[j] ?? null, mergeKey, kind);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++] ?? null);
      else out.push(right[j++] ?? null);
    }
  }
  return out;
}
