import { LineCounter, isMap, isScalar, isSeq, parse as parseYaml, parseDocument } from 'yaml';
import type { Node as YamlNode } from 'yaml';
import { apiErrors } from './api-error';
import { FieldPath, fieldError, goQuote } from './field-errors';
import type { FieldError } from './field-errors';
import { goJsonSyntaxError, hasDuplicateKeys, jsonTree } from './go-json';
import type { JsonNode } from './go-json';
import { JSON_TYPE, wireSchema } from './handler-context';
import type { ApiRequest, HandlerContext } from './handler-context';
import { DecodeError, decodeObject, isJsonObject } from './object-schema';
import type { JsonObject, JsonValue, Schema, StructSchema } from './object-schema';

/**
 * How request bodies and options come in: media types, the decoder's errors, unknown fields
 * under `fieldValidation`, and the Create/Update/Patch/DeleteOptions checks.
 */

export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

export interface Decoded {
  object: JsonObject;
  warnings: string[];
  /** Paths of the fields the type lacks (`spec.x`), in the order the document has them. */
  unknownFields: string[];
}

/** A strict decoding error's text for one unknown field (sigs.k8s.io/json). */
export function unknownFieldText(path: string): string {
  return `unknown field "${path}"`;
}

/** sigs.k8s.io/json keeps at most this many strict errors (`saveStrictError`). */
const MAX_STRICT_ERRORS = 100;

function childPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** A Go `interface{}`: any JSON value, every key of an object known. */
const UNTYPED = { t: 'untyped' } as const;

/** What a JSON value decodes into, as far as strict decoding looks: a schema or `interface{}`. */
type Shape =
  | Schema
  | typeof UNTYPED
  | { readonly t: 'fields'; readonly fields: ReadonlyMap<string, Shape> }
  | { readonly t: 'sequence'; readonly items: Shape };

/** `handlers.jsonPatchOp`, what a JSON patch's operations are strictly decoded into. */
const JSON_PATCH_OP: Shape = {
  t: 'fields',
  fields: new Map<string, Shape>([
    ['op', { t: 'string' }],
    ['path', { t: 'string' }],
    ['from', { t: 'string' }],
    ['value', UNTYPED],
  ]),
};

/** A JSON patch: `[]handlers.jsonPatchOp`. */
const JSON_PATCH: Shape = { t: 'sequence', items: JSON_PATCH_OP };

/** The shape of the items of an array of shape `into`; nothing when it is no list. */
function itemShape(into: Shape): Shape | undefined {
  if (into.t === 'list' || into.t === 'sequence') return into.items;
  return into.t === 'untyped' ? UNTYPED : undefined;
}

/** The shape of an object member `key` of a value of shape `into`; nothing for an unknown one. */
function memberShape(into: Shape, key: string): Shape | undefined {
  switch (into.t) {
    case 'untyped':
      return UNTYPED;
    case 'map':
      return into.values;
    case 'struct':
      return into.byName.get(key)?.schema;
    case 'fields':
      return into.fields.get(key);
    default:
      return undefined;
  }
}

/**
 * The strict errors of a JSON document as sigs.k8s.io/json's `UnmarshalStrict` finds them while
 * decoding it into a Go type (`internal/golang/encoding/json/decode.go`, `object`): in document
 * order, an unknown struct field at each occurrence (its value is skipped, so nothing inside it is
 * reported) and a known field or map key at its second occurrence; equal messages once; at most
 * 100. A key both unknown and repeated is only unknown, as upstream's field validation tests
 * note. Opaque values (`json.RawMessage`) are not looked into. At the top of an object body
 * (`typeMeta`) apiVersion and kind are the inlined TypeMeta's fields.
 */
function strictErrorsOf(tree: JsonNode, shape: Shape, typeMeta: boolean): string[] {
  const errors = new Set<string>();
  const save = (text: string) => {
    if (errors.size < MAX_STRICT_ERRORS) errors.add(text);
  };
  const walk = (node: JsonNode, into: Shape, path: string, top: boolean): void => {
    if (node.kind === 'array') {
      const items = itemShape(into);
      if (items !== undefined)
        node.items.forEach((item, i) => {
          walk(item, items, `${path}[${i}]`, false);
        });
      return;
    }
    if (node.kind !== 'object') return;
    if (!['struct', 'map', 'untyped', 'fields'].includes(into.t)) return;
    const seen = new Set<string>();
    for (const [key, value] of node.members) {
      const here = childPath(path, key);
      const member =
        top && (key === 'apiVersion' || key === 'kind') ? UNTYPED : memberShape(into, key);
      if (member === undefined) {
        save(unknownFieldText(here));
        continue;
      }
      if (seen.has(key)) save(`duplicate field "${here}"`);
      seen.add(key);
      walk(value, member, here, false);
    }
  };
  walk(tree, shape, '', typeMeta);
  return [...errors];
}

