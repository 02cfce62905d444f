import { apiErrors } from './api-error';
import { listAt, metaOf, strAt } from './api-schemas';
import { createTracked } from './create-handler';
import {
  JSON_TYPE,
  comparable,
  ensureNamespace,
  groupResource,
  internalGroupKind,
  isDryRun,
  existingObject,
  ok,
  requestKey,
  startTimeToLive,
  toWire,
  trackingOptions,
} from './handler-context';
import type { ApiRequest, ApiResult, HandlerContext } from './handler-context';
import { jsonEqual } from './api-schemas';
import { decodeManagedFields, encodeManagedFields, trackUpdate } from './managed-fields';
import type { ManagerEntry } from './managed-fields';
import { reorder } from './object-schema';
import type { JsonObject } from './object-schema';
import type { StoredObject } from './object-store';
import { checkOptions, decode, fieldValidation, readBody } from './request-decoding';
import { render } from './response-encoding';

/**
 * Update: PUT of an object or of its `/status`, and the storage step that every patch and
 * apply ends in.
 */

/**
 * Everything from the storage preconditions to the write for an update of `live` into
 * `object` (PUT, patches, apply): uid and resourceVersion preconditions, strategy, validation,
 * no-op detection, finalizer-driven deletion.
 */
export function updateObject(
  ctx: HandlerContext,
  req: ApiRequest,
  live: StoredObject,
  object: JsonObject,
  entries: ManagerEntry[],
  warnings: readonly string[],
): ApiResult {
  const { type } = req;
  const gr = groupResource(type);
  const meta = metaOf(object);
  const liveObject = live.object;
  const liveMeta = metaOf(liveObject);
  const uid = strAt(meta, 'uid') ?? '';
  if (uid !== '' && uid !== live.uid) {
    throw apiErrors.conflict(
      gr,
      req.name,
      `StorageError: invalid object, Code: 4, Key: /registry/${type.resource === 'nodes' ? 'minions' : type.resource}/${requestKey(req)}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${uid}, UID in object meta: ${live.uid}`,
    );
  }
  const rv = strAt(meta, 'resourceVersion') ?? '';
  if (rv !== '' && rv !== String(live.rv)) {
    throw apiErrors.conflict(
      gr,
      req.name,
      'the object has been modified; please apply your changes to the latest version and try again',
    );
  }
  meta.resourceVersion = String(live.rv);
  meta.uid = live.uid;
  for (const key of [
    'creationTimestamp',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
    'generation',
  ] as const) {
    const value = liveMeta[key];
    if (value === undefined) Reflect.deleteProperty(meta, key);
    else meta[key] = value;
  }
  const statusStrategy = req.subresource === 'status' ? type.status : undefined;
  if (statusStrategy !== undefined) statusStrategy.prepareForUpdate(object, liveObject);
  else type.prepareForUpdate(object, liveObject, ctx.featureGates);
  metaOf(object).managedFields = encodeManagedFields(entries);
  const normalized = reorder(type.schema, object);
  const liveBody: JsonObject = {};
  for (const [k, v] of Object.entries(liveObject))
    if (k !== 'kind' && k !== 'apiVersion') liveBody[k] = v;
  const errs =
    statusStrategy === undefined
      ? type.validateUpdate(normalized, liveBody, ctx.sliceLayout)
      : statusStrategy.validateUpdate(normalized, liveBody);
  if (errs.length > 0) throw apiErrors.invalid(internalGroupKind(type), req.name, errs);
  if (jsonEqual(normalized, liveBody)) return render(ctx, req, live, 200, warnings);
  if (isDryRun(req)) {
    return ok(
      200,
      JSON.stringify({
        kind: type.kind,
        apiVersion: type.apiVersion,
        ...toWire(type, normalized),
      }),
      warnings,
    );
  }
  const stored = ctx.store.update(type.resource, normalized);
  startTimeToLive(ctx, type, stored);
  const nmeta = metaOf(normalized);
  if (nmeta.deletionTimestamp !== undefined && (listAt(nmeta, 'finalizers') ?? []).length === 0) {
    const deleted = ctx.store.delete(type.resource, stored.key);
    if (deleted !== undefined) ctx.onDeleted(type, deleted, 'Background');
  }
  return render(ctx, req, stored, 200, warnings);
}

export function update(ctx: HandlerContext, req: ApiRequest): ApiResult {
  checkOptions(req, 'UpdateOptions');
  const validation = fieldValidation(req);
  const body = readBody(req, [JSON_TYPE, 'application/yaml']);
  const { object, warnings } = decode(ctx, req, body, validation);
  ensureNamespace(req, object);
  const meta = metaOf(object);
  const name = strAt(meta, 'name') ?? '';
  if (name !== req.name) {
    throw apiErrors.badRequest(
      `the name of the object (${name}) does not match the name on the URL (${req.name})`,
    );
  }
  const existing = ctx.store.get(req.type.resource, requestKey(req));
  if (existing === undefined && req.type.allowCreateOnUpdate === true && req.subresource === '') {
    // The registry's Update creates the object (BeforeCreate, 201) for such a strategy.
    Reflect.deleteProperty(meta, 'resourceVersion');
    return createTracked(ctx, req, object, warnings);
  }
  const live = existingObject(ctx, req);
  const liveEntries = decodeManagedFields(metaOf(live.object)) ?? [];
  const entries = trackUpdate(
    decodeManagedFields(meta) ?? liveEntries,
    comparable(req, live),
    comparable(req, object),
    trackingOptions(ctx, req),
  );
  return updateObject(ctx, req, live, object, entries, warnings);
}
