/**
 * W3C trace context as slicekeeper carries it between its parts: in a driver's inventory
 * message, in a key's stored snapshot, in a sync's status. One rule for every reader.
 */

/** A version-00 W3C `traceparent`: `00-<trace id>-<span id>-<flags>`, lowercase hex. */
export const TRACEPARENT_PATTERN = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** What a `traceparent` that does not parse is told. */
export const TRACEPARENT_RULE =
  'must be a W3C traceparent: 00-<32 lowercase hex trace id>-<16 lowercase hex span id>-<2 hex flags>, ids not all zero';

/** A trace id: 32 lowercase hex digits. */
export const TRACE_ID_PATTERN = /^[0-9a-f]{32}$/;

/**
 * How many messages' trace contexts one stored snapshot keeps (the messages it absorbed since
 * the last finished sync, newest kept): a sync links to at most this many.
 */
export const MAX_SNAPSHOT_TRACE_LINKS = 32;

/** The ids and flags a `traceparent` carries (OpenTelemetry's `SpanContext` has them). */
export interface TraceparentParts {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

/** The version-00 W3C `traceparent` of a span context, e.g. to carry it in a message or a record. */
export function formatTraceparent(context: TraceparentParts): string {
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}
