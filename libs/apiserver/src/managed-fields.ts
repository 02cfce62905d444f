import { formatTime, isJsonObject } from './object-schema';
import type { JsonObject, JsonValue, Schema, StructSchema } from './object-schema';
import { jsonEqual } from './api-schemas';

/**
 * Field ownership (`metadata.managedFields`) as structured-merge-diff tracks it: sets of field
 * paths per manager and operation, serialized as FieldsV1. Update operations take the fields they
 * changed; apply operations own exactly the fields they sent and conflict with other owners of a
 * field whose value they change.
 */

/** A field path: elements (`f:name`, `k:{"uid":"…"}`, `v:"x"`) joined by NUL. */
export type PathKey = string;
const SEP = '\u0000';

/** Members of a field set, with the value at each leaf (undefined for inner members). */
export type FieldSet = Map<PathKey, JsonValue | undefined>;

export interface ManagerEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string | undefined;
  subresource: string;
  fields: Set<PathKey>;
}

/**
 * 'apply': structured-merge-diff's `ToFieldSet` (map and list nodes are not members themselves).
 * 'update': the shape an Update's comparison yields, where a map or list node added as a whole
 * is a member too (the `".": {}` entries of Update-managed fields).
 */
type Mode = 'apply' | 'update';

function listItemElement(schema: Extract<Schema, { t: 'list' }>, item: JsonValue): string {
  if (schema.listType === 'set') return `v:${JSON.stringify(item)}`;
  const key: JsonObject = {};
  for (const k of [...schema.keys].sort()) key[k] = isJsonObject(item) ? (item[k] ?? null) : null;
  return `k:${JSON.stringify(key)}`;
}

function walk(
  schema: Schema,
  value: JsonValue,
  path: PathKey,
  out: FieldSet,
  mode: Mode,
  isField: boolean,
): void {
  const member = (v: JsonValue) => out.set(path, v);
  switch (schema.t) {
    case 'struct': {
      if (schema.atomic || !isJsonObject(value)) {
        member(value);
        return;
      }
      // An empty struct is what Go's zero value serializes to: the unstructured form leaves it
      // out, so it is not a field anyone set.
      const keys = Object.keys(value);
      if (keys.length === 0) return;
      for (const key of keys) {
        const field = schema.byName.get(key);
        const child = path === '' ? `f:${key}` : `${path}${SEP}f:${key}`;
        const v = value[key] ?? null;
        if (field === undefined) continue;
        walk(field.schema, v, child, out, mode, true);
      }
      return;
    }
    case 'map': {
      if (schema.atomic || !isJsonObject(value) || Object.keys(value).length === 0) {
        member(value);
        return;
      }
      if (mode === 'update' && isField) out.set(path, undefined);
      for (const [key, v] of Object.entries(value)) {
        const child = `${path}${SEP}f:${key}`;
        if (isJsonObject(v) && schema.values.t === 'struct' && !schema.values.atomic) {
          out.set(child, undefined);
          walk(schema.values, v, child, out, mode, false);
        } else {
          out.set(child, v);
        }
      }
      return;
    }
    case 'list': {
      if (schema.listType === 'atomic' || !Array.isArray(value) || value.length === 0) {
        member(value);
        return;
      }
      if (mode === 'update') out.set(path, undefined);
      for (const item of value) {
        const child = `${path}${SEP}${listItemElement(schema, item)}`;
        const itemSchema = schema.items;
        if (itemSchema.t === 'struct' && !itemSchema.atomic && isJsonObject(item)) {
          out.set(child, undefined);
          walk(itemSchema, item, child, out, mode, false);
        } else {
          out.set(child, item);
        }
      }
      return;
    }
    default:
      member(value);
  }
}

/** Fields the server owns or derives; never tracked (structured-merge-diff's stripped set). */
const ALWAYS_IGNORED = [
  'f:apiVersion',
  'f:kind',
  `f:metadata${SEP}f:name`,
  `f:metadata${SEP}f:namespace`,
  `f:metadata${SEP}f:creationTimestamp`,
  `f:metadata${SEP}f:selfLink`,
  `f:metadata${SEP}f:uid`,
  `f:metadata${SEP}f:generation`,
  `f:metadata${SEP}f:managedFields`,
  `f:metadata${SEP}f:resourceVersion`,
  `f:metadata${SEP}f:deletionTimestamp`,
  `f:metadata${SEP}f:deletionGracePeriodSeconds`,
];

function ignored(path: PathKey, extra: readonly string[]): boolean {
  for (const prefix of ALWAYS_IGNORED) {
    if (path === prefix || path.startsWith(prefix + SEP)) return true;
  }
  for (const prefix of extra) {
    if (path === prefix || path.startsWith(prefix + SEP)) return true;
  }
  return false;
}

