import { randomInt, randomUUID } from 'node:crypto';
import { apiErrors } from './api-error';
import { metaOf, strAt } from './api-schemas';
import {
  comparable,
  ensureNamespace,
  groupResource,
  internalGroupKind,
  isDryRun,
  JSON_TYPE,
  ok,
  startTimeToLive,
  toWire,
  trackingOptions,
  zeroObject,
} from './handler-context';
import type { ApiRequest, ApiResult, HandlerContext } from './handler-context';
import { decodeManagedFields, encodeManagedFields, trackUpdate } from './managed-fields';
import type { ManagerEntry } from './managed-fields';
import { formatTime, reorder } from './object-schema';
import type { JsonObject } from './object-schema';
import { objectKey } from './object-store';
import { checkOptions, decode, fieldValidation, readBody } from './request-decoding';
import { render } from './response-encoding';

/** Create: POST, and the creates that an update or an apply of a missing object turn into. */

const GENERATE_SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATED_NAME_LENGTH = 58;

function withGeneratedSuffix(prefix: string): string {
  let name =
    prefix.length > MAX_GENERATED_NAME_LENGTH ? prefix.slice(0, MAX_GENERATED_NAME_LENGTH) : prefix;
  for (let i = 0; i < 5; i++)
    name += GENERATE_SUFFIX_ALPHABET[randomInt(GENERATE_SUFFIX_ALPHABET.length)] ?? 'x';
  return name;
}

export function createObject(
  ctx: HandlerContext,
  req: ApiRequest,
  object: JsonObject,
  entries: ManagerEntry[],
  warnings: readonly string[],
): ApiResult {
  const { type } = req;
  const meta = metaOf(object);
  ensureNamespace(req, object);
  if (type.namespaced && !ctx.namespaceExists(req.namespace)) {
    // NamespaceLifecycle admission: no creates in a namespace that does not exist.
    throw apiErrors.notFound({ group: '', name: 'namespaces' }, req.namespace);
  }
  Reflect.deleteProperty(meta, 'deletionTimestamp');
  Reflect.deleteProperty(meta, 'deletionGracePeriodSeconds');
  if (!type.hasGeneration) Reflect.deleteProperty(meta, 'generation');
  const requestedRv = strAt(meta, 'resourceVersion') ?? '';
  meta.managedFields = encodeManagedFields(entries);
  type.prepareForCreate(object, ctx.featureGates);
  meta.uid = randomUUID();
  meta.creationTimestamp = formatTime(ctx.now());
  const generateName = strAt(meta, 'generateName') ?? '';
  const explicitName = strAt(meta, 'name') ?? '';
  if (explicitName === '' && generateName !== '') meta.name = withGeneratedSuffix(generateName);
  type.admitCreate(object);
  let normalized = reorder(type.schema, object);
  let nmeta = metaOf(normalized);
  const errs = type.validate(normalized, ctx.sliceLayout);
  if (errs.length > 0)
    throw apiErrors.invalid(internalGroupKind(type), strAt(nmeta, 'name') ?? '', errs);
  if (requestedRv !== '')
    throw apiErrors.unknown(500, 'resourceVersion should not be set on objects to be created');
  // A generated name that is taken is retried, as the registry does (RetryGenerateName).
  for (
    let attempt = 0;
    ctx.store.get(type.resource, objectKey(req.namespace, strAt(nmeta, 'name') ?? '')) !==
    undefined;
    attempt++
  ) {
    if (explicitName !== '' || generateName === '' || attempt >= 7) {
      throw apiErrors.alreadyExists(groupResource(type), strAt(nmeta, 'name') ?? '');
    }
    nmeta.name = withGeneratedSuffix(generateName);
    normalized = reorder(type.schema, normalized);
    nmeta = metaOf(normalized);
  }
  if (isDryRun(req)) {
    const full: JsonObject = {
      kind: type.kind,
      apiVersion: type.apiVersion,
      ...toWire(type, normalized),
    };
    return ok(201, JSON.stringify(full), warnings);
  }
  const stored = ctx.store.create(type.resource, normalized);
  startTimeToLive(ctx, type, stored);
  return render(ctx, req, stored, 201, warnings);
}

export function create(ctx: HandlerContext, req: ApiRequest): ApiResult {
  checkOptions(req, 'CreateOptions');
  const validation = fieldValidation(req);
  const body = readBody(req, [JSON_TYPE, 'application/yaml']);
  const { object, warnings } = decode(ctx, req, body, validation);
  ensureNamespace(req, object);
  return createTracked(ctx, req, object, warnings);
}

/** A create (POST, or an update that creates), its managed fields tracked from nothing. */
export function createTracked(
  ctx: HandlerContext,
  req: ApiRequest,
  object: JsonObject,
  warnings: readonly string[],
): ApiResult {
  const entries = trackUpdate(
    decodeManagedFields(metaOf(object)) ?? [],
    zeroObject(req),
    comparable(req, object),
    trackingOptions(ctx, req),
  );
  return createObject(ctx, req, object, entries, warnings);
}
