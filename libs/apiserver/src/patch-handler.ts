import { ApiError, apiErrors } from './api-error';
import { metaOf, objAt, strAt } from './api-schemas';
import { createObject } from './create-handler';
import {
  comparable,
  ensureNamespace,
  existingObject,
  requestKey,
  trackingOptions,
  wireSchema,
} from './handler-context';
import type { ApiRequest, ApiResult, HandlerContext } from './handler-context';
import { goFormatValue, goJsonSyntaxError } from './go-json';
import { errorBody, fieldError, FieldPath } from './field-errors';
import {
  conflictReport,
  decodeManagedFields,
  serverSideApply,
  trackUpdate,
} from './managed-fields';
import { isJsonObject, normalize } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { PatchError, applyJsonPatch, applyMergePatch, applyStrategicMergePatch } from './patch';
import {
  checkOptions,
  decode,
  fieldValidation,
  applyStrictWarnings,
  parseBody,
  patchDocumentStrictErrors,
  strictWarnings,
  unknownFieldText,
} from './request-decoding';
import type { FieldValidation } from './request-decoding';
import { view } from './response-encoding';
import { updateObject } from './update-handler';

/** Patch: JSON merge patch, JSON patch, strategic merge patch and server-side apply. */

const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];

/** Go's name for the JSON type of a value, as `json: cannot unmarshal <type>` prints it. */
function goJsonType(value: JsonValue): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'object' ? 'object' : typeof value;
}

/**
 * The patch document, with the error each patch type's decoder gives for one it cannot read
 * (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`): merge and JSON patches are
 * read strictly unless `fieldValidation=Ignore` ("error decoding patch: …"), then by the
 * json-patch library ("Invalid JSON Patch", or Go's error); a strategic merge patch gives Go's
 * error as it is; an apply configuration "error decoding YAML: …". @throws ApiError 400
 */
function decodePatchDocument(req: ApiRequest, validation: FieldValidation): JsonValue {
  const strict = validation !== 'Ignore';
  if (req.contentType === 'application/apply-patch+yaml') {
    try {
      return parseBody(req.body, req.contentType, req.type.kind);
    } catch (error) {
      if (error instanceof ApiError)
        throw apiErrors.badRequest(`error decoding YAML: ${error.message}`);
      throw error;
    }
  }
  const text = req.body.toString('utf8');
  let doc: JsonValue;
  try {
    doc = JSON.parse(text) as JsonValue;
  } catch {
    const syntax = goJsonSyntaxError(text);
    if (strict && req.contentType !== 'application/strategic-merge-patch+json')
      throw apiErrors.badRequest(`error decoding patch: ${syntax}`);
    if (req.contentType === 'application/merge-patch+json')
      throw apiErrors.badRequest('Invalid JSON Patch');
    throw apiErrors.badRequest(syntax);
  }
  const type = goJsonType(doc);
  if (req.contentType === 'application/json-patch+json') {
    if (strict && type !== 'array' && type !== 'null')
      throw apiErrors.badRequest(
        `error decoding patch: json: cannot unmarshal ${type} into Go value of type []handlers.jsonPatchOp`,
      );
    return doc;
  }
  const intoMap = `json: cannot unmarshal ${type} into Go value of type map[string]interface {}`;
  if (type === 'object' || type === 'null') return doc;
  if (req.contentType === 'application/strategic-merge-patch+json')
    throw apiErrors.badRequest(intoMap);
  if (strict) throw apiErrors.badRequest(`error decoding patch: ${intoMap}`);
  return doc;
}

export function patch(ctx: HandlerContext, req: ApiRequest): ApiResult {
  // The route takes only the patch types (go-restful's `Consumes`), so any other body is refused
  // by go-restful itself, before the handler, with its own text and no details.
  if (!PATCH_TYPES.includes(req.contentType))
    throw new ApiError(415, 'UnsupportedMediaType', '415: Unsupported Media Type', {});
  const isApply = req.contentType === 'application/apply-patch+yaml';
  checkOptions(req, 'PatchOptions', isApply);
  const validation = fieldValidation(req);
  if (isApply) return apply(ctx, req, decodePatchDocument(req, validation));
  // The patch is read inside the storage update, once the object is found.
  const live = existingObject(ctx, req);
  const patchDoc = decodePatchDocument(req, validation);
  // A patch applies to the object in the request's version.
  const base = view(req, live).object;
  let patched: JsonValue;
  try {
    if (req.contentType === 'application/merge-patch+json')
      patched = applyMergePatch(base, patchDoc);
    else if (req.contentType === 'application/json-patch+json')
      patched = applyJsonPatch(base, patchDoc);
    else patched = applyStrategicMergePatch(base, patchDoc, wireSchema(req.type));
  } catch (error) {
    if (error instanceof PatchError) {
      if (error.code === 400) throw apiErrors.badRequest(error.message);
      if (error.code === 500) throw apiErrors.unknown(500, error.message);
      // NewGenericServerResponse(422, …, isUnexpectedResponse=false): the patch library's
      // message is not in the Status, only the generic one.
      throw new ApiError(
        422,
        'Invalid',
        'the server rejected our request due to an error in our request',
        {},
      );
    }
    throw error;
  }
  // The patch document's own strict errors (its repeated keys) come before the patched
  // object's unknown fields (`handlers/patch.go`, `jsonPatcher.applyPatchToCurrentObject`).
  const documentErrors = patchDocumentStrictErrors(
    req.body.toString('utf8'),
    req.contentType,
    validation,
  );
  // Under Strict the unknown fields are the patch's error, not the decoder's.
  const decoded = decode(ctx, req, patched, validation === 'Strict' ? 'Ignore' : validation);
  const { object } = decoded;
  const strictErrors = [...documentErrors, ...decoded.unknownFields.map(unknownFieldText)];
  if (validation === 'Strict' && strictErrors.length > 0) {
    const shown =
      req.contentType === 'application/strategic-merge-patch+json'
        ? goFormatValue(patchDoc)
        : goPatchedJson(patched);
    throw strictPatchError(shown, strictErrors);
  }
  const warnings = [...strictWarnings(documentErrors), ...decoded.warnings];
  ensureNamespace(req, object);
  const patchedName = strAt(metaOf(object), 'name') ?? '';
  if (patchedName !== req.name) {
    throw apiErrors.badRequest(
      `the name of the object (${patchedName}) does not match the name on the URL (${req.name})`,
    );
  }
  const liveEntries = decodeManagedFields(metaOf(live.object)) ?? [];
  const entries = trackUpdate(
    decodeManagedFields(metaOf(object)) ?? liveEntries,
    comparable(req, live),
    comparable(req, object),
    trackingOptions(ctx, req),
  );
  return updateObject(ctx, req, live, object, entries, warnings);
}