/**
 * The field set of an object. `resetFields` are top-level fields a (sub)resource ignores, such as
 * a Node's `status` on the main resource.
 */
export function fieldSetOf(
  schema: StructSchema,
  obj: JsonObject,
  mode: Mode,
  resetFields: readonly string[],
): FieldSet {
  const raw: FieldSet = new Map();
  walk(schema, obj, '', raw, mode, false);
  const extra = resetFields.map((f) => `f:${f}`);
  for (const path of [...raw.keys()]) if (ignored(path, extra)) raw.delete(path);
  // The `metadata` struct itself never counts; an empty metadata would otherwise be a member.
  raw.delete('f:metadata');
  return raw;
}

/** FieldsV1 JSON for a set of paths: `".": {}` marks a member that also has members below it. */
export function toFieldsV1(paths: Iterable<PathKey>): JsonObject {
  interface TreeNode {
    member: boolean;
    children: Map<string, TreeNode>;
  }
  const root: TreeNode = { member: false, children: new Map() };
  for (const path of paths) {
    let node = root;
    for (const element of path.split(SEP)) {
      let next = node.children.get(element);
      if (next === undefined) {
        next = { member: false, children: new Map() };
        node.children.set(element, next);
      }
      node = next;
    }
    node.member = true;
  }
  const render = (node: TreeNode): JsonObject => {
    const out: JsonObject = {};
    if (node.member && node.children.size > 0) out['.'] = {};
    for (const key of [...node.children.keys()].sort()) {
      const child = node.children.get(key);
      if (child !== undefined) out[key] = render(child);
    }
    return out;
  };
  return render(root);
}

export function fromFieldsV1(value: JsonValue | undefined): Set<PathKey> {
  const out = new Set<PathKey>();
  const visit = (node: JsonObject, prefix: string) => {
    for (const [key, child] of Object.entries(node)) {
      if (key === '.' || !isJsonObject(child)) continue;
      const path = prefix === '' ? key : `${prefix}${SEP}${key}`;
      const keys = Object.keys(child);
      if (keys.length === 0 || keys.includes('.')) out.add(path);
      visit(child, path);
    }
  };
  if (isJsonObject(value)) visit(value, '');
  return out;
}

/** Reads `metadata.managedFields`; undefined when absent or malformed (the live ones are used). */
export function decodeManagedFields(meta: JsonObject | undefined): ManagerEntry[] | undefined {
  const list = meta?.managedFields;
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const entries: ManagerEntry[] = [];
  for (const item of list) {
    if (!isJsonObject(item)) return undefined;
    const operation = item.operation;
    if (operation !== 'Apply' && operation !== 'Update') return undefined;
    entries.push({
      manager: typeof item.manager === 'string' ? item.manager : '',
      operation,
      apiVersion: typeof item.apiVersion === 'string' ? item.apiVersion : '',
      time: typeof item.time === 'string' ? item.time : undefined,
      subresource: typeof item.subresource === 'string' ? item.subresource : '',
      fields: fromFieldsV1(item.fieldsV1),
    });
  }
  return entries;
}

