import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { startTracingWith } from '../start-tracing';
import type { Tracing } from '../tracing';

/** A {@link Tracing} whose finished spans a test reads back: every span recorded. */
export interface RecordedTracing {
  readonly tracing: Tracing;
  /** The spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** The ended spans named `name`. */
  named(name: string): ReadableSpan[];
  /** Forgets the spans recorded so far. */
  reset(): void;
  shutdown(): Promise<void>;
}

export function recordedTracing(serviceName = 'test'): RecordedTracing {
  const exporter = new InMemorySpanExporter();
  const started = startTracingWith(
    { serviceName, resourceAttributes: {}, sampler: 'always_on', samplerRatio: 1 },
    new SimpleSpanProcessor({ exporter }),
  );
  return {
    tracing: started.tracing,
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((span) => span.name === name),
    reset: () => {
      exporter.reset();
    },
    shutdown: () => started.shutdown(),
  };
}
