import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Sampler, SpanProcessor } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TraceExportSettings, TraceSampler } from '@slicekeeper/config';
import { TRACER_NAME, Tracing } from './tracing';

/** A service's tracing, started. */
export interface StartedTracing {
  readonly tracing: Tracing;
  /** Exports what is still buffered and stops; spans started later are dropped. */
  shutdown(): Promise<void>;
}

/**
 * Makes active spans follow async work (`AsyncLocalStorage`), once per process: log lines
 * written inside a span carry its ids, and a span's children find it.
 */
export function enableContext(): void {
  if (contextEnabled) return;
  contextEnabled = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}
let contextEnabled = false;

/**
 * Starts the OTLP/HTTP exporter of a service as its `OTEL_*` settings say, and registers the
 * provider globally (so libraries that trace through `@opentelemetry/api` join the same traces).
 * Spans are exported in batches from a bounded queue; while a collector is down, spans beyond
 * it are dropped.
 */
export function startTracing(settings: TraceExportSettings): StartedTracing {
  const exporter = new OTLPTraceExporter({
    url: settings.url,
    headers: { ...settings.headers },
    timeoutMillis: settings.timeoutMs,
  });
  return startTracingWith(
    settings,
    new BatchSpanProcessor({
      exporter,
      scheduledDelayMillis: settings.scheduleDelayMs,
      maxQueueSize: settings.maxQueueSize,
      maxExportBatchSize: Math.min(settings.maxExportBatchSize, settings.maxQueueSize),
    }),
  );
}

/** {@link startTracing} with a span processor of the caller's (tests, benches). */
export function startTracingWith(
  settings: Pick<
    TraceExportSettings,
    'serviceName' | 'resourceAttributes' | 'sampler' | 'samplerRatio'
  >,
  processor: SpanProcessor,
): StartedTracing {
  enableContext();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      ...settings.resourceAttributes,
      [ATTR_SERVICE_NAME]: settings.serviceName,
    }),
    sampler: samplerOf(settings.sampler, settings.samplerRatio),
    spanProcessors: [processor],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    tracing: new Tracing(provider.getTracer(TRACER_NAME)),
    shutdown: () => provider.shutdown(),
  };
}

function samplerOf(kind: TraceSampler, ratio: number): Sampler {
  switch (kind) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}
