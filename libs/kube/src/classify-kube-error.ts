import { STATUS_CODES } from 'node:http';
import { SlicekeeperError, TerminalError, TransientError, errorMessage } from '@slicekeeper/errors';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';

/**
 * The `code` of a classified Kubernetes error. The syncer branches on these (through
 * {@link kubeErrorCode}, never on strings), so renaming one is a breaking change.
 */
export const kubeErrorCodes = [
  /** 409: a precondition (resourceVersion, UID) failed or the name is taken. Transient. */
  'conflict',
  /** 429: the API server (or priority and fairness) asks us to slow down. Transient. */
  'throttled',
  /** 5xx. Transient. */
  'server-error',
  /** No complete response in time (ours or the HTTP layer's). Transient. */
  'timeout',
  /** Refused, reset, DNS, TLS: no HTTP response at all. Transient. */
  'connection',
  /** 404. Terminal; the caller decides what a missing object means. */
  'not-found',
  /** 422: the object fails server-side validation. Terminal. */
  'invalid',
  /** 403: RBAC does not allow the request. Terminal. */
  'forbidden',
  /** 400: the request is malformed. Terminal. */
  'bad-request',
  /** 401: the credentials are not (or no longer) accepted; tokens rotate. Transient. */
  'unauthorized',
  /** 410: a list's continue token or resourceVersion is too old; list again. Transient. */
  'expired',
  /** Any other HTTP status. Transient, so that nothing is dropped. */
  'unexpected-status',
  /** Not a Kubernetes or network error at all. Transient, as for every unknown failure. */
  'error',
] as const;
export type KubeErrorCode = (typeof kubeErrorCodes)[number];

const KUBE_ERROR_CODES: ReadonlySet<string> = new Set(kubeErrorCodes);

/** The code of an error `classifyKubeError` made, typed for a `switch`; undefined otherwise. */
export function kubeErrorCode(error: unknown): KubeErrorCode | undefined {
  return error instanceof SlicekeeperError && KUBE_ERROR_CODES.has(error.code)
    ? (error.code as KubeErrorCode)
    : undefined;
}

export interface ClassifyKubeErrorOptions {
  /** What a Retry-After given as an HTTP date is measured against. @defaultValue systemClock */
  clock?: Pick<Clock, 'now'>;
}

type Outcome = { kind: 'transient' | 'terminal'; code: KubeErrorCode };

/** HTTP status → outcome, as issue #5 and DESIGN.md "Retry and load" specify. */
function outcomeOfStatus(status: number): Outcome {
  switch (status) {
    case 400:
      return { kind: 'terminal', code: 'bad-request' };
    case 401:
      return { kind: 'transient', code: 'unauthorized' };
    case 403:
      return { kind: 'terminal', code: 'forbidden' };
    case 404:
      return { kind: 'terminal', code: 'not-found' };
    case 408:
      return { kind: 'transient', code: 'timeout' };
    case 409:
      return { kind: 'transient', code: 'conflict' };
    case 410:
      return { kind: 'transient', code: 'expired' };
    case 422:
      return { kind: 'terminal', code: 'invalid' };
    case 429:
      return { kind: 'transient', code: 'throttled' };
    default:
      return status >= 500
        ? { kind: 'transient', code: 'server-error' }
        : { kind: 'transient', code: 'unexpected-status' };
  }
}

/** Node and undici error codes of a request that timed out. */
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** Node and undici error codes of a connection that failed or broke. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPROTO',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/** Longest piece of a non-Status error body quoted in a message, characters. */
const MAX_BODY_EXCERPT = 200;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The parts of a `KubeApiError` (or client-node's `ApiException`) we read: duck-typed. */
interface HttpFailure {
  status: number;
  body: unknown;
  headers: Record<string, unknown>;
}

function httpFailureOf(error: unknown): HttpFailure | undefined {
  if (!isRecord(error) || !('body' in error) || !('headers' in error)) return undefined;
  const status = error.code;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    return undefined;
  }
  return { status, body: error.body, headers: isRecord(error.headers) ? error.headers : {} };
}

/** The HTTP status of a failed API call, when the API server answered at all (for metrics). */
export function responseStatusOf(error: unknown): number | undefined {
  return httpFailureOf(error)?.status;
}

/**
 * The field problems of the API server's refusal behind `error` (a 422's Status causes, each
 * with its field path and message), as classified by {@link classifyKubeError}: what a user
 * must fix, named as the server names it. Empty when the server gave none.
 */
export function kubeFieldCauses(error: unknown): { field: string; message: string }[] {
  const cause = error instanceof SlicekeeperError ? error.cause : error;
  const failure = httpFailureOf(cause);
  if (failure === undefined) return [];
  return (parseStatus(failure.body)?.causes ?? []).map((c) => ({
    field: c.field ?? '',
    message: c.message ?? '',
  }));
}