/**
 * The patched object as the json-patch library marshals it: its documents are Go maps, so the
 * top level comes out with sorted keys; nested values keep the order they had.
 */
function goPatchedJson(patched: JsonValue): string {
  if (!isJsonObject(patched)) return JSON.stringify(patched);
  const keys = Object.keys(patched).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(patched[k])}`).join(',')}}`;
}

/**
 * Unknown fields of a patched object under `Strict` (`handlers/patch.go`, `jsonPatcher` and
 * `applyPatchToObject`): `errors.NewInvalid(schema.GroupKind{}, "", …)` with one `field.Invalid`
 * on `patch` whose value is the patched object (JSON and merge patches) or the patch map
 * (strategic merge). An empty GroupKind leaves the details without group, kind or name.
 */
function strictPatchError(shown: string, unknown: readonly string[]): ApiError {
  const cause = fieldError.invalid(
    FieldPath.root('patch'),
    shown,
    `strict decoding error: ${unknown.join(', ')}`,
  );
  const body = errorBody(cause);
  return new ApiError(422, 'Invalid', ` "" is invalid: patch: ${body}`, {
    causes: [{ reason: cause.type, message: body, field: 'patch' }],
  });
}

/**
 * The typed conversion of an apply configuration refuses a field the schema lacks whatever
 * `fieldValidation` says (`managedfields/internal/structuredmerge.go` `Apply`), as a plain
 * error: a 500 without a reason, naming the object as `objectGVKNN` does and each field as
 * structured-merge-diff's validation prints it (`errors:` and an indented line each when more
 * than one).
 */
function unknownApplyFieldsError(
  req: ApiRequest,
  doc: JsonValue,
  unknown: readonly string[],
): ApiError {
  const meta = isJsonObject(doc) ? (objAt(doc, 'metadata') ?? {}) : {};
  const gvk = `${req.type.group}/${req.type.version}, Kind=${req.type.kind}`;
  const where = `${strAt(meta, 'namespace') ?? ''}/${strAt(meta, 'name') ?? ''}; ${gvk}`;
  const lines = unknown.map((f) => `.${f}: field not declared in schema`);
  const detail =
    lines.length === 1 ? (lines[0] ?? '') : ['errors:', ...lines.map((l) => `  ${l}`)].join('\n');
  return apiErrors.unknown(500, `failed to create typed patch object (${where}): ${detail}`);
}

function apply(ctx: HandlerContext, req: ApiRequest, doc: JsonValue): ApiResult {
  const { type } = req;
  // Upstream's directive only looks for repeated keys here (`yaml.UnmarshalStrict`), after the
  // typed conversion has refused unknown fields whatever the directive.
  const config = decode(ctx, req, doc, 'Ignore', true);
  if (config.unknownFields.length > 0)
    throw unknownApplyFieldsError(req, doc, config.unknownFields);
  const applied = config.object;
  const warnings: string[] = [];
  const appliedMeta = objAt(applied, 'metadata') ?? {};
  const appliedName = strAt(appliedMeta, 'name') ?? '';
  if (appliedName !== '' && appliedName !== req.name) {
    throw apiErrors.badRequest(
      `the name of the object (${appliedName}) does not match the name on the URL (${req.name})`,
    );
  }
  const force = req.query.get('force') === 'true';
  const options = trackingOptions(ctx, req);
  const live = ctx.store.get(type.resource, requestKey(req));
  const liveBody: JsonObject =
    live === undefined ? { metadata: { name: req.name } } : comparable(req, live);
  const entries = live === undefined ? [] : (decodeManagedFields(metaOf(live.object)) ?? []);
  const result = serverSideApply(entries, liveBody, applied, force, options);
  if (result.conflicts.length > 0) {
    const report = conflictReport(result.conflicts);
    throw new ApiError(409, 'Conflict', report.message, { causes: report.causes });
  }
  warnings.push(...applyStrictWarnings(req.body.toString('utf8'), fieldValidation(req)));
  metaOf(result.object).name = req.name;
  ensureNamespace(req, result.object);
  const merged =
    type.conversion === undefined ? result.object : type.conversion.toHub(result.object);
  type.applyDefaults(merged, ctx.now());
  if (live === undefined) {
    const decoded = normalize(type.schema, merged);
    return createObject(ctx, req, decoded, result.entries, warnings);
  }
  return updateObject(ctx, req, live, normalize(type.schema, merged), result.entries, warnings);
}
