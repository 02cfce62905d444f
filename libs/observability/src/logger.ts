import { trace } from '@opentelemetry/api';
import pino from 'pino';
import type { Logger, LevelWithSilent } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** The service name, logged as `service` on every line. */
  service: string;
  /** @defaultValue `'info'` */
  level?: LevelWithSilent;
  /** Where to write; stdout by default. Tests pass a stream to read the lines back. */
  destination?: pino.DestinationStream;
  /**
   * Whether every line written inside a span carries its `trace_id` and `span_id` (tracing is
   * on). Off, lines pay nothing for it.
   */
  traceIds?: boolean;
}

/**
 * Paths that may carry secrets. Bearer tokens must never reach a log line, whatever logged
 * the object (request logs, error causes, config dumps).
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'password',
  '*.password',
];

/** A structured JSON logger. Messages are short verbs; context goes in fields. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      ...(options.traceIds === true ? { mixin: traceIds } : {}),
    },
    options.destination,
  );
}

export type { LevelWithSilent };

/**
 * The ids of the span a line is written in (OpenTelemetry's log data model names). A fresh
 * object each time: pino merges the line's own fields into it.
 */
function traceIds(): object {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
