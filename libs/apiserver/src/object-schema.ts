import { canonicalQuantity, QuantityError } from './quantity';

/** A JSON value as `JSON.parse` returns it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/**
 * The Go type of an API field, as far as the wire format needs it: how a JSON value decodes into
 * it (and which errors that raises), what its zero value is, how it is serialized back, and how
 * server-side apply merges and tracks it (`listType`, atomic structs).
 */
export type Schema =
  | { readonly t: 'string' }
  | { readonly t: 'int'; readonly goType: 'int64' | 'int32' }
  | { readonly t: 'bool' }
  | { readonly t: 'quantity' }
  | { readonly t: 'time' }
  | { readonly t: 'microtime' }
  | { readonly t: 'raw' }
  | StructSchema
  | MapSchema
  | ListSchema;

export interface FieldSchema {
  readonly name: string;
  readonly schema: Schema;
  /** `json:",omitempty"`: an empty value is left out (structs are never empty, as in Go). */
  readonly omitEmpty: boolean;
  /** A Go pointer: kept whenever set, even to an empty value; `null` when unset and not omitempty. */
  readonly pointer: boolean;
}

export interface StructSchema {
  readonly t: 'struct';
  readonly goName: string;
  readonly fields: readonly FieldSchema[];
  readonly byName: ReadonlyMap<string, FieldSchema>;
  /** `+structType=atomic`: replaced as a whole by apply and tracked as one field. */
  readonly atomic: boolean;
}

export interface MapSchema {
  readonly t: 'map';
  readonly values: Schema;
  readonly atomic: boolean;
}

export interface ListSchema {
  readonly t: 'list';
  readonly items: Schema;
  readonly listType: 'atomic' | 'map' | 'set';
  readonly keys: readonly string[];
  /**
   * An empty list decodes as empty, not as unset: for the fields whose validation tells a
   * non-nil empty slice from nil (`must not be empty if specified`). Such a list never reaches
   * storage, where the difference would be lost.
   */
  readonly keepEmpty?: boolean;
}

export const STRING: Schema = { t: 'string' };
export const INT64: Schema = { t: 'int', goType: 'int64' };
export const INT32: Schema = { t: 'int', goType: 'int32' };
export const BOOL: Schema = { t: 'bool' };
export const QUANTITY: Schema = { t: 'quantity' };
export const TIME: Schema = { t: 'time' };
/** `metav1.MicroTime`: RFC 3339 with exactly six fractional digits, in UTC. */
export const MICROTIME: Schema = { t: 'microtime' };
export const RAW: Schema = { t: 'raw' };

export type FieldSpec = [
  name: string,
  schema: Schema,
  flags?: '' | 'omitempty' | 'ptr' | 'omitempty,ptr',
];

export function struct(goName: string, specs: readonly FieldSpec[], atomic = false): StructSchema {
  const fields = specs.map(([name, schema, flags = '']) => ({
    name,
    schema,
    omitEmpty: flags.includes('omitempty'),
    pointer: flags.includes('ptr'),
  }));
  return { t: 'struct', goName, fields, byName: new Map(fields.map((f) => [f.name, f])), atomic };
}

export function mapOf(values: Schema, atomic = false): MapSchema {
  return { t: 'map', values, atomic };
}

/** An atomic list whose empty value is kept apart from unset ({@link ListSchema.keepEmpty}). */
export function atomicListKeepingEmpty(items: Schema): ListSchema {
  return { ...atomicList(items), keepEmpty: true };
}

export function atomicList(items: Schema): ListSchema {
  return { t: 'list', items, listType: 'atomic', keys: [] };
}

export function setList(items: Schema): ListSchema {
  return { t: 'list', items, listType: 'set', keys: [] };
}

export function mapList(items: Schema, keys: readonly string[]): ListSchema {
  return { t: 'list', items, listType: 'map', keys };
}

/** Sets an own property even when the key is `__proto__`, which plain assignment would not. */
export function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    target[key] = value;
  }
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A failure to decode the body into the Go type: the server answers 400, not 422. */
export class DecodeError extends Error {
  override readonly name = 'DecodeError';
}

/** What decoding found besides the value: unknown fields, which `fieldValidation` acts on. */
export interface DecodeReport {
  unknownFields: string[];
}

function jsonKind(value: JsonValue): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'object';
  return typeof value;
}

/**
 * Decoding state. Paths are kept as stacks and only joined when an error or unknown field needs
 * them: decoding is on every write's hot path.
 */
interface Ctx {
  report: DecodeReport;
  /** Server-side apply configurations: only what was sent, no zero values filled in. */
  partial: boolean;
  /** Go's UnmarshalTypeError context: the enclosing struct's Go name … */
  goStruct: string;
  /** … and the JSON field names from the root (no indexes, as encoding/json prints them). */
  goStack: string[];
  /** The strict-decoding path, with indexes (`spec`, `.devices`, `[0]`, `.foo`). */
  strictStack: string[];
}

