import { ROOT_CONTEXT, SpanStatusCode, context, trace } from '@opentelemetry/api';
import type {
  Attributes,
  Context,
  Link,
  Span,
  SpanKind,
  SpanContext,
  Tracer,
} from '@opentelemetry/api';

/** How a span starts. */
export interface SpanStart {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent: a remote span context (a driver's, a record's), else the active span. */
  parent?: SpanContext;
  /** Starts a new trace even inside an active span (ignored when `parent` is given). */
  root?: boolean;
  /** When the span began, ms since the epoch; now when unset. */
  startTime?: number;
}

/** The name of slicekeeper's tracer (the instrumentation scope of its spans). */
export const TRACER_NAME = 'slicekeeper';

/**
 * The spans of one service. Components take it as an optional dependency: without one (tracing
 * off, the default) they make no span and pay nothing.
 */
export class Tracing {
  constructor(private readonly tracer: Tracer) {}

  /** Starts a span, not made active; the caller ends it. */
  start(name: string, options: SpanStart = {}): Span {
    const { parent, root, startTime, ...spanOptions } = options;
    return this.tracer.startSpan(
      name,
      { ...spanOptions, ...(startTime === undefined ? {} : { startTime }) },
      parentContext(parent, root === true),
    );
  }

  /**
   * Runs `work` inside a new span, active for everything it awaits (log lines carry its ids),
   * and ends it: an exception sets the span's status to error, records it and is rethrown.
   */
  async inSpan<T>(name: string, options: SpanStart, work: (span: Span) => Promise<T>): Promise<T> {
    const span = this.start(name, options);
    return this.within(span, () => work(span)).finally(() => {
      span.end();
    });
  }

  /**
   * Runs `work` with `span` active; an exception sets its status to error and is rethrown. The
   * span is not ended.
   */
  async within<T>(span: Span, work: () => Promise<T>): Promise<T> {
    try {
      return await context.with(trace.setSpan(context.active(), span), work);
    } catch (error) {
      failSpan(span, error);
      throw error;
    }
  }
}

/** Marks a span failed with `error` (status error, the exception recorded). */
export function failSpan(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  span.recordException(error instanceof Error ? error : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The active span's context, when a recording span is active. */
export function activeSpanContext(): SpanContext | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() === true ? span.spanContext() : undefined;
}

function parentContext(parent: SpanContext | undefined, root: boolean): Context {
  if (parent === undefined) return root ? ROOT_CONTEXT : context.active();
  return trace.setSpanContext(context.active(), parent);
}