/** Serializes entries in the server's order: operation, time, manager, apiVersion, subresource. */
export function encodeManagedFields(entries: readonly ManagerEntry[]): JsonObject[] {
  const sorted = entries
    .filter((e) => e.fields.size > 0)
    .sort(
      (a, b) =>
        cmp(a.operation, b.operation) ||
        cmp(a.time ?? '', b.time ?? '') ||
        cmp(a.manager, b.manager) ||
        cmp(a.apiVersion, b.apiVersion) ||
        cmp(a.subresource, b.subresource),
    );
  return sorted.map((e) => {
    const out: JsonObject = {
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
    };
    if (e.time !== undefined) out.time = e.time;
    out.fieldsType = 'FieldsV1';
    out.fieldsV1 = toFieldsV1(e.fields);
    if (e.subresource !== '') out.subresource = e.subresource;
    return out;
  });
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface TrackingOptions {
  schema: StructSchema;
  manager: string;
  apiVersion: string;
  subresource: string;
  resetFields: readonly string[];
  nowMs: number;
}

/**
 * The managed fields after an Update operation: the manager takes every field it added or
 * changed (others lose them), and fields that disappeared are owned by no one.
 */
export function trackUpdate(
  entries: readonly ManagerEntry[],
  oldObj: JsonObject | undefined,
  newObj: JsonObject,
  options: TrackingOptions,
): ManagerEntry[] {
  const oldSet =
    oldObj === undefined
      ? new Map<PathKey, string | undefined>()
      : fieldSetOf(options.schema, oldObj, 'update', options.resetFields);
  const newSet = fieldSetOf(options.schema, newObj, 'update', options.resetFields);
  const changed = new Set<PathKey>();
  for (const [path, value] of newSet) {
    if (!oldSet.has(path) || (value !== undefined && !jsonEqual(oldSet.get(path), value)))
      changed.add(path);
  }
  const removed = new Set<PathKey>();
  for (const path of oldSet.keys()) if (!newSet.has(path)) removed.add(path);
  if (changed.size === 0 && removed.size === 0)
    return entries.map((e) => ({ ...e, fields: new Set(e.fields) }));
  const out: ManagerEntry[] = [];
  let own: ManagerEntry | undefined;
  for (const entry of entries) {
    const fields = new Set([...entry.fields].filter((p) => !removed.has(p)));
    const isOwn =
      entry.manager === options.manager &&
      entry.operation === 'Update' &&
      entry.subresource === options.subresource;
    if (isOwn) {
      own = { ...entry, fields };
      continue;
    }
    for (const p of changed) fields.delete(p);
    out.push({ ...entry, fields });
  }
  const ownFields = own?.fields ?? new Set<PathKey>();
  for (const p of changed) ownFields.add(p);
  out.push({
    manager: options.manager,
    operation: 'Update',
    apiVersion: options.apiVersion,
    time: changed.size > 0 ? formatTime(options.nowMs) : own?.time,
    subresource: options.subresource,
    fields: ownFields,
  });
  return out;
}

export interface Conflict {
  manager: ManagerEntry;
  path: PathKey;
}

/** Renders a path as structured-merge-diff prints it: `.spec.pool.generation`, `[uid="…"]`. */
export function printPath(path: PathKey): string {
  return path
    .split(SEP)
    .map((element) => {
      if (element.startsWith('f:')) return `.${element.slice(2)}`;
      if (element.startsWith('k:')) {
        const key = JSON.parse(element.slice(2)) as JsonObject;
        return `[${Object.entries(key)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(',')}]`;
      }
      if (element.startsWith('v:')) return `[=${element.slice(2)}]`;
      return element;
    })
    .join('');
}

function printManager(entry: ManagerEntry): string {
  const name = JSON.stringify(entry.manager);
  const withSub =
    entry.subresource === ''
      ? name
      : `${name} with subresource ${JSON.stringify(entry.subresource)}`;
  if (entry.operation === 'Update') {
    return entry.time === undefined
      ? `${withSub} using ${entry.apiVersion}`
      : `${withSub} using ${entry.apiVersion} at ${entry.time}`;
  }
  return withSub;
}

/** apimachinery's apply conflict message and causes. */
export function conflictReport(conflicts: readonly Conflict[]): {
  message: string;
  causes: { reason: string; message: string; field: string }[];
} {
  const causes = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.manager)}`,
    field: printPath(c.path),
  }));
  const first = conflicts[0];
  if (conflicts.length === 1 && first !== undefined) {
    return {
      message: `Apply failed with 1 conflict: conflict with ${printManager(first.manager)}: ${printPath(first.path)}`,
      causes,
    };
  }
  const byManager = new Map<string, string[]>();
  for (const c of conflicts) {
    const key = printManager(c.manager);
    byManager.set(key, [...(byManager.get(key) ?? []), printPath(c.path)]);
  }
  const lines: string[] = [];
  for (const key of [...byManager.keys()].sort()) {
    lines.push(`conflicts with ${key}:`);
    for (const p of byManager.get(key) ?? []) lines.push(`- ${p}`);
  }
  return {
    message: `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`,
    causes,
  };
}

// ---------------------------------------------------------------------------------------------
// Server-side apply

/** Merges an applied configuration into the live object (structured-merge-diff's merge). */
export function mergeApplied(
  schema: Schema,
  live: JsonValue | undefined,
  applied: JsonValue,
): JsonValue {
  if (live === undefined || live === null) return structuredClone(applied);
  switch (schema.t) {
    case 'struct': {
      if (schema.atomic || !isJsonObject(live) || !isJsonObject(applied))
        return structuredClone(applied);
      const out: JsonObject = structuredClone(live);
      for (const [key, value] of Object.entries(applied)) {
        const field = schema.byName.get(key);
        out[key] =
          field === undefined
            ? structuredClone(value)
            : mergeApplied(field.schema, live[key], value);
      }
      return out;
    }
    case 'map': {
      if (schema.atomic || !isJsonObject(live) || !isJsonObject(applied))
        return structuredClone(applied);
      const out: JsonObject = structuredClone(live);
      for (const [key, value] of Object.entries(applied))
        out[key] = mergeApplied(schema.values, live[key], value);
      return out;
    }
    case 'list': {
      if (schema.listType === 'atomic' || !Array.isArray(live) || !Array.isArray(applied))
        return structuredClone(applied);
      const out = structuredClone(live);
      for (const item of applied) {
        const element = listItemElement(schema, item);
        const index = out.findIndex((existing) => listItemElement(schema, existing) === element);
        if (index < 0) out.push(structuredClone(item));
        else out[index] = mergeApplied(schema.items, out[index], item);
      }
      return out;
    }
    default:
      return structuredClone(applied);
  }
}

/** Removes the field at `path` from `obj` (pruning what an applier stopped sending). */
export function removePath(schema: Schema, obj: JsonValue, path: PathKey): void {
  const elements = path.split(SEP);
  let node: JsonValue = obj;
  let nodeSchema: Schema = schema;
  for (let i = 0; i < elements.length; i++) {
    const element = elements[i] ?? '';
    const last = i === elements.length - 1;
    if (element.startsWith('f:') && isJsonObject(node)) {
      const key = element.slice(2);
      const childSchema: Schema | undefined =
        nodeSchema.t === 'struct'
          ? nodeSchema.byName.get(key)?.schema
          : nodeSchema.t === 'map'
            ? nodeSchema.values
            : undefined;
      if (childSchema === undefined) return;
      if (last) {
        Reflect.deleteProperty(node, key);
        return;
      }
      const next: JsonValue | undefined = node[key];
      if (next === undefined) return;
      node = next;
      nodeSchema = childSchema;
    } else if (
      (element.startsWith('k:') || element.startsWith('v:')) &&
      Array.isArray(node) &&
      nodeSchema.t === 'list'
    ) {
      const listSchema = nodeSchema;
      const index = node.findIndex((item) => listItemElement(listSchema, item) === element);
      if (index < 0) return;
      if (last) {
        node.splice(index, 1);
        return;
      }
      node = node[index] ?? null;
      nodeSchema = listSchema.items;
    } else {
      return;
    }
  }
}

export interface ApplyResult {
  object: JsonObject;
  entries: ManagerEntry[];
  conflicts: Conflict[];
}

/**
 * Server-side apply of `applied` by `manager` onto `live`. Conflicts are reported, not resolved,
 * unless `force`, which takes the fields from their other owners.
 */
export function serverSideApply(
  entries: readonly ManagerEntry[],
  live: JsonObject,
  applied: JsonObject,
  force: boolean,
  options: TrackingOptions,
): ApplyResult {
  const { schema, resetFields } = options;
  const appliedSet = fieldSetOf(schema, applied, 'apply', resetFields);
  const liveSet = fieldSetOf(schema, live, 'apply', resetFields);
  const merged = mergeApplied(schema, live, applied);
  const object = isJsonObject(merged) ? merged : structuredClone(live);
  const conflicts: Conflict[] = [];
  const isOwn = (e: ManagerEntry) =>
    e.manager === options.manager &&
    e.operation === 'Apply' &&
    e.subresource === options.subresource;
  for (const entry of entries) {
    if (isOwn(entry)) continue;
    for (const path of entry.fields) {
      const appliedValue = appliedSet.get(path);
      if (!appliedSet.has(path) || appliedValue === undefined) continue;
      const liveValue = liveSet.get(path);
      if (liveValue === undefined || !jsonEqual(liveValue, appliedValue))
        conflicts.push({ manager: entry, path });
    }
  }
  if (conflicts.length > 0 && !force) return { object: live, entries: [...entries], conflicts };
  const previous = entries.find(isOwn);
  const out: ManagerEntry[] = [];
  for (const entry of entries) {
    if (isOwn(entry)) continue;
    const fields = new Set(entry.fields);
    for (const c of conflicts) if (c.manager === entry) fields.delete(c.path);
    out.push({ ...entry, fields });
  }
  // Prune what this manager applied before and no longer does, unless someone else owns it.
  if (previous !== undefined) {
    for (const path of previous.fields) {
      if (appliedSet.has(path)) continue;
      if (out.some((e) => e.fields.has(path))) continue;
      removePath(schema, object, path);
    }
  }
  const appliedPaths = new Set(appliedSet.keys());
  const changed =
    !jsonEqual(object, live) ||
    previous === undefined ||
    !sameSet(previous.fields, appliedPaths) ||
    conflicts.length > 0;
  out.push({
    manager: options.manager,
    operation: 'Apply',
    apiVersion: options.apiVersion,
    time: changed ? formatTime(options.nowMs) : previous.time,
    subresource: options.subresource,
    fields: appliedPaths,
  });
  return { object, entries: out, conflicts: [] };
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