/** The strict errors of an object body of a type with this schema ({@link strictErrorsOf}). */
export function strictJsonErrors(schema: StructSchema, tree: JsonNode): string[] {
  return strictErrorsOf(tree, schema, true);
}

/**
 * The strict errors of a patch document itself (`handlers/patch.go`), which come before those of
 * the patched object: a JSON merge or strategic merge patch is strictly decoded into an untyped
 * map, so only its repeated keys are errors; a JSON patch into `[]jsonPatchOp`, each error
 * prefixed `json patch ` (`json patch unknown field "[0].foo"`). Nothing under Ignore, nor for an
 * apply configuration ({@link applyStrictWarnings}). `patch` is a text `JSON.parse` has accepted.
 */
export function patchDocumentStrictErrors(
  patch: string,
  contentType: string,
  validation: FieldValidation,
): string[] {
  if (validation === 'Ignore') return [];
  if (contentType === 'application/json-patch+json')
    return strictErrorsOf(jsonTree(patch), JSON_PATCH, false).map((e) => `json patch ${e}`);
  if (
    contentType === 'application/merge-patch+json' ||
    contentType === 'application/strategic-merge-patch+json'
  )
    return strictErrorsOf(jsonTree(patch), UNTYPED, false);
  return [];
}

/**
 * An apply configuration's repeated keys (`handlers/patch.go` `applyPatcher`): once the apply has
 * succeeded, the YAML is decoded again with `yaml.UnmarshalStrict`; under Strict that is a 400
 * "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors: …", under
 * Warn one warning per repeated key. @returns the warnings @throws ApiError 400
 */
export function applyStrictWarnings(config: string, validation: FieldValidation): string[] {
  if (validation === 'Ignore') return [];
  const repeated = yamlStrictError(config);
  if (repeated === undefined) return [];
  const error = `error converting YAML to JSON: ${repeated}`;
  if (validation === 'Strict') throw apiErrors.badRequest(`error strict decoding YAML: ${error}`);
  return strictWarnings([error]);
}

/**
 * go-yaml v2's strict errors for a YAML document (`yaml.UnmarshalStrict` into an untyped value,
 * as sigs.k8s.io/yaml's `YAMLToJSONStrict` runs it): `line N: key "x" already set in map` for
 * each repeated key, N the line of the repeated key's value, reported once that value is decoded
 * (so repeats inside it come first). The error text is `yaml: unmarshal errors:` and a line each,
 * or nothing when no key repeats.
 */
export function yamlStrictError(text: string): string | undefined {
  const lines = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: false, lineCounter: lines });
  const found: string[] = [];
  const walk = (node: unknown): void => {
    if (isSeq(node)) {
      for (const item of node.items) walk(item);
      return;
    }
    if (!isMap(node)) return;
    const seen = new Set<unknown>();
    for (const pair of node.items) {
      walk(pair.value);
      const key: unknown = isScalar(pair.key) ? pair.key.value : pair.key;
      if (seen.has(key)) {
        const at = (pair.value as YamlNode | null)?.range ?? (pair.key as YamlNode).range;
        const shown = typeof key === 'string' ? goQuote(key) : String(key);
        found.push(`line ${lines.linePos(at?.[0] ?? 0).line}: key ${shown} already set in map`);
      }
      seen.add(key);
    }
  };
  walk(doc.contents);
  return found.length === 0 ? undefined : ['yaml: unmarshal errors:', ...found].join('\n  ');
}

const YAML_ERRORS_PREFIXES = [
  'yaml: unmarshal errors:\n',
  'error converting YAML to JSON: yaml: unmarshal errors:\n',
];

/**
 * The `Warning` texts of strict errors (`handlers/rest.go` `addStrictDecodingWarnings` and
 * `parseYAMLWarnings`): a YAML error gives one warning per line, without its heading.
 */
export function strictWarnings(errors: readonly string[]): string[] {
  return errors.flatMap((error) => {
    const prefix = YAML_ERRORS_PREFIXES.find((p) => error.startsWith(p));
    if (prefix === undefined) return [error];
    return error
      .slice(prefix.length)
      .split('\n')
      .map((line) => line.trim());
  });
}

