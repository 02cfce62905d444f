import { posix } from 'node:path';
import { apiErrors } from './api-error';
import { FieldPath, errorString, fieldError, goQuote } from './field-errors';
import type { FieldError } from './field-errors';
import { goJsonSyntaxError } from './go-json';
import type { ApiRequest } from './handler-context';
import { isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import type { StoredObject } from './object-store';
import { SelectorError, parseFieldSelector, parseLabelSelector } from './selectors';
import type { FieldSelector, LabelSelector } from './selectors';

/**
 * The ListOptions that list, watch and deletecollection share: selectors, resourceVersion and
 * resourceVersionMatch, and apimachinery's continue token.
 */

/** How long a read waits for a resourceVersion ahead of the store before a 504, ms. */
export const TOO_LARGE_RV_WAIT_MS = 3_000;

export function selectors(req: ApiRequest): { labels: LabelSelector; fields: FieldSelector } {
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

export function matcher(
  labels: LabelSelector,
  fields: FieldSelector,
): ((s: StoredObject) => boolean) | undefined {
  if (labels.empty && fields.empty) return undefined;
  return (s) => labels.matches(s.labels) && fields.matches(s.fields);
}

/** The indexed fields a field selector pins to one value, for the store's index. */
export function pinned(req: ApiRequest, fields: FieldSelector): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of req.type.indexing.indexedFields) {
    const value = fields.exact(field);
    if (value !== undefined) out[field] = value;
  }
  return out;
}

/** The namespace a collection request is limited to, as a store query. */
export function scope(req: ApiRequest): { namespace?: string } {
  return req.namespace === '' ? {} : { namespace: req.namespace };
}

export function validateListOptions(req: ApiRequest, watch: boolean): void {
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
          fieldError.forbidden(path, 'resourceVersionMatch is forbidden when continue is provided'),
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
          fieldError.forbidden(path, 'resourceVersionMatch is forbidden when continue is provided'),
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

/** Go's `strconv.ParseBool`, as the query parameter conversion reads a boolean option. */
export function queryBool(value: string | null): boolean {
  return value !== null && ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value);
}

/**
 * A resourceVersion as `APIObjectVersioner.ParseResourceVersion`
 * (`staging/src/k8s.io/apiserver/pkg/storage/api_object_versioner.go`) reads it: "" and "0" are
 * 0, anything but a uint64 is a `storage.InvalidError` on `resourceVersion` carrying strconv's
 * text. The watch cache returns that error as it is, which the handler answers as a 500 without
 * a reason (get, watch, and lists it serves); a list that goes to etcd (`resourceVersionMatch=
 * Exact`, or a limit with a version: `cacher/delegator.go` `shouldDelegateList`) wraps it in a
 * 400 "invalid resource version: …". @throws ApiError
 */
export function parseRv(value: string, fromEtcd = false): number {
  if (value === '' || value === '0') return 0;
  if (/^\d+$/.test(value) && BigInt(value) <= 18446744073709551615n) return Number(value);
  const reason = /^\d+$/.test(value) ? 'value out of range' : 'invalid syntax';
  const text = errorString(
    fieldError.invalid(
      FieldPath.root('resourceVersion'),
      value,
      `strconv.ParseUint: parsing ${goQuote(value)}: ${reason}`,
    ),
  );
  throw fromEtcd
    ? apiErrors.badRequest(`invalid resource version: ${text}`)
    : apiErrors.unknown(500, text);
}

export const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** apimachinery's continue token: base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"/<name>\u0000"}. */
export function encodeContinue(rv: number, after: string): string {
  return Buffer.from(
    JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `/${after}\u0000` }),
  ).toString('base64url');
}

/**
 * Go's `base64.RawURLEncoding.DecodeString`, with its error: the index of the first byte that is
 * not in the URL alphabet (padding included), or of the last one when a single character is left
 * over at the end.
 */
function decodeRawBase64Url(text: string): Buffer | string {
  const bad = /[^A-Za-z0-9_-]/.exec(text);
  if (bad !== null) return `illegal base64 data at input byte ${bad.index}`;
  if (text.length % 4 === 1) return `illegal base64 data at input byte ${text.length - 1}`;
  return Buffer.from(text, 'base64url');
}

/** Go's `path.Clean` of an absolute path. */
function cleanPath(key: string): string {
  const cleaned = posix.normalize(key);
  return cleaned.length > 1 && cleaned.endsWith('/') ? cleaned.slice(0, -1) : cleaned;
}

/**
 * `storage.DecodeContinue` (`staging/src/k8s.io/apiserver/pkg/storage/continue.go`), its errors
 * wrapped as the store's `GetList` wraps them. @throws ApiError 400
 */
export function decodeContinue(token: string): { rv: number; after: string } {
  const invalid = (why: string) =>
    apiErrors.badRequest(`invalid continue token: continue key is not valid${why}`);
  const data = decodeRawBase64Url(token);
  if (typeof data === 'string') throw invalid(`: ${data}`);
  const text = data.toString('utf8');
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    throw invalid(`: ${goJsonSyntaxError(text)}`);
  }
  if (!isJsonObject(parsed)) {
    const got = Array.isArray(parsed) ? 'array' : parsed === null ? 'null' : typeof parsed;
    if (got !== 'null')
      throw invalid(`: json: cannot unmarshal ${got} into Go value of type storage.continueToken`);
  }
  const obj: JsonObject = isJsonObject(parsed) ? parsed : {};
  const version = typeof obj.v === 'string' ? obj.v : '';
  if (version !== 'meta.k8s.io/v1')
    throw invalid(`: server does not recognize this encoded version ${version}`);
  const rv = typeof obj.rv === 'number' ? obj.rv : 0;
  const start = typeof obj.start === 'string' ? obj.start : '';
  if (rv === 0) throw invalid(': incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (start === '') throw invalid(': encoded start key empty (version meta.k8s.io/v1)');
  const key = start.startsWith('/') ? start : `/${start}`;
  if (cleanPath(key) !== key) throw invalid(`: ${start}`);
  const after = key.slice(1);
  return { rv, after: after.endsWith('\u0000') ? after.slice(0, -1) : after };
}
