import { parse as parseYaml } from 'yaml';
import { apiErrors } from './api-error';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { goJsonSyntaxError } from './go-json';
import { JSON_TYPE, wireSchema } from './handler-context';
import type { ApiRequest, HandlerContext } from './handler-context';
import { DecodeError, decodeObject, isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';

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

/** Parses a request body by its content type. @throws ApiError (400 or 415) */
export function parseBody(body: Buffer, contentType: string, kindForErrors: string): JsonValue {
  const text = body.toString('utf8');
  const yamlLike =
    contentType === 'application/yaml' || contentType === 'application/apply-patch+yaml';
  if (yamlLike) {
    try {
      return (parseYaml(text) ?? null) as JsonValue;
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
  const body: JsonObject = {};
  for (const [k, v] of Object.entries(value)) if (k !== 'apiVersion' && k !== 'kind') body[k] = v;
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
  const unknown = report.unknownFields.map(unknownFieldText);
  if (unknown.length > 0 && validation === 'Strict') {
    throw apiErrors.badRequest(
      `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${unknown.join(', ')}`,
    );
  }
  // An apply configuration is converted and defaulted only once merged (see apply()).
  if (!partial) {
    if (type.conversion !== undefined) object = type.conversion.toHub(object);
    type.applyDefaults(object, ctx.now());
  }
  return {
    object,
    warnings: validation === 'Warn' ? unknown : [],
    unknownFields: report.unknownFields,
  };
}

/** The body of a create or update, in one of the media types the verb accepts. */
export function readBody(req: ApiRequest, accepted: readonly string[]): JsonValue {
  const contentType = req.contentType === '' ? JSON_TYPE : req.contentType;
  if (!accepted.includes(contentType)) {
    // The real server also takes protobuf; it is listed as the real server lists it.
    throw apiErrors.unsupportedMediaType([...accepted, 'application/vnd.kubernetes.protobuf']);
  }
  return parseBody(req.body, contentType, req.type.kind);
}
