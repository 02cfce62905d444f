import { objAt } from './api-schemas';
import { JSON_TYPE, ok, toWire } from './handler-context';
import type { ApiRequest, ApiResult, HandlerContext } from './handler-context';
import type { JsonObject } from './object-schema';
import { StoredObject } from './object-store';

/**
 * How stored objects leave the server: in the request's version, as the object itself, a
 * `meta.k8s.io/v1` Table (what `kubectl get` prints) or PartialObjectMetadata.
 *
 * Every one of them is sent as `Content-Type: application/json`, whatever `as=` the client asked
 * for: kube-apiserver's `transformResponseObject` writes with `WriteObjectNegotiated(…,
 * listGVKInContentType=false)`, which names only the serializer's media type
 * (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/writers.go`).
 */

export function partialMetadata(stored: StoredObject): JsonObject {
  return {
    kind: 'PartialObjectMetadata',
    apiVersion: 'meta.k8s.io/v1',
    metadata: objAt(stored.object, 'metadata') ?? {},
  };
}

/**
 * The stored object in the request's version. Objects are stored in one version; a request
 * in another sees them converted, with its own apiVersion.
 */
export function view(req: ApiRequest, stored: StoredObject): StoredObject {
  const { type } = req;
  if (type.conversion === undefined) return stored;
  return new StoredObject(
    stored.resource,
    stored.name,
    stored.uid,
    stored.rv,
    JSON.stringify(toWire(type, stored.object)),
    `{"kind":${JSON.stringify(type.kind)},"apiVersion":${JSON.stringify(type.apiVersion)},`,
    stored.labels,
    stored.fields,
    stored.ownerUids,
    stored.namespace,
  );
}

export function table(
  ctx: HandlerContext,
  req: ApiRequest,
  items: readonly StoredObject[],
  listMeta: JsonObject,
  withHeaders = true,
): JsonObject {
  const include = req.query.get('includeObject') ?? 'Metadata';
  const now = ctx.now();
  const out: JsonObject = { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: listMeta };
  if (withHeaders) out.columnDefinitions = req.type.columns.map((c) => ({ ...c }));
  out.rows = items.map((stored) => {
    const row: JsonObject = { cells: req.type.cells(stored.object, now) };
    if (include === 'Object') row.object = view(req, stored).object;
    else if (include !== 'None') row.object = partialMetadata(stored);
    return row;
  });
  return out;
}

/** One object as the response to a get or a write, in the format the client asked for. */
export function render(
  ctx: HandlerContext,
  req: ApiRequest,
  hubStored: StoredObject,
  code: number,
  warnings: readonly string[] = [],
): ApiResult {
  const stored = view(req, hubStored);
  const rv = String(stored.rv);
  switch (req.format) {
    case 'table':
      return ok(
        code,
        JSON.stringify(table(ctx, req, [hubStored], { resourceVersion: rv })),
        warnings,
        JSON_TYPE,
        rv,
      );
    case 'metadata':
      return ok(code, JSON.stringify(partialMetadata(stored)), warnings, JSON_TYPE, rv);
    default:
      return ok(code, stored.json, warnings, JSON_TYPE, rv);
  }
}

/** A collection (list, deletecollection) in the format the client asked for. */
export function renderList(
  ctx: HandlerContext,
  req: ApiRequest,
  items: readonly StoredObject[],
  listMeta: JsonObject,
): ApiResult {
  if (req.format === 'table') return ok(200, JSON.stringify(table(ctx, req, items, listMeta)));
  if (req.format === 'metadata') {
    return ok(
      200,
      JSON.stringify({
        kind: 'PartialObjectMetadataList',
        apiVersion: 'meta.k8s.io/v1',
        metadata: listMeta,
        items: items.map((s) => partialMetadata(s)),
      }),
    );
  }
  const head = JSON.stringify({
    kind: req.type.listKind,
    apiVersion: req.type.apiVersion,
    metadata: listMeta,
  });
  return ok(
    200,
    `${head.slice(0, -1)},"items":[${items.map((s) => view(req, s).itemJson).join(',')}]}`,
  );
}
