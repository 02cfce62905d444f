import { randomUUID, randomInt } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { ApiError, apiErrors } from './api-error';
import type { GroupName } from './api-error';
import { jsonEqual, listAt, metaOf, numAt, objAt, strAt } from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { goJsonSyntaxError } from './go-json';
import {
  conflictReport,
  decodeManagedFields,
  encodeManagedFields,
  serverSideApply,
  trackUpdate,
} from './managed-fields';
import type { ManagerEntry } from './managed-fields';
import {
  DecodeError,
  decodeObject,
  formatTime,
  isJsonObject,
  normalize,
  reorder,
} from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { ExpiredError, StoredObject, objectKey } from './object-store';
import type { EventType, ObjectStore, WatchSink } from './object-store';
import { PatchError, applyJsonPatch, applyMergePatch, applyStrategicMergePatch } from './patch';
import type { FeatureGates, ResourceType } from './resource-types';
import type { StructSchema } from './object-schema';
import type { SliceLayoutRules } from './validation';
import { SelectorError, parseFieldSelector, parseLabelSelector } from './selectors';
import type { FieldSelector, LabelSelector } from './selectors';

/**
 * The REST semantics of kube-apiserver's generic registry for the resources this server stores:
 * create, get, list, watch, update, patch (merge, JSON, strategic, apply), delete and
 * deletecollection, with their preconditions, Status errors, managed fields and media types.
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
  store: ObjectStore;
  now: () => number;
  featureGates: FeatureGates;
  /** The release's ResourceSlice layout rules. */
  sliceLayout: SliceLayoutRules;
  /** Called after an object is deleted (the garbage collector listens). */
  onDeleted: (type: ResourceType, deleted: StoredObject, propagation: string) => void;
  /** Watch streams still open, so that close() can end them. */
  openStreams: Set<ServerResponse>;
  /** How long an object of an expiring type (Events) lives after its last write, ms. */
  eventTtlMs: number;
  /**
   * Whether a namespace exists. Creates elsewhere are refused as the NamespaceLifecycle
   * admission plugin refuses them.
   */
  namespaceExists: (namespace: string) => boolean;
}

const JSON_TYPE = 'application/json';
const TABLE_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const GENERATE_SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATED_NAME_LENGTH = 58;
const WATCH_DEFAULT_TIMEOUT_S = 1800;
const BOOKMARK_INTERVAL_MS = 60_000;
const TOO_LARGE_RV_WAIT_MS = 3_000;

function groupResource(type: ResourceType): GroupName {
  return { group: type.group, name: type.resource };
}

/** The internal type's group and kind, which Invalid errors name (`ObjectKinds` of the object). */
function internalGroupKind(type: ResourceType): GroupName {
  return { group: type.internalGroup ?? type.group, name: type.kind };
}

function groupKind(type: ResourceType): GroupName {
  return { group: type.group, name: type.kind };
}

/** The schema of the request's version: what bodies, patches and field tracking use. */
function wireSchema(type: ResourceType): StructSchema {
  return type.conversion?.schema ?? type.schema;
}

function withoutTypeMeta(obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) if (k !== 'kind' && k !== 'apiVersion') out[k] = v;
  return out;
}

/** A stored (hub-shaped) object as the request's version shows it, without kind/apiVersion. */
function toWire(type: ResourceType, obj: JsonObject): JsonObject {
  const body = withoutTypeMeta(obj);
  return type.conversion === undefined ? body : type.conversion.fromHub(body);
}

