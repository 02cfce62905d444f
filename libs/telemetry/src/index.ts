export * from './attributes';
export { enableContext, startTracing, startTracingWith } from './tracing-sdk';
export type { StartedTracing } from './start-tracing';
export { linksTo, parseTraceparent } from './trace-context';
export { formatTraceparent } from '@slicekeeper/contracts';
export { TRACER_NAME, Tracing, activeSpanContext, failSpan } from './tracing';
export type { SpanStart } from './tracing';
export { SpanKind, SpanStatusCode } from '@opentelemetry/api';
export type { Link, Span, SpanContext } from '@opentelemetry/api';