const MAP_PATCH_TYPES = ['application/merge-patch+json', 'application/strategic-merge-patch+json'];

/**
 * A JSON value as Go marshals a `map[string]interface{}`: keys sorted at every level (a YAML
 * document converted by sigs.k8s.io/yaml, a merged patch).
 */
function sortedKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (!isJsonObject(value)) return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value).sort()) out[key] = sortedKeys(value[key] ?? null);
  return out;
}

/** Parses a request body by its content type. @throws ApiError (400 or 415) */
export function parseBody(body: Buffer, contentType: string, kindForErrors: string): JsonValue {
  const text = body.toString('utf8');
  const yamlLike =
    contentType === 'application/yaml' || contentType === 'application/apply-patch+yaml';
  if (yamlLike) {
    try {
      // The non-strict conversion keeps the last of repeated keys; strict decoding reports them.
      return (parseYaml(text, { uniqueKeys: false }) ?? null) as JsonValue;
    } catch (error) {
      throw apiErrors.badRequest(
        `error converting YAML to JSON: yaml: ${error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)}`,
      );
    }
  }
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    const summary =
      text.length === 0
        ? '<empty>'
        : text.startsWith('{')
          ? text.length > 30
            ? `${text.slice(0, 30)} ...`
            : text
          : Buffer.from(text.slice(0, 30)).toString('hex');
    throw apiErrors.badRequest(
      `the object provided is unrecognized (must be of type ${kindForErrors}): couldn't get version/kind; json parse error: ${goJsonSyntaxError(text)} (${summary})`,
    );
  }
}

/** The request's directive; an empty one is `Warn` (`handlers/rest.go` `fieldValidation`). */
export function fieldValidation(req: ApiRequest): FieldValidation {
  const value = req.query.get('fieldValidation') ?? '';
  return value === 'Ignore' || value === 'Strict' ? value : 'Warn';
}

const FIELD_VALIDATION_VALUES = ['', 'Ignore', 'Strict', 'Warn'];

/** Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const GO_PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** `ValidateFieldManager`: its length, then each unprintable rune at its byte position. */
function fieldManagerErrors(manager: string): FieldError[] {
  const path = FieldPath.root('fieldManager');
  const errs: FieldError[] = [];
  if (Buffer.byteLength(manager) > 128) errs.push(fieldError.tooLong(path, 128));
  let position = 0;
  for (const rune of manager) {
    if (!GO_PRINTABLE.test(rune)) {
      const code = (rune.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
      errs.push(
        fieldError.invalid(path, manager, `invalid character U+${code} (at position ${position})`),
      );
    }
    position += Buffer.byteLength(rune);
  }
  return errs;
}

/**
 * The checks of `ValidateCreateOptions`, `ValidateUpdateOptions`, `ValidatePatchOptions` and
 * `ValidateDeleteOptions` (`apimachinery/pkg/apis/meta/v1/validation/validation.go`), in their
 * order: the apply-only rules, `fieldManager`, `dryRun`, `fieldValidation`. Delete options have
 * no field manager or directive. @throws ApiError 422
 */
export function checkOptions(req: ApiRequest, optionsKind: string, isApply = false): void {
  const errs: FieldError[] = [];
  const isDelete = optionsKind === 'DeleteOptions';
  const manager = req.query.get('fieldManager') ?? '';
  if (req.verb === 'patch') {
    if (!isApply && req.query.has('force'))
      errs.push(
        fieldError.forbidden(FieldPath.root('force'), 'may not be specified for non-apply patch'),
      );
    if (isApply && manager === '')
      errs.push(fieldError.required(FieldPath.root('fieldManager'), 'is required for apply patch'));
  }
  if (!isDelete) errs.push(...fieldManagerErrors(manager));
  const dryRun = req.query.getAll('dryRun');
  if (dryRun.some((value) => value !== 'All'))
    errs.push(fieldError.notSupported(FieldPath.root('dryRun'), dryRun, ['All']));
  const directive = req.query.get('fieldValidation') ?? '';
  if (!isDelete && !FIELD_VALIDATION_VALUES.includes(directive))
    errs.push(
      fieldError.notSupported(
        FieldPath.root('fieldValidation'),
        directive,
        FIELD_VALIDATION_VALUES,
      ),
    );
  if (errs.length > 0)
    throw apiErrors.invalid({ group: 'meta.k8s.io', name: optionsKind }, '', errs);
}

/** Decodes a whole object of the request's type (POST/PUT bodies, patched objects). */
export function decode(
  ctx: HandlerContext,
  req: ApiRequest,
  value: JsonValue,
  validation: FieldValidation,
  partial = false,
): Decoded {
  const { type } = req;
  if (!isJsonObject(value)) {
    throw apiErrors.badRequest(
      `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: json: cannot unmarshal ${Array.isArray(value) ? 'array' : typeof value} into Go value of type ${type.group === '' ? 'v1' : (type.group.split('.')[0] ?? '')}.${type.kind}`,
    );
  }
  const apiVersion = typeof value.apiVersion === 'string' ? value.apiVersion : '';
  const kind = typeof value.kind === 'string' ? value.kind : '';
  if (apiVersion !== '' && apiVersion !== type.apiVersion) {
    throw apiErrors.badRequest(
      `the API version in the data (${apiVersion}) does not match the expected API version (${type.apiVersion})`,
    );
  }
  if (kind !== '' && kind !== type.kind) {
    throw apiErrors.badRequest(
      `${kind} in version "${type.version}" cannot be handled as a ${type.kind}: no kind "${kind}" is registered for version "${type.apiVersion}" in scheme "pkg/api/legacyscheme/scheme.go:30"`,
    );
  }
  let body: JsonObject = {};
  for (const [k, v] of Object.entries(value)) if (k !== 'apiVersion' && k !== 'kind') body[k] = v;
  // A merge or strategic merge patch produces a Go map (`jsonpatch.MergePatch`,
  // `StrategicMergeMapPatch`), whose unknown fields the decoder meets in sorted key order.
  if (req.verb === 'patch' && MAP_PATCH_TYPES.includes(req.contentType))
    body = sortedKeys(body) as JsonObject;
  const report = { unknownFields: [] as string[] };
  let object: JsonObject;
  try {
    object = decodeObject(wireSchema(type), body, report, partial);
  } catch (error) {
    if (error instanceof DecodeError) {
      throw apiErrors.badRequest(
        `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: ${error.message}`,
      );
    }
    throw error;
  }
  const strict =
    validation === 'Ignore'
      ? []
      : strictDecodingErrors(req, report.unknownFields.map(unknownFieldText));
  if (strict.length > 0 && validation === 'Strict') {
    throw apiErrors.badRequest(
      `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${strict.join(', ')}`,
    );
  }
  // An apply configuration is converted and defaulted only once merged (see apply()).
  if (!partial) {
    if (type.conversion !== undefined) object = type.conversion.toHub(object);
    type.applyDefaults(object, ctx.now());
  }
  return {
    object,
    warnings: validation === 'Warn' ? strictWarnings(strict) : [],
    unknownFields: report.unknownFields,
  };
}

function bodyContentType(req: ApiRequest): string {
  return req.contentType === '' ? JSON_TYPE : req.contentType;
}

/**
 * The strict errors of a decoded object, in the serializer's order (`runtime/serializer/json`
 * `unmarshal`). A create or update decodes the request body itself, whose text is read again
 * for what its value no longer shows: a YAML body's repeated keys (go-yaml's error first, then
 * the unknown fields of the key-sorted JSON it converts to) or a JSON body's repeated fields,
 * in document order among the unknown ones. A patched object has only unknown fields.
 */
function strictDecodingErrors(req: ApiRequest, unknown: string[]): string[] {
  if (req.verb !== 'create' && req.verb !== 'update') return unknown;
  const text = req.body.toString('utf8');
  if (bodyContentType(req) === 'application/yaml') {
    const repeated = yamlStrictError(text);
    return repeated === undefined ? unknown : [repeated, ...unknown];
  }
  const tree = jsonTree(text);
  return hasDuplicateKeys(tree) ? strictJsonErrors(wireSchema(req.type), tree) : unknown;
}

/**
 * The body of a create or update, in one of the media types the verb accepts. A YAML body is
 * converted as sigs.k8s.io/yaml converts it, with its keys sorted, so that unknown fields come
 * in the order the real server lists them.
 */
export function readBody(req: ApiRequest, accepted: readonly string[]): JsonValue {
  const contentType = bodyContentType(req);
  if (!accepted.includes(contentType)) {
    // The real server also takes protobuf; it is listed as the real server lists it.
    throw apiErrors.unsupportedMediaType([...accepted, 'application/vnd.kubernetes.protobuf']);
  }
  const body = parseBody(req.body, contentType, req.type.kind);
  return contentType === 'application/yaml' ? sortedKeys(body) : body;
}
