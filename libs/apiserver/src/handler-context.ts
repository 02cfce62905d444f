import type { ServerResponse } from 'node:http';
import { apiErrors } from './api-error';
import type { GroupName } from './api-error';
import { metaOf, strAt } from './api-schemas';
import { isJsonObject, normalize } from './object-schema';
import type { JsonObject, JsonValue, StructSchema } from './object-schema';
import { objectKey } from './object-store';
import type { ObjectStore, StoredObject } from './object-store';
import type { FeatureGates, ResourceType } from './resource-types';
import type { SliceLayoutRules } from './validation';

/**
 * What every verb family of the API handler shares: the request and result shapes, the
 * handler's dependencies, and the small rules of kube-apiserver's generic registry that more
 * than one verb applies (object keys, namespaces, versions, field managers).
 */

export type ResponseFormat = 'json' | 'yaml' | 'table' | 'metadata';

export interface ApiRequest {
  readonly type: ResourceType;
  readonly verb: string;
  /** The namespace of the URL; empty for a cluster-scoped type or a list across namespaces. */
  readonly namespace: string;
  readonly name: string;
  readonly subresource: string;
  readonly query: URLSearchParams;
  readonly contentType: string;
  readonly body: Buffer;
  readonly userAgent: string;
  readonly format: ResponseFormat;
}

export interface ApiResult {
  readonly code: number;
  readonly body: string;
  readonly contentType: string;
  readonly warnings: readonly string[];
  /** The resourceVersion written, for the request log. */
  readonly resourceVersion?: string;
}

export interface WatchResult {
  readonly watch: (res: ServerResponse) => void;
}

export interface ApiHandlerOptions {
  readonly store: ObjectStore;
  readonly now: () => number;
  readonly featureGates: FeatureGates;
  /** The release's ResourceSlice layout rules. */
  readonly sliceLayout: SliceLayoutRules;
  /** Called after an object is deleted (the garbage collector listens). */
  readonly onDeleted: (type: ResourceType, deleted: StoredObject, propagation: string) => void;
  /** Watch streams still open, so that close() can end them. */
  readonly openStreams: Set<ServerResponse>;
  /** How long an object of an expiring type (Events) lives after its last write, ms. */
  readonly eventTtlMs: number;
  /**
   * Whether a namespace exists. Creates elsewhere are refused as the NamespaceLifecycle
   * admission plugin refuses them.
   */
  readonly namespaceExists: (namespace: string) => boolean;
}

/** The dependencies every verb family is handed. */
export type HandlerContext = ApiHandlerOptions;

export const JSON_TYPE = 'application/json';

export function groupResource(type: ResourceType): GroupName {
  return { group: type.group, name: type.resource };
}

/** The internal type's group and kind, which Invalid errors name (`ObjectKinds` of the object). */
export function internalGroupKind(type: ResourceType): GroupName {
  return { group: type.internalGroup ?? type.group, name: type.kind };
}

export function groupKind(type: ResourceType): GroupName {
  return { group: type.group, name: type.kind };
}

/** The schema of the request's version: what bodies, patches and field tracking use. */
export function wireSchema(type: ResourceType): StructSchema {
  return type.conversion?.schema ?? type.schema;
}

export function withoutTypeMeta(obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) if (k !== 'kind' && k !== 'apiVersion') out[k] = v;
  return out;
}

/** A stored (hub-shaped) object as the request's version shows it, without kind/apiVersion. */
export function toWire(type: ResourceType, obj: JsonObject): JsonObject {
  const body = withoutTypeMeta(obj);
  return type.conversion === undefined ? body : type.conversion.fromHub(body);
}

export function ok(
  code: number,
  body: string,
  warnings: readonly string[] = [],
  contentType = JSON_TYPE,
  resourceVersion?: string,
): ApiResult {
  return {
    code,
    body,
    contentType,
    warnings,
    ...(resourceVersion === undefined ? {} : { resourceVersion }),
  };
}

/** The store key of the object the request names. */
export function requestKey(req: ApiRequest): string {
  return objectKey(req.namespace, req.name);
}

/** The object the request names. @throws ApiError 404 */
export function existingObject(ctx: HandlerContext, req: ApiRequest): StoredObject {
  const stored = ctx.store.get(req.type.resource, requestKey(req));
  if (stored === undefined) throw apiErrors.notFound(groupResource(req.type), req.name);
  return stored;
}

/**
 * `EnsureObjectNamespaceMatchesRequestNamespace`: an object without a namespace takes the
 * URL's, a cluster-scoped one loses any; a different one is refused.
 */
export function ensureNamespace(req: ApiRequest, object: JsonObject): void {
  const meta = metaOf(object);
  const namespace = strAt(meta, 'namespace') ?? '';
  if (namespace === req.namespace) return;
  if (namespace === '') meta.namespace = req.namespace;
  else if (req.namespace === '') Reflect.deleteProperty(meta, 'namespace');
  else
    throw apiErrors.badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
}

/** Whether the request is a dry run (`dryRun=All`, or in a delete's body). */
export function isDryRun(req: ApiRequest): boolean {
  if (req.query.getAll('dryRun').includes('All')) return true;
  if (req.verb !== 'delete' && req.verb !== 'deletecollection') return false;
  // DeleteOptions may also come in the body.
  try {
    const body = JSON.parse(req.body.toString('utf8')) as JsonValue;
    return isJsonObject(body) && Array.isArray(body.dryRun) && body.dryRun.includes('All');
  } catch {
    return false;
  }
}

/** The field manager: `fieldManager`, else the user agent's product name. */
export function managerOf(req: ApiRequest): string {
  const explicit = req.query.get('fieldManager');
  if (explicit !== null && explicit !== '') return explicit;
  return req.userAgent.split('/')[0] ?? '';
}

export function trackingOptions(ctx: HandlerContext, req: ApiRequest) {
  return {
    schema: wireSchema(req.type),
    manager: managerOf(req),
    apiVersion: req.type.apiVersion,
    subresource: req.subresource,
    resetFields:
      req.subresource === 'status' ? (req.type.status?.resetFields ?? []) : req.type.resetFields,
    nowMs: ctx.now(),
  };
}

/**
 * What a create is compared with for field tracking: the type's zero value (the field
 * manager's empty object), so that fields left at their zero value (an empty
 * `reportingComponent`, a null time) are nobody's.
 */
export function zeroObject(req: ApiRequest): JsonObject {
  return normalize(wireSchema(req.type), {});
}

function isStoredObject(value: StoredObject | JsonObject): value is StoredObject {
  return typeof value.itemJson === 'string' && typeof value.json === 'string' && 'object' in value;
}

/**
 * The object as field tracking compares it: in the request's version (managed fields are
 * recorded per version), without kind/apiVersion.
 */
export function comparable(req: ApiRequest, value: StoredObject | JsonObject): JsonObject {
  return toWire(req.type, isStoredObject(value) ? value.object : value);
}

/** An Event's TTL starts again at every write, as its etcd lease does. */
export function startTimeToLive(
  ctx: HandlerContext,
  type: ResourceType,
  stored: StoredObject,
): void {
  if (type.expires === true)
    ctx.store.setExpiry(type.resource, stored.key, ctx.now() + ctx.eventTtlMs);
}