/** The fields of a meta/v1 Status we use. */
interface KubeStatus {
  message: string | undefined;
  causes: { field: string | undefined; message: string | undefined }[];
  retryAfterSeconds: number | undefined;
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function parseStatus(body: unknown): KubeStatus | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body) as unknown;
    } catch {
      return undefined;
    }
  }
  if (!isRecord(value) || (value.kind !== 'Status' && typeof value.message !== 'string')) {
    return undefined;
  }
  const details = isRecord(value.details) ? value.details : {};
  const causes = Array.isArray(details.causes) ? (details.causes as unknown[]) : [];
  return {
    message: optionalString(value.message),
    causes: causes.filter(isRecord).map((cause) => ({
      field: optionalString(cause.field),
      message: optionalString(cause.message),
    })),
    retryAfterSeconds:
      typeof details.retryAfterSeconds === 'number' && details.retryAfterSeconds > 0
        ? details.retryAfterSeconds
        : undefined,
  };
}

function headerValue(headers: Record<string, unknown>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === 'string') return value;
    if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  }
  return undefined;
}

/** RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`. */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * A Retry-After header in ms: delay-seconds or an HTTP date (relative to `now`, never negative).
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!HTTP_DATE.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function describeHttpFailure(failure: HttpFailure, status: KubeStatus | undefined): string {
  if (status?.message !== undefined) {
    const fields = [
      ...new Set(status.causes.flatMap((c) => (c.field === undefined ? [] : [c.field]))),
    ];
    return fields.length === 0
      ? status.message
      : `${status.message} (fields: ${fields.join(', ')})`;
  }
  if (typeof failure.body === 'string' && failure.body.trim() !== '') {
    const text = failure.body.trim().replace(/\s+/g, ' ');
    const excerpt = text.length > MAX_BODY_EXCERPT ? `${text.slice(0, MAX_BODY_EXCERPT)}…` : text;
    return `HTTP ${failure.status}: ${excerpt}`;
  }
  return `HTTP ${failure.status} ${STATUS_CODES[failure.status] ?? ''}`.trim();
}

function classifyHttpFailure(
  failure: HttpFailure,
  context: string,
  cause: unknown,
  clock: Pick<Clock, 'now'>,
): SlicekeeperError {
  const outcome = outcomeOfStatus(failure.status);
  const status = parseStatus(failure.body);
  const message = `${context}: ${outcome.code}: ${describeHttpFailure(failure, status)}`;
  if (outcome.kind === 'terminal') {
    return new TerminalError(message, { code: outcome.code, cause });
  }
  const retryAfterMs =
    parseRetryAfter(headerValue(failure.headers, 'retry-after'), clock.now()) ??
    (status?.retryAfterSeconds === undefined ? undefined : status.retryAfterSeconds * 1000);
  return new TransientError(message, {
    code: outcome.code,
    cause,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/** The message of anything thrown, also of errors from another realm (jest, worker threads). */
function messageOf(error: unknown): string {
  return isRecord(error) && typeof error.message === 'string' ? error.message : errorMessage(error);
}

/** 'timeout' or 'connection' when `error` (or one of its causes) is a network failure. */
function networkFailureOf(error: unknown): 'timeout' | 'connection' | undefined {
  let current = error;
  for (let depth = 0; depth < 5 && isRecord(current); depth++) {
    const { name, code, type, message } = current;
    // node-fetch rejects with AbortError when our per-request timeout aborts it; AbortSignal.timeout
    // and our own timeout report a TimeoutError.
    if (name === 'AbortError' || name === 'TimeoutError') return 'timeout';
    if (type === 'request-timeout' || type === 'body-timeout') return 'timeout';
    if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return 'timeout';
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return 'connection';
    // node-fetch's FetchError for any failure of the underlying socket (TLS included).
    if (name === 'FetchError' && type === 'system') return 'connection';
    if (typeof message === 'string' && /socket hang up/i.test(message)) return 'connection';
    current = current.cause;
  }
  return undefined;
}

/**
 * The one place Kubernetes errors are classified. Returns a TransientError or TerminalError whose
 * message is `${context}: <code>: <reason>` and whose `code` is a {@link KubeErrorCode}:
 * 'conflict' (409), 'throttled' (429, with `retryAfterMs` from Retry-After — seconds or an HTTP
 * date — or the Status' `retryAfterSeconds`), 'server-error' (5xx, with `retryAfterMs` when
 * given), 'timeout', 'connection' (refused, reset, socket hang up, DNS, TLS), 'not-found' (404),
 * 'invalid' (422, with the Status message and the causes' field paths), 'forbidden' (403),
 * 'bad-request' (400), 'unauthorized' (401), 'expired' (410), 'unexpected-status' (any other
 * status), 'error' (anything else).
 *
 * Terminal: 400, 403, 404 (the caller decides; deleteSlice maps it to success), 422. Transient:
 * the rest, so that nothing unknown is ever dropped. A slicekeeper error passes through with the
 * context added.
 */
export function classifyKubeError(
  error: unknown,
  context: string,
  options: ClassifyKubeErrorOptions = {},
): SlicekeeperError {
  if (error instanceof SlicekeeperError) return error.withContext(context);
  const failure = httpFailureOf(error);
  if (failure !== undefined) {
    return classifyHttpFailure(failure, context, error, options.clock ?? systemClock);
  }
  const network = networkFailureOf(error);
  if (network !== undefined) {
    return new TransientError(`${context}: ${network}: ${messageOf(error)}`, {
      code: network,
      cause: error,
    });
  }
  return new TransientError(`${context}: ${messageOf(error)}`, { code: 'error', cause: error });
}