function goPath(ctx: Ctx): string {
  return ctx.goStack.join('.');
}

function strictPath(ctx: Ctx): string {
  const joined = ctx.strictStack.join('');
  return joined.startsWith('.') ? joined.slice(1) : joined;
}

function typeError(ctx: Ctx, value: JsonValue, goType: string): DecodeError {
  const what =
    typeof value === 'number' && !Number.isInteger(value) ? `number ${value}` : jsonKind(value);
  return new DecodeError(
    `json: cannot unmarshal ${what === 'boolean' ? 'bool' : what} into Go struct field ${ctx.goStruct}.${goPath(ctx)} of type ${goType}`,
  );
}

function goTypeName(schema: Schema): string {
  switch (schema.t) {
    case 'string':
    case 'time':
      return schema.t === 'string' ? 'string' : 'v1.Time';
    case 'microtime':
      return 'v1.MicroTime';
    case 'int':
      return schema.goType;
    case 'bool':
      return 'bool';
    case 'quantity':
      return 'resource.Quantity';
    case 'raw':
      return 'json.RawMessage';
    case 'struct':
      return `v1.${schema.goName}`;
    case 'map':
      return `map[string]${goTypeName(schema.values)}`;
    case 'list':
      return `[]${goTypeName(schema.items)}`;
  }
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Formats a time as `metav1.Time` serializes it: RFC 3339, UTC, whole seconds. */
export function formatTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastFormatted.second) {
    lastFormatted.second = second;
    lastFormatted.text = `${new Date(second * 1000).toISOString().slice(0, 19)}Z`;
  }
  return lastFormatted.text;
}

/** Writes come in bursts within one second; formatting its timestamp once is enough. */
const lastFormatted = { second: Number.NaN, text: '' };

const CANONICAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

function decodeTime(value: string): string {
  if (CANONICAL_TIME.test(value)) return value;
  const match = RFC3339.exec(value);
  if (match === null) {
    throw new DecodeError(
      `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(value)} as "2006"`,
    );
  }
  return formatTime(Date.parse(value));
}

const RFC3339_MICRO =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})$/;

/**
 * `MicroTime.UnmarshalJSON`: Go's `time.Parse` with layout `2006-01-02T15:04:05.000000Z07:00`
 * wants exactly six fractional digits; the value is written back in UTC.
 */
function decodeMicroTime(value: string): string {
  const match = RFC3339_MICRO.exec(value);
  if (match === null) {
    // Go names the first element of the layout it could not match.
    const rest = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(value) ? value.slice(19) : undefined;
    const what =
      rest === undefined
        ? `${JSON.stringify(value)} as "2006"`
        : /^\.\d{6}/.test(rest)
          ? `${JSON.stringify(rest.slice(7))} as "Z07:00"`
          : `${JSON.stringify(rest)} as ".000000"`;
    throw new DecodeError(
      `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse ${what}`,
    );
  }
  const micros = match[7] ?? '000000';
  if (match[8] === 'Z') return value;
  const wholeSeconds = Date.parse(`${value.slice(0, 19)}${match[8] ?? 'Z'}`);
  return `${new Date(wholeSeconds).toISOString().slice(0, 19)}.${micros}Z`;
}

