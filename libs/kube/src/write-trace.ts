import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  SpanKind,
  failSpan,
  formatTraceparent,
  parseTraceparent,
} from '@slicekeeper/telemetry';
import type { Span, SpanContext, Tracing } from '@slicekeeper/telemetry';
import { kubeErrorCode } from './classify-kube-error';
import type { KubeTransport } from './kube-transport';

/** The API verb of a write (`create`, `update`, `delete`, `patch`). */
export const ATTR_KUBE_VERB = 'slicekeeper.kube.verb';
/** The resource written, as in the URL (`resourceslices`, `nodes/status`, `events`). */
export const ATTR_KUBE_RESOURCE = 'slicekeeper.kube.resource';
/** The object's name (a created slice's as the server named it). */
export const ATTR_KUBE_NAME = 'slicekeeper.kube.name';
/** The object's resourceVersion the write left, as the watch will echo it. */
export const ATTR_KUBE_RESOURCE_VERSION = 'slicekeeper.kube.resource_version';
/** How a write's watch echo came: `received`, `early`, `missed` or `closed` (see {@link EchoOutcome}). */
export const ATTR_ECHO = 'slicekeeper.echo';

/** The span of one traced write, as the object it returned carries it to the watch echo. */
export interface WriteTrace {
  readonly tracing: Tracing;
  readonly context: SpanContext;
}

/** A write under way with tracing on: its span, and the headers that carry it. */
export interface TracedWrite {
  readonly tracing: Tracing;
  readonly span: Span;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Starts the client span of one API write (OpenTelemetry's HTTP client conventions: named after
 * the method), a child of the active span (a sync's, when the write is made for one), and the
 * W3C `traceparent` header that carries it to the API server (kube-apiserver with its tracing
 * on joins the trace). Undefined when the transport has no tracing.
 */
export function startWriteSpan(
  transport: KubeTransport,
  method: string,
  /** The path with its query. */
  path: string,
  target: { verb: string; resource: string; name?: string | undefined },
): TracedWrite | undefined {
  const tracing = transport.tracing;
  if (tracing === undefined) return undefined;
  const span = tracing.start(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      [ATTR_URL_FULL]: `${transport.server}${path}`,
      [ATTR_SERVER_ADDRESS]: transport.serverAddress,
      [ATTR_SERVER_PORT]: transport.serverPort,
      [ATTR_KUBE_VERB]: target.verb,
      [ATTR_KUBE_RESOURCE]: target.resource,
      ...(target.name === undefined ? {} : { [ATTR_KUBE_NAME]: target.name }),
    },
  });
  // A span the sampler dropped without a parent has no ids worth sending.
  const traceparent = formatTraceparent(span.spanContext());
  const headers: Record<string, string> =
    parseTraceparent(traceparent) === undefined ? {} : { traceparent };
  return { tracing, span, headers };
}

/**
 * Ends a write's span that got a 2xx answer; an object answer carries the span on to the
 * write's watch echo ({@link takeWriteTrace}).
 */
export function endWriteSpan(write: TracedWrite, status: number, answer: unknown): void {
  const { span, tracing } = write;
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  const metadata = metadataOf(answer);
  if (metadata?.name !== undefined) span.setAttribute(ATTR_KUBE_NAME, metadata.name);
  if (metadata?.resourceVersion !== undefined) {
    span.setAttribute(ATTR_KUBE_RESOURCE_VERSION, metadata.resourceVersion);
  }
  span.end();
  if (typeof answer === 'object' && answer !== null) {
    writeTraces.set(answer, { tracing, context: span.spanContext() });
  }
}

/**
 * Ends a failed write's span with status error: `error.type` is the HTTP status when the server
 * refused, else the classified code (`connection`, `timeout`, `error` for a malformed answer).
 */
export function failWriteSpan(
  { span }: TracedWrite,
  status: number | undefined,
  error: unknown,
): void {
  if (status !== undefined) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
  span.setAttribute(
    ATTR_ERROR_TYPE,
    status !== undefined && status >= 400 ? String(status) : (kubeErrorCode(error) ?? 'unknown'),
  );
  failSpan(span, error);
  span.end();
}

/**
 * The write spans of the objects writes returned, until the cluster cache takes them (the
 * applier hands it each returned slice): the watch echo of a write is a child of its span, and
 * no caller in between has to carry it. Weak: an object nobody records costs nothing.
 */
const writeTraces = new WeakMap<object, WriteTrace>();

/**
 * Hands the write span of a write's JSON answer on to what it was decoded into (a no-op unless
 * the write was traced).
 */
export function carryWriteTrace(answer: unknown, decoded: object): void {
  if (typeof answer !== 'object' || answer === null) return;
  const trace = takeWriteTrace(answer);
  if (trace !== undefined) writeTraces.set(decoded, trace);
}

/** The write span `object` came back from, when traced; forgotten once taken. */
export function takeWriteTrace(object: object): WriteTrace | undefined {
  const trace = writeTraces.get(object);
  if (trace !== undefined) writeTraces.delete(object);
  return trace;
}

/** How a write's watch echo came. */
export type EchoOutcome =
  /** The watch (or a relist) delivered the write's resourceVersion. */
  | 'received'
  /** The watch had delivered it before the write's answer was recorded. */
  | 'early'
  /** Never delivered before the mutation cache dropped the write (its TTL, or the object is gone). */
  | 'missed'
  /** The cache closed first. */
  | 'closed';

/** A write whose watch echo is awaited. */
export interface PendingEcho {
  end(outcome: EchoOutcome): void;
}

/**
 * The `watch echo` span of a write: from the write's answer to the watch event that carries its
 * resourceVersion, a child of the write's span. Ended by whoever learns how the echo came.
 */
export function startEcho(trace: WriteTrace, name: string, resourceVersion: string): PendingEcho {
  const span = trace.tracing.start('watch echo', {
    parent: trace.context,
    attributes: { [ATTR_KUBE_NAME]: name, [ATTR_KUBE_RESOURCE_VERSION]: resourceVersion },
  });
  return {
    end: (outcome) => {
      span.setAttribute(ATTR_ECHO, outcome);
      span.end();
    },
  };
}

function metadataOf(answer: unknown): { name?: string; resourceVersion?: string } | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const { metadata } = answer as { metadata?: unknown };
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const { name, resourceVersion } = metadata as { name?: unknown; resourceVersion?: unknown };
  return {
    ...(typeof name === 'string' ? { name } : {}),
    ...(typeof resourceVersion === 'string' ? { resourceVersion } : {}),
  };
}
