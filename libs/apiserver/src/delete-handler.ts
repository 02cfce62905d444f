import { apiErrors } from './api-error';
import { listAt, metaOf, numAt, objAt, strAt } from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import {
  JSON_TYPE,
  existingObject,
  groupKind,
  groupResource,
  isDryRun,
  ok,
} from './handler-context';
import type { ApiRequest, ApiResult, HandlerContext } from './handler-context';
import { matcher, pinned, scope, selectors, validateListOptions } from './list-options';
import { formatTime, isJsonObject, reorder } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import type { StoredObject } from './object-store';
import { checkOptions, parseBody } from './request-decoding';
import { render, renderList } from './response-encoding';

/**
 * Delete and deletecollection: preconditions, propagation policy (the garbage collector's
 * `orphan` and `foregroundDeletion` finalizers), graceful deletion and the response shapes.
 */

interface DeleteOptions {
  uid?: string;
  resourceVersion?: string;
  propagation: string;
}

function deleteOptions(req: ApiRequest): DeleteOptions {
  let body: JsonValue = null;
  if (req.body.length > 0) {
    body = parseBody(
      req.body,
      req.contentType === '' ? JSON_TYPE : req.contentType,
      'DeleteOptions',
    );
  }
  const options = isJsonObject(body) ? body : {};
  const preconditions = objAt(options, 'preconditions');
  let propagation = strAt(options, 'propagationPolicy') ?? req.query.get('propagationPolicy') ?? '';
  const orphan = options.orphanDependents ?? req.query.get('orphanDependents');
  if (propagation === '' && (orphan === true || orphan === 'true')) propagation = 'Orphan';
  if (propagation !== '' && !['Orphan', 'Background', 'Foreground'].includes(propagation)) {
    throw apiErrors.invalid({ group: 'meta.k8s.io', name: 'DeleteOptions' }, '', [
      fieldError.notSupported(FieldPath.root('propagationPolicy'), propagation, [
        'Foreground',
        'Background',
        'Orphan',
        'nil',
      ]),
    ]);
  }
  const uid = strAt(preconditions, 'uid');
  const resourceVersion = strAt(preconditions, 'resourceVersion');
  return {
    ...(uid === undefined ? {} : { uid }),
    ...(resourceVersion === undefined ? {} : { resourceVersion }),
    propagation: propagation === '' ? 'Background' : propagation,
  };
}

/** Deletes one object; returns what the response carries (the object, or a Success Status). */
function deleteObject(
  ctx: HandlerContext,
  req: ApiRequest,
  live: StoredObject,
  options: DeleteOptions,
): ApiResult {
  const { type } = req;
  const gk = groupKind(type);
  if (options.uid !== undefined && options.uid !== live.uid) {
    throw apiErrors.conflict(
      gk,
      live.name,
      `the UID in the precondition (${options.uid}) does not match the UID in record (${live.uid}). The object might have been deleted and then recreated`,
    );
  }
  if (options.resourceVersion !== undefined && options.resourceVersion !== String(live.rv)) {
    throw apiErrors.conflict(
      gk,
      live.name,
      `the ResourceVersion in the precondition (${options.resourceVersion}) does not match the ResourceVersion in record (${live.rv}). The object might have been modified`,
    );
  }
  const meta = objAt(live.object, 'metadata') ?? {};
  const finalizers = (listAt(meta, 'finalizers') ?? []).map(String);
  const gcFinalizer =
    type.garbageCollectionUnsupported === true
      ? undefined
      : options.propagation === 'Orphan'
        ? 'orphan'
        : options.propagation === 'Foreground'
          ? 'foregroundDeletion'
          : undefined;
  const wanted =
    gcFinalizer === undefined || finalizers.includes(gcFinalizer)
      ? finalizers
      : [...finalizers, gcFinalizer];
  if (wanted.length > 0) {
    // Graceful deletion: the object stays, marked, until its finalizers are removed.
    if (meta.deletionTimestamp !== undefined || isDryRun(req)) return render(ctx, req, live, 200);
    const object = live.object;
    const m = metaOf(object);
    m.deletionTimestamp = formatTime(ctx.now());
    m.deletionGracePeriodSeconds = 0;
    m.finalizers = wanted;
    if (type.hasGeneration) m.generation = (numAt(m, 'generation') ?? 0) + 1;
    const body: JsonObject = {};
    for (const [k, v] of Object.entries(object))
      if (k !== 'kind' && k !== 'apiVersion') body[k] = v;
    const stored = ctx.store.update(type.resource, reorder(type.schema, body));
    ctx.onDeleted(type, stored, options.propagation);
    return render(ctx, req, stored, 200);
  }
  if (isDryRun(req)) return deletedResponse(ctx, req, live);
  const deleted = ctx.store.delete(type.resource, live.key);
  if (deleted === undefined) throw apiErrors.notFound(groupResource(type), live.name);
  ctx.onDeleted(type, deleted, options.propagation);
  return deletedResponse(ctx, req, deleted);
}

function deletedResponse(ctx: HandlerContext, req: ApiRequest, deleted: StoredObject): ApiResult {
  if (req.type.returnDeletedObject) return render(ctx, req, deleted, 200);
  const details: JsonObject = { name: deleted.name };
  if (req.type.group !== '') details.group = req.type.group;
  details.kind = req.type.resource;
  details.uid = deleted.uid;
  return ok(
    200,
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details,
    }),
    [],
    JSON_TYPE,
    String(deleted.rv),
  );
}

export function deleteNamed(ctx: HandlerContext, req: ApiRequest): ApiResult {
  checkOptions(req, 'DeleteOptions');
  const options = deleteOptions(req);
  return deleteObject(ctx, req, existingObject(ctx, req), options);
}

export function deleteCollection(ctx: HandlerContext, req: ApiRequest): ApiResult {
  checkOptions(req, 'DeleteOptions');
  validateListOptions(req, false);
  const options = deleteOptions(req);
  const { labels, fields } = selectors(req);
  const matchFn = matcher(labels, fields);
  const listed = ctx.store.list(req.type.resource, {
    ...scope(req),
    ...(matchFn === undefined ? {} : { match: matchFn }),
    pinned: pinned(req, fields),
    filtered: matchFn !== undefined,
  });
  for (const item of listed.items) {
    const live = ctx.store.get(req.type.resource, item.key);
    if (live !== undefined) deleteObject(ctx, req, live, options);
  }
  return renderList(ctx, req, listed.items, { resourceVersion: String(listed.rv) });
}
