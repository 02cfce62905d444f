import { TraceFlags, isSpanContextValid } from '@opentelemetry/api';
import type { Link, SpanContext } from '@opentelemetry/api';
import { TRACEPARENT_PATTERN } from '@slicekeeper/contracts';

/**
 * The span context a W3C `traceparent` names (https://www.w3.org/TR/trace-context/#traceparent-header),
 * marked remote; undefined when it is not one (`TRACEPARENT_RULE` of `@slicekeeper/contracts`). Version 00 only: a
 * later version's extra fields are not guessed at.
 */
export function parseTraceparent(traceparent: string): SpanContext | undefined {
  const match = TRACEPARENT_PATTERN.exec(traceparent);
  if (match === null) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  const context: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(context) ? context : undefined;
}

/** Links to the spans that `traceparents` name; those that do not parse are left out. */
export function linksTo(traceparents: readonly string[]): Link[] {
  const links: Link[] = [];
  for (const traceparent of traceparents) {
    const context = parseTraceparent(traceparent);
    if (context !== undefined) links.push({ context });
  }
  return links;
}