/** Formats a time as `metav1.MicroTime` serializes it (the milliseconds of `ms`, UTC). */
export function formatMicroTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}000Z`;
}

/** The zero value Go serializes for a field that was not set. */
export function zeroValue(schema: Schema): JsonValue {
  switch (schema.t) {
    case 'string':
      return '';
    case 'int':
      return 0;
    case 'bool':
      return false;
    case 'quantity':
      return '0';
    case 'struct': {
      const out: JsonObject = {};
      for (const field of schema.fields) {
        if (field.pointer) {
          if (!field.omitEmpty) out[field.name] = null;
        } else if (!field.omitEmpty || field.schema.t === 'struct') {
          out[field.name] = zeroValue(field.schema);
        }
      }
      return out;
    }
    default:
      return null;
  }
}

function isEmpty(value: JsonValue): boolean {
  if (value === null || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return false;
}

function decodeValue(schema: Schema, value: JsonValue, ctx: Ctx): JsonValue {
  switch (schema.t) {
    case 'string':
      if (typeof value !== 'string') throw typeError(ctx, value, 'string');
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) {
        throw typeError(ctx, value, schema.goType);
      }
      if (schema.goType === 'int32' && (value > 2147483647 || value < -2147483648)) {
        throw new DecodeError(
          `json: cannot unmarshal number ${value} into Go struct field ${ctx.goStruct}.${goPath(ctx)} of type int32`,
        );
      }
      return value;
    case 'bool':
      if (typeof value !== 'boolean') throw typeError(ctx, value, 'bool');
      return value;
    case 'quantity':
      try {
        return canonicalQuantity(typeof value === 'string' ? value.trim() : JSON.stringify(value));
      } catch (error) {
        if (error instanceof QuantityError) throw new DecodeError(error.message);
        throw error;
      }
    case 'time':
      if (typeof value !== 'string') throw typeError(ctx, value, 'string');
      return decodeTime(value);
    case 'microtime':
      if (typeof value !== 'string') throw typeError(ctx, value, 'string');
      return decodeMicroTime(value);
    case 'raw':
      return value;
    case 'struct':
      return decodeStruct(schema, value, ctx);
    case 'map': {
      if (!isJsonObject(value)) throw typeError(ctx, value, goTypeName(schema));
      const keys = Object.keys(value).sort();
      if (keys.length === 0) return null;
      const out: JsonObject = {};
      for (const key of keys) {
        const item = value[key] ?? null;
        ctx.goStack.push(key);
        ctx.strictStack.push(`.${key}`);
        setOwn(
          out,
          key,
          item === null ? zeroValue(schema.values) : decodeValue(schema.values, item, ctx),
        );
        ctx.goStack.pop();
        ctx.strictStack.pop();
      }
      return out;
    }
    case 'list': {
      if (!Array.isArray(value)) throw typeError(ctx, value, goTypeName(schema));
      if (value.length === 0) return schema.keepEmpty === true ? [] : null;
      const items: JsonValue[] = new Array<JsonValue>(value.length);
      for (let i = 0; i < value.length; i++) {
        const item = value[i] ?? null;
        ctx.strictStack.push(`[${i}]`);
        items[i] = item === null ? zeroValue(schema.items) : decodeValue(schema.items, item, ctx);
        ctx.strictStack.pop();
      }
      return items;
    }
  }
}

function decodeStruct(schema: StructSchema, value: JsonValue, ctx: Ctx): JsonObject {
  if (!isJsonObject(value)) throw typeError(ctx, value, `v1.${schema.goName}`);
  const decoded = new Map<string, JsonValue>();
  const outerStruct = ctx.goStruct;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const field = schema.byName.get(key);
    if (field === undefined) {
      ctx.strictStack.push(`.${key}`);
      ctx.report.unknownFields.push(strictPath(ctx));
      ctx.strictStack.pop();
      continue;
    }
    const item = value[key] ?? null;
    if (item === null) continue;
    ctx.goStruct = schema.goName;
    ctx.goStack.push(key);
    ctx.strictStack.push(`.${key}`);
    decoded.set(key, decodeValue(field.schema, item, ctx));
    ctx.goStack.pop();
    ctx.strictStack.pop();
  }
  ctx.goStruct = outerStruct;
  const out: JsonObject = {};
  for (const field of schema.fields) {
    const got = decoded.get(field.name);
    if (ctx.partial) {
      if (got !== undefined) out[field.name] = got;
      continue;
    }
    if (got === undefined || got === null) {
      if (field.pointer) {
        if (!field.omitEmpty) out[field.name] = null;
      } else if (!field.omitEmpty || field.schema.t === 'struct') {
        out[field.name] = zeroValue(field.schema);
      }
      continue;
    }
    const keptEmpty = field.schema.t === 'list' && field.schema.keepEmpty === true;
    if (
      field.omitEmpty &&
      !field.pointer &&
      field.schema.t !== 'struct' &&
      isEmpty(got) &&
      !keptEmpty
    )
      continue;
    out[field.name] = got;
  }
  return out;
}

/**
 * Decodes a JSON value into the schema's type and serializes it back as Go would: fields in
 * struct order, map keys sorted, zero values for unset non-omitempty fields, empty lists and maps
 * as unset (etcd's protobuf round trip loses the difference), quantities and times canonical.
 * @throws DecodeError with Go's message when a value has the wrong type.
 */
export function decodeObject(
  schema: StructSchema,
  value: JsonValue,
  report: DecodeReport,
  partial = false,
): JsonObject {
  return decodeStruct(schema, value, {
    report,
    partial,
    goStruct: schema.goName,
    goStack: [],
    strictStack: [],
  });
}

/** Re-normalizes an object the server built itself (no unknown fields expected). */
export function normalize(schema: StructSchema, value: JsonObject): JsonObject {
  return decodeObject(schema, value, { unknownFields: [] });
}

/**
 * Puts the top-level fields of an object the server has just modified back in struct order and
 * re-normalizes its metadata (where the server adds uid, timestamps and managed fields). The rest
 * was decoded already; a full `normalize` would cost the write path a second decode.
 */
export function reorder(schema: StructSchema, obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const field of schema.fields) {
    const value = obj[field.name];
    if (value === undefined) continue;
    out[field.name] =
      field.name === 'metadata' && field.schema.t === 'struct' && isJsonObject(value)
        ? normalize(field.schema, value)
        : value;
  }
  return out;
}
