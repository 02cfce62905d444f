import { z } from 'zod';
import { envBoolean, envDurationMs, envInt, envUrl } from './env';

/**
 * OpenTelemetry's standard environment variables, as every service reads them
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). Tracing
 * is off until an OTLP endpoint is set. Only what slicekeeper implements is accepted: OTLP over
 * HTTP with JSON bodies (`http/json`), the standard samplers; anything else is a config error
 * naming the variable, never a silent fallback.
 */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

const OTLP_PROTOCOLS = ['http/json'] as const;
const PROTOCOL_RULE =
  'must be http/json: slicekeeper exports OTLP over HTTP with JSON bodies (any OpenTelemetry Collector, Jaeger or Tempo takes it on port 4318)';

/** `key=value,key=value` with percent-encoded values (W3C Baggage syntax, as OTEL_* lists are). */
function envKeyValues(description: string) {
  return z
    .string()
    .default('')
    .transform((value, ctx) => {
      const pairs: Record<string, string> = {};
      for (const entry of value.split(',')) {
        if (entry.trim() === '') continue;
        const at = entry.indexOf('=');
        const key = at < 0 ? '' : entry.slice(0, at).trim();
        if (key === '') {
          ctx.addIssue({ code: 'custom', message: `"${entry.trim()}" must be key=value` });
          continue;
        }
        try {
          pairs[key] = decodeURIComponent(entry.slice(at + 1).trim());
        } catch {
          ctx.addIssue({ code: 'custom', message: `the value of "${key}" is not percent-encoded` });
        }
      }
      return pairs;
    })
    .describe(description);
}

/** The `OTEL_*` variables of every service; spread into its config schema. */
export function telemetryEnv() {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: envUrl(
      ['http:', 'https:'],
      'OpenTelemetry: the OTLP/HTTP endpoint (an OpenTelemetry Collector, Jaeger or Tempo, e.g. http://otel-collector:4318); traces go to <endpoint>/v1/traces. Unset (and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT unset): no tracing.',
    ),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: envUrl(
      ['http:', 'https:'],
      'OpenTelemetry: the full URL traces are posted to; wins over OTEL_EXPORTER_OTLP_ENDPOINT.',
    ),
    OTEL_EXPORTER_OTLP_PROTOCOL: z
      .enum(OTLP_PROTOCOLS, { message: PROTOCOL_RULE })
      .default('http/json')
      .describe('OpenTelemetry: the OTLP protocol; http/json is the one supported.'),
    OTEL_EXPORTER_OTLP_HEADERS: envKeyValues(
      'OpenTelemetry: headers sent with every export, key=value comma-separated (values percent-encoded), e.g. authorization=Bearer%20abc.',
    ),
    OTEL_EXPORTER_OTLP_TIMEOUT: envInt(10_000, 'OpenTelemetry: how long one export may take, ms.', {
      min: 1,
    }),
    OTEL_SERVICE_NAME: z
      .string()
      .min(1, 'must not be empty')
      .optional()
      .describe("OpenTelemetry: the service.name of the spans. Default: the service's own name."),
    OTEL_RESOURCE_ATTRIBUTES: envKeyValues(
      'OpenTelemetry: resource attributes, key=value comma-separated, e.g. deployment.environment.name=prod,k8s.cluster.name=east.',
    ),
    OTEL_TRACES_SAMPLER: z
      .enum(TRACE_SAMPLERS, { message: `must be one of ${TRACE_SAMPLERS.join(', ')}` })
      .default('parentbased_always_on')
      .describe(
        "OpenTelemetry: which traces are recorded. The parentbased samplers follow the caller's decision (a driver's traceparent); the traceidratio ones keep OTEL_TRACES_SAMPLER_ARG of them.",
      ),
    OTEL_TRACES_SAMPLER_ARG: z.coerce
      .number({ message: 'must be a number from 0 to 1' })
      .min(0, 'must be a number from 0 to 1')
      .max(1, 'must be a number from 0 to 1')
      .default(1)
      .describe('OpenTelemetry: the share of traces the traceidratio samplers keep, 0..1.'),
    OTEL_BSP_SCHEDULE_DELAY: envDurationMs(
      '5s',
      'OpenTelemetry: how long finished spans wait to be exported together.',
    ),
    OTEL_BSP_MAX_QUEUE_SIZE: envInt(
      2048,
      'OpenTelemetry: finished spans held for export; beyond it spans are dropped (and counted).',
      { min: 1 },
    ),
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: envInt(512, 'OpenTelemetry: spans per export request.', {
      min: 1,
    }),
    OTEL_SDK_DISABLED: envBoolean(
      false,
      'OpenTelemetry: true turns tracing off even with an endpoint set.',
    ),
  };
}

/** What {@link telemetryEnv}'s variables parse to. */
export interface TelemetryEnv {
  readonly OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_PROTOCOL: (typeof OTLP_PROTOCOLS)[number];
  readonly OTEL_EXPORTER_OTLP_HEADERS: Readonly<Record<string, string>>;
  readonly OTEL_EXPORTER_OTLP_TIMEOUT: number;
  readonly OTEL_SERVICE_NAME?: string | undefined;
  readonly OTEL_RESOURCE_ATTRIBUTES: Readonly<Record<string, string>>;
  readonly OTEL_TRACES_SAMPLER: TraceSampler;
  readonly OTEL_TRACES_SAMPLER_ARG: number;
  readonly OTEL_BSP_SCHEDULE_DELAY: number;
  readonly OTEL_BSP_MAX_QUEUE_SIZE: number;
  readonly OTEL_BSP_MAX_EXPORT_BATCH_SIZE: number;
  readonly OTEL_SDK_DISABLED: boolean;
}

/** Where traces go and how, when tracing is on. */
export interface TraceExportSettings {
  /** The URL spans are posted to (`…/v1/traces`). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: TraceSampler;
  readonly samplerRatio: number;
  readonly scheduleDelayMs: number;
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
}

/**
 * The trace export settings of a service, or undefined when tracing is off (no endpoint, or
 * `OTEL_SDK_DISABLED`).
 */
export function traceExportSettings(
  env: TelemetryEnv,
  service: string,
): TraceExportSettings | undefined {
  if (env.OTEL_SDK_DISABLED) return undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (base === undefined ? undefined : `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return undefined;
  return {
    url,
    headers: env.OTEL_EXPORTER_OTLP_HEADERS,
    timeoutMs: env.OTEL_EXPORTER_OTLP_TIMEOUT,
    serviceName: env.OTEL_SERVICE_NAME ?? service,
    resourceAttributes: env.OTEL_RESOURCE_ATTRIBUTES,
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG,
    scheduleDelayMs: env.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
  };
}

/** Every `OTEL_*` setting at its default: tracing off. For configs built in code (tests, benches). */
export const TRACING_OFF: TelemetryEnv = Object.freeze(z.object(telemetryEnv()).parse({}));
