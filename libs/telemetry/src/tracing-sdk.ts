import type { TraceExportSettings } from '@slicekeeper/config';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import type * as Sdk from './start-tracing';
import type { StartedTracing } from './start-tracing';

/**
 * The OpenTelemetry SDK (provider, samplers, the OTLP exporter: about 7 MiB of every process that
 * loads it) loads when a process starts tracing, not with every import of this lib: tracing is
 * off unless OTEL_EXPORTER_OTLP_* asks for it. `@opentelemetry/api` alone, which the spans'
 * call sites use, is small and does nothing without a provider.
 */
function sdk(): typeof Sdk {
  return require('./start-tracing') as typeof Sdk;
}

/** See `startTracing` in start-tracing.ts: the OTLP/HTTP exporter as the settings say. */
export function startTracing(settings: TraceExportSettings): StartedTracing {
  return sdk().startTracing(settings);
}

/** See `startTracingWith` in start-tracing.ts: with a span processor of the caller's. */
export function startTracingWith(
  settings: Parameters<typeof Sdk.startTracingWith>[0],
  processor: SpanProcessor,
): StartedTracing {
  return sdk().startTracingWith(settings, processor);
}

/** See `enableContext` in start-tracing.ts: active spans follow async work. */
export function enableContext(): void {
  sdk().enableContext();
}