function ok(
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

/** Parses a request body by its content type. @throws ApiError (400 or 415) */
function parseBody(body: Buffer, contentType: string, kindForErrors: string): JsonValue {
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

type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

interface Decoded {
  object: JsonObject;
  warnings: string[];
}

export class ApiHandler {
  private readonly store: ObjectStore;
  private readonly now: () => number;
  private readonly gates: FeatureGates;
  private readonly layout: SliceLayoutRules;
  private readonly onDeleted: ApiHandlerOptions['onDeleted'];
  private readonly openStreams: Set<ServerResponse>;
  private readonly eventTtlMs: number;
  private readonly namespaceExists: (namespace: string) => boolean;

  constructor(options: ApiHandlerOptions) {
    this.store = options.store;
    this.now = options.now;
    this.gates = options.featureGates;
    this.layout = options.sliceLayout;
    this.onDeleted = options.onDeleted;
    this.openStreams = options.openStreams;
    this.eventTtlMs = options.eventTtlMs;
    this.namespaceExists = options.namespaceExists;
  }

  handle(req: ApiRequest): ApiResult | WatchResult | Promise<ApiResult | WatchResult> {
    if (req.type.readOnly === true && !['get', 'list', 'watch'].includes(req.verb))
      throw apiErrors.methodNotAllowed();
    switch (req.verb) {
      case 'get':
        return this.get(req);
      case 'list':
        return this.list(req);
      case 'watch':
        return this.watch(req);
      case 'create':
        return this.create(req);
      case 'update':
        return this.update(req);
      case 'patch':
        return this.patch(req);
      case 'delete':
        return this.delete(req);
      case 'deletecollection':
        return this.deleteCollection(req);
      default:
        throw apiErrors.methodNotAllowed();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Encoding

  private partialMetadata(stored: StoredObject): JsonObject {
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
  private view(req: ApiRequest, stored: StoredObject): StoredObject {
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

  private render(
    req: ApiRequest,
    hubStored: StoredObject,
    code: number,
    warnings: readonly string[] = [],
  ): ApiResult {
    const stored = this.view(req, hubStored);
    const rv = String(stored.rv);
    switch (req.format) {
      case 'table':
        return ok(
          code,
          JSON.stringify(this.table(req, [hubStored], { resourceVersion: rv })),
          warnings,
          TABLE_TYPE,
          rv,
        );
      case 'metadata':
        return ok(
          code,
          JSON.stringify(this.partialMetadata(stored)),
          warnings,
          'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io',
          rv,
        );
      default:
        return ok(code, stored.json, warnings, JSON_TYPE, rv);
    }
  }

  private table(
    req: ApiRequest,
    items: readonly StoredObject[],
    listMeta: JsonObject,
    withHeaders = true,
  ): JsonObject {
    const include = req.query.get('includeObject') ?? 'Metadata';
    const now = this.now();
    const table: JsonObject = { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: listMeta };
    if (withHeaders) table.columnDefinitions = req.type.columns.map((c) => ({ ...c }));
    table.rows = items.map((stored) => {
      const row: JsonObject = { cells: req.type.cells(stored.object, now) };
      if (include === 'Object') row.object = this.view(req, stored).object;
      else if (include !== 'None') row.object = this.partialMetadata(stored);
      return row;
    });
    return table;
  }

  private renderList(
    req: ApiRequest,
    items: readonly StoredObject[],
    listMeta: JsonObject,
  ): ApiResult {
    if (req.format === 'table')
      return ok(200, JSON.stringify(this.table(req, items, listMeta)), [], TABLE_TYPE);
    if (req.format === 'metadata') {
      return ok(
        200,
        JSON.stringify({
          kind: 'PartialObjectMetadataList',
          apiVersion: 'meta.k8s.io/v1',
          metadata: listMeta,
          items: items.map((s) => this.partialMetadata(s)),
        }),
        [],
        'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
      );
    }
    const head = JSON.stringify({
      kind: req.type.listKind,
      apiVersion: req.type.apiVersion,
      metadata: listMeta,
    });
    return ok(
      200,
      `${head.slice(0, -1)},"items":[${items.map((s) => this.view(req, s).itemJson).join(',')}]}`,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Decoding and options

  private fieldValidation(req: ApiRequest, optionsKind: string): FieldValidation {
    const value = req.query.get('fieldValidation') ?? '';
    if (value === '') return 'Warn';
    if (value === 'Ignore' || value === 'Warn' || value === 'Strict') return value;
    throw apiErrors.badRequest(
      `fieldValidation parameter unsupported: ${value}. Must be one of: Ignore, Warn, Strict`.replace(
        optionsKind,
        optionsKind,
      ),
    );
  }

  private checkOptions(req: ApiRequest, optionsKind: string, isApply = false): void {
    const errs: FieldError[] = [];
    const dryRun = req.query.getAll('dryRun');
    for (const value of dryRun) {
      if (value !== 'All')
        errs.push(fieldError.notSupported(FieldPath.root('dryRun'), dryRun, ['All']));
    }
    const manager = req.query.get('fieldManager');
    if (manager !== null) {
      if (manager.length > 128) errs.push(fieldError.tooLong(FieldPath.root('fieldManager'), 128));
      if (/[^\x20-\x7e]/.test(manager)) {
        errs.push(
          fieldError.invalid(
            FieldPath.root('fieldManager'),
            manager,
            'must only contain printable characters',
          ),
        );
      }
    }
    if (isApply && (manager === null || manager === '')) {
      errs.push(fieldError.required(FieldPath.root('fieldManager'), 'is required for apply patch'));
    }
    if (!isApply && req.verb === 'patch' && req.query.has('force')) {
      errs.push(
        fieldError.forbidden(FieldPath.root('force'), 'may not be specified for non-apply patch'),
      );
    }
    if (errs.length > 0)
      throw apiErrors.invalid({ group: 'meta.k8s.io', name: optionsKind }, '', errs);
  }

  private dryRun(req: ApiRequest): boolean {
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

  private manager(req: ApiRequest): string {
    const explicit = req.query.get('fieldManager');
    if (explicit !== null && explicit !== '') return explicit;
    return req.userAgent.split('/')[0] ?? '';
  }

  /** Decodes a whole object of the request's type (POST/PUT bodies, patched objects). */
  private decode(
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
    const unknown = report.unknownFields.map((f) => `unknown field "${f}"`);
    if (unknown.length > 0 && validation === 'Strict') {
      throw apiErrors.badRequest(
        `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${unknown.join(', ')}`,
      );
    }
    // An apply configuration is converted and defaulted only once merged (see apply()).
    if (!partial) {
      if (type.conversion !== undefined) object = type.conversion.toHub(object);
      type.applyDefaults(object, this.now());
    }
    return { object, warnings: validation === 'Warn' ? unknown : [] };
  }

  private readBody(req: ApiRequest, accepted: readonly string[]): JsonValue {
    const contentType = req.contentType === '' ? JSON_TYPE : req.contentType;
    if (!accepted.includes(contentType)) {
      // The real server also takes protobuf; it is listed as the real server lists it.
      throw apiErrors.unsupportedMediaType([...accepted, 'application/vnd.kubernetes.protobuf']);
    }
    return parseBody(req.body, contentType, req.type.kind);
  }

  /** The store key of the object the request names. */
  private key(req: ApiRequest): string {
    return objectKey(req.namespace, req.name);
  }

  /**
   * `EnsureObjectNamespaceMatchesRequestNamespace`: an object without a namespace takes the
   * URL's, a cluster-scoped one loses any; a different one is refused.
   */
  private ensureNamespace(req: ApiRequest, object: JsonObject): void {
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

  private live(req: ApiRequest): StoredObject {
    const stored = this.store.get(req.type.resource, this.key(req));
    if (stored === undefined) throw apiErrors.notFound(groupResource(req.type), req.name);
    return stored;
  }

  // -------------------------------------------------------------------------------------------
  // Read

  private get(req: ApiRequest): ApiResult {
    return this.render(req, this.live(req), 200);
  }

  private selectors(req: ApiRequest): { labels: LabelSelector; fields: FieldSelector } {
    const { type } = req;
    try {
      const labels = parseLabelSelector(req.query.get('labelSelector') ?? '');
      const fields = parseFieldSelector(req.query.get('fieldSelector') ?? '', (label) => {
        if (!type.fieldLabels.includes(label)) throw new SelectorError(type.fieldLabelError(label));
        return type.fieldLabelAliases?.[label];
      });
      return { labels, fields };
    } catch (error) {
      if (error instanceof SelectorError) throw apiErrors.badRequest(error.message);
      throw error;
    }
  }

  private matcher(
    labels: LabelSelector,
    fields: FieldSelector,
  ): ((s: StoredObject) => boolean) | undefined {
    if (labels.empty && fields.empty) return undefined;
    return (s) => labels.matches(s.labels) && fields.matches(s.fields);
  }

  private pinned(req: ApiRequest, fields: FieldSelector): Record<string, string> {
    const out: Record<string, string> = {};
    for (const field of req.type.indexing.indexedFields) {
      const value = fields.exact(field);
      if (value !== undefined) out[field] = value;
    }
    return out;
  }

  /** The namespace a collection request is limited to, as a store query. */
  private scope(req: ApiRequest): { namespace?: string } {
    return req.namespace === '' ? {} : { namespace: req.namespace };
  }

  private validateListOptions(req: ApiRequest, watch: boolean): void {
    const q = req.query;
    const rv = q.get('resourceVersion') ?? '';
    const match = q.get('resourceVersionMatch') ?? '';
    const cont = q.get('continue') ?? '';
    const sendInitialEvents = q.get('sendInitialEvents');
    const errs: FieldError[] = [];
    const path = FieldPath.root('resourceVersionMatch');
    if (watch) {
      if (sendInitialEvents !== null && match !== 'NotOlderThan') {
        errs.push(
          fieldError.forbidden(
            path,
            'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
          ),
        );
      }
      if (match !== '') {
        if (sendInitialEvents === null)
          errs.push(
            fieldError.forbidden(
              path,
              'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
            ),
          );
        if (match !== 'NotOlderThan')
          errs.push(fieldError.notSupported(path, match, ['NotOlderThan']));
        if (cont !== '')
          errs.push(
            fieldError.forbidden(
              path,
              'resourceVersionMatch is forbidden when continue is provided',
            ),
          );
      }
    } else {
      if (match !== '') {
        if (rv === '')
          errs.push(
            fieldError.forbidden(
              path,
              'resourceVersionMatch is forbidden unless resourceVersion is provided',
            ),
          );
        if (cont !== '')
          errs.push(
            fieldError.forbidden(
              path,
              'resourceVersionMatch is forbidden when continue is provided',
            ),
          );
        if (match !== 'Exact' && match !== 'NotOlderThan')
          errs.push(fieldError.notSupported(path, match, ['Exact', 'NotOlderThan', '']));
        if (match === 'Exact' && rv === '0')
          errs.push(
            fieldError.forbidden(
              path,
              'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            ),
          );
      }
      if (sendInitialEvents !== null)
        errs.push(
          fieldError.forbidden(
            FieldPath.root('sendInitialEvents'),
            'sendInitialEvents is forbidden for list',
          ),
        );
    }
    if (errs.length > 0)
      throw apiErrors.invalid({ group: 'meta.k8s.io', name: 'ListOptions' }, '', errs);
  }

  private parseRv(value: string): number {
    if (!/^\d+$/.test(value)) throw apiErrors.badRequest(`invalid resource version: ${value}`);
    return Number(value);
  }

  private async list(req: ApiRequest): Promise<ApiResult> {
    this.validateListOptions(req, false);
    const { labels, fields } = this.selectors(req);
    const q = req.query;
    const rvText = q.get('resourceVersion') ?? '';
    const match = q.get('resourceVersionMatch') ?? '';
    const cont = q.get('continue') ?? '';
    // resourceVersion=0 is served from the watch cache, which ignores limit (the cacher's
    // `hasLimit := pred.Limit > 0 && listRV != 0`): everything at once, no continue token.
    const limitText = rvText === '0' && cont === '' ? '' : (q.get('limit') ?? '');
    const limit = limitText === '' ? 0 : Number.parseInt(limitText, 10);
    let atRv: number | undefined;
    let after: string | undefined;
    if (cont !== '') {
      if (rvText !== '' && rvText !== '0')
        throw apiErrors.badRequest(
          'specifying resource version is not allowed when using continue',
        );
      const token = decodeContinue(cont);
      // The token's key is relative to the listed prefix, as etcd's is: the name in a namespace.
      after = objectKey(req.namespace, token.after);
      if (token.rv > 0) {
        if (token.rv < this.store.historyFloor) {
          const error = apiErrors.expired(INCONSISTENT_CONTINUE);
          error.body.metadata.continue = encodeContinue(-1, token.after);
          throw error;
        }
        atRv = token.rv;
      }
    } else if (rvText !== '' && rvText !== '0') {
      const rv = this.parseRv(rvText);
      if (rv > this.store.resourceVersion) {
        const reached = await this.store.waitForResourceVersion(rv, TOO_LARGE_RV_WAIT_MS);
        if (!reached) throw apiErrors.tooLargeResourceVersion(rv, this.store.resourceVersion);
      }
      if (match === 'Exact') atRv = rv;
    }
    const matchFn = this.matcher(labels, fields);
    let result;
    try {
      result = this.store.list(req.type.resource, {
        ...this.scope(req),
        ...(atRv === undefined ? {} : { atRv }),
        ...(after === undefined ? {} : { after }),
        ...(limit > 0 ? { limit } : {}),
        ...(matchFn === undefined ? {} : { match: matchFn }),
        pinned: this.pinned(req, fields),
        filtered: matchFn !== undefined,
      });
    } catch (error) {
      if (error instanceof ExpiredError) throw apiErrors.expired(error.message);
      throw error;
    }
    const listMeta: JsonObject = { resourceVersion: String(result.rv) };
    if (result.continueAfter !== undefined) {
      const namespacePrefix = req.namespace === '' ? '' : `${req.namespace}/`;
      listMeta.continue = encodeContinue(
        result.rv,
        result.continueAfter.slice(namespacePrefix.length),
      );
      if (result.remainingItemCount !== undefined)
        listMeta.remainingItemCount = result.remainingItemCount;
    }
    return this.renderList(req, result.items, listMeta);
  }

  private watch(req: ApiRequest): WatchResult | Promise<WatchResult> {
    this.validateListOptions(req, true);
    const { labels, fields } = this.selectors(req);
    const q = req.query;
    const rvText = q.get('resourceVersion') ?? '';
    const timeoutText = q.get('timeoutSeconds') ?? '';
    const timeoutS =
      timeoutText === '' ? WATCH_DEFAULT_TIMEOUT_S : Number.parseInt(timeoutText, 10);
    const bookmarks =
      q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1';
    const sendInitialEvents = q.get('sendInitialEvents') === 'true';
    const matchFn = this.matcher(labels, fields) ?? (() => true);
    const nameFilter = req.name;
    const namespaceFilter = req.namespace;
    const matches = (s: StoredObject) =>
      (namespaceFilter === '' || s.namespace === namespaceFilter) &&
      (nameFilter === '' || s.name === nameFilter) &&
      matchFn(s);
    const start = (): WatchResult => {
      const initial: StoredObject[] = [];
      let replay: { type: EventType; object: StoredObject }[] = [];
      let expired: ApiError | undefined;
      let initialEventsEnd = false;
      if (rvText === '' || rvText === '0' || sendInitialEvents) {
        const listed = this.store.list(req.type.resource, { ...this.scope(req), match: matches });
        initial.push(...listed.items);
        initialEventsEnd = bookmarks && (sendInitialEvents || rvText === '');
      } else {
        const rv = this.parseRv(rvText);
        try {
          replay = this.store
            .eventsSince(req.type.resource, rv)
            .flatMap((event): { type: EventType; object: StoredObject }[] => {
              const cur = event.type !== 'DELETED' && matches(event.object);
              const prev = event.prev !== undefined && matches(event.prev);
              if (cur && prev) return [{ type: 'MODIFIED', object: event.object }];
              if (cur) return [{ type: 'ADDED', object: event.object }];
              if (prev) {
                return [
                  {
                    type: 'DELETED',
                    object:
                      event.type === 'DELETED'
                        ? event.object
                        : this.store.restamp(event.prev, event.rv),
                  },
                ];
              }
              return [];
            });
        } catch (error) {
          if (!(error instanceof ExpiredError)) throw error;
          expired = apiErrors.expired(error.message);
        }
      }
      return {
        watch: (res) => {
          this.stream(req, res, {
            initial,
            replay,
            expired,
            initialEventsEnd,
            bookmarks,
            timeoutS,
            matches,
          });
        },
      };
    };
    if (
      rvText !== '' &&
      rvText !== '0' &&
      /^\d+$/.test(rvText) &&
      Number(rvText) > this.store.resourceVersion
    ) {
      const wanted = Number(rvText);
      return this.store.waitForResourceVersion(wanted, TOO_LARGE_RV_WAIT_MS).then((reached) => {
        if (!reached) {
          const error = apiErrors.tooLargeResourceVersion(wanted, this.store.resourceVersion);
          return {
            watch: (res) => {
              this.stream(req, res, {
                initial: [],
                replay: [],
                expired: error,
                initialEventsEnd: false,
                bookmarks,
                timeoutS,
                matches,
              });
            },
          };
        }
        return start();
      });
    }
    return start();
  }

  private stream(
    req: ApiRequest,
    res: ServerResponse,
    plan: {
      initial: StoredObject[];
      replay: { type: EventType; object: StoredObject }[];
      expired: ApiError | undefined;
      initialEventsEnd: boolean;
      bookmarks: boolean;
      timeoutS: number;
      matches: (s: StoredObject) => boolean;
    },
  ): void {
    const contentType = req.format === 'table' ? TABLE_TYPE : JSON_TYPE;
    res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-cache, private' });
    // Clients (informers) wait for the headers before they consider the watch established.
    res.flushHeaders();
    this.openStreams.add(res);
    let headersSent = false;
    const encode = (type: string, stored: StoredObject): string => {
      if (req.format === 'table') {
        const table = this.table(
          req,
          [stored],
          { resourceVersion: String(stored.rv) },
          !headersSent,
        );
        headersSent = true;
        return `{"type":"${type}","object":${JSON.stringify(table)}}\n`;
      }
      if (req.format === 'metadata')
        return `{"type":"${type}","object":${JSON.stringify(this.partialMetadata(stored))}}\n`;
      return `{"type":"${type}","object":${this.view(req, stored).json}}\n`;
    };
    const bookmark = (annotate: boolean): string => {
      const meta: JsonObject = { resourceVersion: String(this.store.resourceVersion) };
      if (annotate) meta.annotations = { 'k8s.io/initial-events-end': 'true' };
      const empty = normalize(req.type.schema, { metadata: meta });
      return `{"type":"BOOKMARK","object":${JSON.stringify({ kind: req.type.kind, apiVersion: req.type.apiVersion, ...empty })}}\n`;
    };
    let closed = false;
    const timers: NodeJS.Timeout[] = [];
    let unregister: (() => void) | undefined = undefined;
    const finish = () => {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      unregister?.();
      this.openStreams.delete(res);
      if (!res.writableEnded) res.end();
    };
    res.on('close', finish);
    if (plan.expired !== undefined) {
      res.write(`{"type":"ERROR","object":${JSON.stringify(plan.expired.body)}}\n`);
      finish();
      return;
    }
    const chunks: string[] = [];
    for (const s of plan.initial) chunks.push(encode('ADDED', s));
    for (const e of plan.replay) chunks.push(encode(e.type, e.object));
    if (plan.initialEventsEnd) chunks.push(bookmark(true));
    if (chunks.length > 0) res.write(chunks.join(''));
    const sink: WatchSink = {
      resource: req.type.resource,
      lastRv: this.store.resourceVersion,
      matches: plan.matches,
      deliver: (type, stored, shared) => {
        if (closed) return;
        // A consumer that stops reading is cut off, as the real watch cache does, instead of
        // buffering without bound.
        if (res.writableLength > 64 * 1024 * 1024) {
          finish();
          return;
        }
        if (req.format !== 'json') {
          res.write(encode(type, stored));
          return;
        }
        // Watchers of one resource in different versions share the event, not its encoding.
        const key = `${req.type.apiVersion} ${type}`;
        let line = shared.get(key);
        if (line === undefined) {
          line = Buffer.from(encode(type, stored));
          shared.set(key, line);
        }
        res.write(line);
      },
      terminate: finish,
    };
    unregister = this.store.watch(sink);
    const deadline = Date.now() + plan.timeoutS * 1000;
    timers.push(setTimeout(finish, Math.max(0, plan.timeoutS * 1000)));
    if (plan.bookmarks) {
      const schedule = (from: number) => {
        let at = from + BOOKMARK_INTERVAL_MS;
        if (deadline - 2000 < at) at = deadline - 2000;
        if (at <= Date.now()) return;
        timers.push(
          setTimeout(() => {
            if (closed) return;
            res.write(bookmark(false));
            schedule(Date.now());
          }, at - Date.now()),
        );
      };
      schedule(Date.now());
    }
  }

  // -------------------------------------------------------------------------------------------
  // Write

  private generateName(prefix: string): string {
    let name =
      prefix.length > MAX_GENERATED_NAME_LENGTH
        ? prefix.slice(0, MAX_GENERATED_NAME_LENGTH)
        : prefix;
    for (let i = 0; i < 5; i++)
      name += GENERATE_SUFFIX_ALPHABET[randomInt(GENERATE_SUFFIX_ALPHABET.length)] ?? 'x';
    return name;
  }

  private trackingOptions(req: ApiRequest) {
    return {
      schema: wireSchema(req.type),
      manager: this.manager(req),
      apiVersion: req.type.apiVersion,
      subresource: req.subresource,
      resetFields:
        req.subresource === 'status' ? (req.type.status?.resetFields ?? []) : req.type.resetFields,
      nowMs: this.now(),
    };
  }

  /** Everything from BeforeCreate to storage: system fields, strategy, admission, validation. */
  private createObject(
    req: ApiRequest,
    object: JsonObject,
    entries: ManagerEntry[],
    warnings: readonly string[],
  ): ApiResult {
    const { type } = req;
    const meta = metaOf(object);
    this.ensureNamespace(req, object);
    if (type.namespaced && !this.namespaceExists(req.namespace)) {
      // NamespaceLifecycle admission: no creates in a namespace that does not exist.
      throw apiErrors.notFound({ group: '', name: 'namespaces' }, req.namespace);
    }
    Reflect.deleteProperty(meta, 'deletionTimestamp');
    Reflect.deleteProperty(meta, 'deletionGracePeriodSeconds');
    if (!type.hasGeneration) Reflect.deleteProperty(meta, 'generation');
    const requestedRv = strAt(meta, 'resourceVersion') ?? '';
    meta.managedFields = encodeManagedFields(entries);
    type.prepareForCreate(object, this.gates);
    meta.uid = randomUUID();
    meta.creationTimestamp = formatTime(this.now());
    const generateName = strAt(meta, 'generateName') ?? '';
    const explicitName = strAt(meta, 'name') ?? '';
    if (explicitName === '' && generateName !== '') meta.name = this.generateName(generateName);
    type.admitCreate(object);
    let normalized = reorder(type.schema, object);
    let nmeta = metaOf(normalized);
    const errs = type.validate(normalized, this.layout);
    if (errs.length > 0)
      throw apiErrors.invalid(internalGroupKind(type), strAt(nmeta, 'name') ?? '', errs);
    if (requestedRv !== '')
      throw apiErrors.unknown(500, 'resourceVersion should not be set on objects to be created');
    // A generated name that is taken is retried, as the registry does (RetryGenerateName).
    for (
      let attempt = 0;
      this.store.get(type.resource, objectKey(req.namespace, strAt(nmeta, 'name') ?? '')) !==
      undefined;
      attempt++
    ) {
      if (explicitName !== '' || generateName === '' || attempt >= 7) {
        throw apiErrors.alreadyExists(groupResource(type), strAt(nmeta, 'name') ?? '');
      }
      nmeta.name = this.generateName(generateName);
      normalized = reorder(type.schema, normalized);
      nmeta = metaOf(normalized);
    }
    if (this.dryRun(req)) {
      const full: JsonObject = {
        kind: type.kind,
        apiVersion: type.apiVersion,
        ...toWire(type, normalized),
      };
      return ok(201, JSON.stringify(full), warnings);
    }
    const stored = this.store.create(type.resource, normalized);
    this.startTimeToLive(type, stored);
    return this.render(req, stored, 201, warnings);
  }

  /** An Event's TTL starts again at every write, as its etcd lease does. */
  private startTimeToLive(type: ResourceType, stored: StoredObject): void {
    if (type.expires === true)
      this.store.setExpiry(type.resource, stored.key, this.now() + this.eventTtlMs);
  }

  private create(req: ApiRequest): ApiResult {
    this.checkOptions(req, 'CreateOptions');
    const validation = this.fieldValidation(req, 'CreateOptions');
    const body = this.readBody(req, [JSON_TYPE, 'application/yaml']);
    const { object, warnings } = this.decode(req, body, validation);
    this.ensureNamespace(req, object);
    return this.createTracked(req, object, warnings);
  }

  /** A create (POST, or an update that creates), its managed fields tracked from nothing. */
  private createTracked(
    req: ApiRequest,
    object: JsonObject,
    warnings: readonly string[],
  ): ApiResult {
    const entries = trackUpdate(
      decodeManagedFields(metaOf(object)) ?? [],
      this.zeroObject(req),
      this.comparable(req, object),
      this.trackingOptions(req),
    );
    return this.createObject(req, object, entries, warnings);
  }

  /**
   * Everything from the storage preconditions to the write for an update of `live` into
   * `object` (PUT, patches, apply): uid and resourceVersion preconditions, strategy, validation,
   * no-op detection, finalizer-driven deletion.
   */
  private updateObject(
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
        `StorageError: invalid object, Code: 4, Key: /registry/${type.resource === 'nodes' ? 'minions' : type.resource}/${this.key(req)}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${uid}, UID in object meta: ${live.uid}`,
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
    else type.prepareForUpdate(object, liveObject, this.gates);
    metaOf(object).managedFields = encodeManagedFields(entries);
    const normalized = reorder(type.schema, object);
    const liveBody: JsonObject = {};
    for (const [k, v] of Object.entries(liveObject))
      if (k !== 'kind' && k !== 'apiVersion') liveBody[k] = v;
    const errs =
      statusStrategy === undefined
        ? type.validateUpdate(normalized, liveBody, this.layout)
        : statusStrategy.validateUpdate(normalized, liveBody);
    if (errs.length > 0) throw apiErrors.invalid(internalGroupKind(type), req.name, errs);
    if (jsonEqual(normalized, liveBody)) return this.render(req, live, 200, warnings);
    if (this.dryRun(req)) {
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
    const stored = this.store.update(type.resource, normalized);
    this.startTimeToLive(type, stored);
    const nmeta = metaOf(normalized);
    if (nmeta.deletionTimestamp !== undefined && (listAt(nmeta, 'finalizers') ?? []).length === 0) {
      const deleted = this.store.delete(type.resource, stored.key);
      if (deleted !== undefined) this.onDeleted(type, deleted, 'Background');
    }
    return this.render(req, stored, 200, warnings);
  }

  private update(req: ApiRequest): ApiResult {
    this.checkOptions(req, 'UpdateOptions');
    const validation = this.fieldValidation(req, 'UpdateOptions');
    const body = this.readBody(req, [JSON_TYPE, 'application/yaml']);
    const { object, warnings } = this.decode(req, body, validation);
    this.ensureNamespace(req, object);
    const meta = metaOf(object);
    const name = strAt(meta, 'name') ?? '';
    if (name !== req.name) {
      throw apiErrors.badRequest(
        `the name of the object (${name}) does not match the name on the URL (${req.name})`,
      );
    }
    const existing = this.store.get(req.type.resource, this.key(req));
    if (existing === undefined && req.type.allowCreateOnUpdate === true && req.subresource === '') {
      // The registry's Update creates the object (BeforeCreate, 201) for such a strategy.
      Reflect.deleteProperty(meta, 'resourceVersion');
      return this.createTracked(req, object, warnings);
    }
    const live = this.live(req);
    const liveEntries = decodeManagedFields(metaOf(live.object)) ?? [];
    const entries = trackUpdate(
      decodeManagedFields(meta) ?? liveEntries,
      this.comparable(req, live),
      this.comparable(req, object),
      this.trackingOptions(req),
    );
    return this.updateObject(req, live, object, entries, warnings);
  }

  /**
   * What a create is compared with for field tracking: the type's zero value (the field
   * manager's empty object), so that fields left at their zero value (an empty
   * `reportingComponent`, a null time) are nobody's.
   */
  private zeroObject(req: ApiRequest): JsonObject {
    return normalize(wireSchema(req.type), {});
  }

  /**
   * The object as field tracking compares it: in the request's version (managed fields are
   * recorded per version), without kind/apiVersion.
   */
  private comparable(req: ApiRequest, value: StoredObject | JsonObject): JsonObject {
    return toWire(req.type, isStoredObject(value) ? value.object : value);
  }

  private patch(req: ApiRequest): ApiResult {
    const patchTypes = [
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
      'application/apply-patch+yaml',
    ];
    if (!patchTypes.includes(req.contentType)) throw apiErrors.unsupportedMediaType(patchTypes);
    const isApply = req.contentType === 'application/apply-patch+yaml';
    this.checkOptions(req, 'PatchOptions', isApply);
    const validation = this.fieldValidation(req, 'PatchOptions');
    const patchDoc = parseBody(req.body, req.contentType, req.type.kind);
    if (isApply) return this.apply(req, patchDoc, validation);
    const live = this.live(req);
    // A patch applies to the object in the request's version.
    const base = this.view(req, live).object;
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
    const { object, warnings } = this.decode(req, patched, validation);
    this.ensureNamespace(req, object);
    const patchedName = strAt(metaOf(object), 'name') ?? '';
    if (patchedName !== req.name) {
      throw apiErrors.badRequest(
        `the name of the object (${patchedName}) does not match the name on the URL (${req.name})`,
      );
    }
    const liveEntries = decodeManagedFields(metaOf(live.object)) ?? [];
    const entries = trackUpdate(
      decodeManagedFields(metaOf(object)) ?? liveEntries,
      this.comparable(req, live),
      this.comparable(req, object),
      this.trackingOptions(req),
    );
    return this.updateObject(req, live, object, entries, warnings);
  }

  private apply(req: ApiRequest, doc: JsonValue, validation: FieldValidation): ApiResult {
    const { type } = req;
    const { object: applied, warnings } = this.decode(req, doc, validation, true);
    const appliedMeta = objAt(applied, 'metadata') ?? {};
    const appliedName = strAt(appliedMeta, 'name') ?? '';
    if (appliedName !== '' && appliedName !== req.name) {
      throw apiErrors.badRequest(
        `the name of the object (${appliedName}) does not match the name on the URL (${req.name})`,
      );
    }
    const force = req.query.get('force') === 'true';
    const options = this.trackingOptions(req);
    const live = this.store.get(type.resource, this.key(req));
    const liveBody: JsonObject =
      live === undefined ? { metadata: { name: req.name } } : this.comparable(req, live);
    const entries = live === undefined ? [] : (decodeManagedFields(metaOf(live.object)) ?? []);
    const result = serverSideApply(entries, liveBody, applied, force, options);
    if (result.conflicts.length > 0) {
      const report = conflictReport(result.conflicts);
      throw new ApiError(409, 'Conflict', report.message, { causes: report.causes });
    }
    metaOf(result.object).name = req.name;
    this.ensureNamespace(req, result.object);
    const merged =
      type.conversion === undefined ? result.object : type.conversion.toHub(result.object);
    type.applyDefaults(merged, this.now());
    if (live === undefined) {
      const decoded = normalize(type.schema, merged);
      return this.createObject(req, decoded, result.entries, warnings);
    }
    return this.updateObject(req, live, normalize(type.schema, merged), result.entries, warnings);
  }

  // -------------------------------------------------------------------------------------------
  // Delete

  private deleteOptions(req: ApiRequest): {
    uid?: string;
    resourceVersion?: string;
    propagation: string;
  } {
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
    let propagation =
      strAt(options, 'propagationPolicy') ?? req.query.get('propagationPolicy') ?? '';
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
  private deleteOne(
    req: ApiRequest,
    live: StoredObject,
    options: { uid?: string; resourceVersion?: string; propagation: string },
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
      if (meta.deletionTimestamp !== undefined || this.dryRun(req))
        return this.render(req, live, 200);
      const object = live.object;
      const m = metaOf(object);
      m.deletionTimestamp = formatTime(this.now());
      m.deletionGracePeriodSeconds = 0;
      m.finalizers = wanted;
      if (type.hasGeneration) m.generation = (numAt(m, 'generation') ?? 0) + 1;
      const body: JsonObject = {};
      for (const [k, v] of Object.entries(object))
        if (k !== 'kind' && k !== 'apiVersion') body[k] = v;
      const stored = this.store.update(type.resource, reorder(type.schema, body));
      this.onDeleted(type, stored, options.propagation);
      return this.render(req, stored, 200);
    }
    if (this.dryRun(req)) return this.deletedResponse(req, live);
    const deleted = this.store.delete(type.resource, live.key);
    if (deleted === undefined) throw apiErrors.notFound(groupResource(type), live.name);
    this.onDeleted(type, deleted, options.propagation);
    return this.deletedResponse(req, deleted);
  }

  private deletedResponse(req: ApiRequest, deleted: StoredObject): ApiResult {
    if (req.type.returnDeletedObject) return this.render(req, deleted, 200);
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

  private delete(req: ApiRequest): ApiResult {
    this.checkOptions(req, 'DeleteOptions');
    const options = this.deleteOptions(req);
    return this.deleteOne(req, this.live(req), options);
  }

  private deleteCollection(req: ApiRequest): ApiResult {
    this.checkOptions(req, 'DeleteOptions');
    this.validateListOptions(req, false);
    const options = this.deleteOptions(req);
    const { labels, fields } = this.selectors(req);
    const matchFn = this.matcher(labels, fields);
    const listed = this.store.list(req.type.resource, {
      ...this.scope(req),
      ...(matchFn === undefined ? {} : { match: matchFn }),
      pinned: this.pinned(req, fields),
      filtered: matchFn !== undefined,
    });
    for (const item of listed.items) {
      const live = this.store.get(req.type.resource, item.key);
      if (live !== undefined) this.deleteOne(req, live, options);
    }
    return this.renderList(req, listed.items, { resourceVersion: String(listed.rv) });
  }
}

function isStoredObject(value: StoredObject | JsonObject): value is StoredObject {
  return typeof value.itemJson === 'string' && typeof value.json === 'string' && 'object' in value;
}

const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** apimachinery's continue token: base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"/<name>\u0000"}. */
export function encodeContinue(rv: number, after: string): string {
  return Buffer.from(
    JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `/${after}\u0000` }),
  ).toString('base64url');
}

function decodeContinue(token: string): { rv: number; after: string } {
  const invalid = (why: string) =>
    apiErrors.badRequest(`invalid continue token: continue key is not valid: ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalid(error instanceof Error ? error.message : 'malformed');
  }
  if (!isJsonObject(parsed as JsonValue) || (parsed as JsonObject).v !== 'meta.k8s.io/v1') {
    throw invalid('server does not recognize this encoded version');
  }
  const obj = parsed as JsonObject;
  const rv = typeof obj.rv === 'number' ? obj.rv : 0;
  const start = typeof obj.start === 'string' ? obj.start : '';
  if (rv === 0) throw invalid('incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (!start.startsWith('/') || start.length < 2) throw invalid('continue key is not valid');
  const key = start.slice(1);
  return { rv, after: key.endsWith('\u0000') ? key.slice(0, -1) : key };
}
