import { isJsonObject, setOwn } from './object-schema';
import type { JsonObject, JsonValue, Schema } from './object-schema';

/**
 * The three classic patch formats: RFC 7386 JSON merge patch, RFC 6902 JSON patch and Kubernetes
 * strategic merge patch (schema-aware: lists with a merge key merge item by item, atomic lists
 * such as `spec.devices` are replaced whole).
 */

export class PatchError extends Error {
  override readonly name = 'PatchError';
  /** 400 for a malformed patch document, 422 when a well-formed patch does not apply. */
  constructor(
    message: string,
    readonly code: 400 | 422,
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

const DIRECTIVE_PREFIXES = ['$setElementOrder/', '$deleteFromPrimitiveList/', '$retainKeys'];

function schemaOfField(schema: Schema | undefined, key: string): Schema | undefined {
  if (schema === undefined) return undefined;
  if (schema.t === 'struct') return schema.byName.get(key)?.schema;
  if (schema.t === 'map') return schema.values;
  return undefined;
}

function mergeKeyOf(schema: Schema | undefined): string | undefined {
  return schema?.t === 'list' && schema.listType === 'map' ? schema.keys[0] : undefined;
}

/** Kubernetes strategic merge patch for the typed objects this server stores. */
export function applyStrategicMergePatch(
  target: JsonValue,
  patch: JsonValue,
  schema: Schema | undefined,
): JsonValue {
  if (!isJsonObject(patch))
    throw new PatchError('unable to find api field in struct for the patch', 400);
  if (patch.$patch === 'replace') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(patch)) if (k !== '$patch') setOwn(out, k, v);
    return out;
  }
  if (patch.$patch === 'delete') return {};
  const out: JsonObject = isJsonObject(target) ? structuredClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch' || key === '$retainKeys') continue;
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const current = out[field];
      if (Array.isArray(current) && Array.isArray(value)) {
        const drop = new Set(value.map((v) => JSON.stringify(v)));
        out[field] = current.filter((v) => !drop.has(JSON.stringify(v)));
      }
      continue;
    }
    if (DIRECTIVE_PREFIXES.some((p) => key.startsWith(p))) continue;
    const fieldSchema = schemaOfField(schema, key);
    if (value === null) {
      Reflect.deleteProperty(out, key);
      continue;
    }
    const current = out[key];
    if (
      isJsonObject(value) &&
      fieldSchema?.t !== 'list' &&
      !(fieldSchema?.t === 'struct' && fieldSchema.atomic)
    ) {
      setOwn(out, key, applyStrategicMergePatch(current ?? null, value, fieldSchema));
    } else if (
      Array.isArray(value) &&
      fieldSchema?.t === 'list' &&
      fieldSchema.listType !== 'atomic'
    ) {
      setOwn(out, key, mergeList(Array.isArray(current) ? current : [], value, fieldSchema));
    } else {
      setOwn(out, key, structuredClone(value));
    }
  }
  return out;
}

function mergeList(
  current: JsonValue[],
  patch: JsonValue[],
  schema: Extract<Schema, { t: 'list' }>,
): JsonValue[] {
  const mergeKey = mergeKeyOf(schema);
  if (mergeKey === undefined) {
    const out = [...current];
    for (const item of patch)
      if (!out.some((x) => JSON.stringify(x) === JSON.stringify(item))) out.push(item);
    return out;
  }
  if (patch.some((item) => isJsonObject(item) && item.$patch === 'replace')) {
    return patch.filter((item) => !(isJsonObject(item) && item.$patch === 'replace'));
  }
  const out = structuredClone(current);
  for (const item of patch) {
    if (!isJsonObject(item)) continue;
    const keyValue = item[mergeKey];
    const index = out.findIndex(
      (x) => isJsonObject(x) && JSON.stringify(x[mergeKey]) === JSON.stringify(keyValue),
    );
    if (item.$patch === 'delete') {
      if (index >= 0) out.splice(index, 1);
      continue;
    }
    if (index >= 0) out[index] = applyStrategicMergePatch(out[index] ?? null, item, schema.items);
    else out.push(applyStrategicMergePatch(null, item, schema.items));
  }
  return out;
}
