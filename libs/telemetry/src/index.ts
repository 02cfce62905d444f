export * from './attributes';
export { TRACER_NAME, enableContext, startTracing, startTracingWith } from './start-tracing';
export type { StartedTracing } from './start-tracing';
export { linksTo, parseTraceparent } from './trace-context';
export { formatTraceparent } from '@slicekeeper/contracts';
export { Tracing, activeSpanContext, failSpan } from './tracing';
export type { SpanStart } from './tracing';
export { SpanKind, SpanStatusCode } from '@opentelemetry/api';
export type { Link, Span, SpanContext } from '@opentelemetry/api';
