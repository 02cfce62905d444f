import { z } from 'zod';

/**
 * Schemas for the kinds of environment variables every service has. Each takes the default
 * value and carries a description, which the README's configuration tables are generated from.
 */

/** A TCP port, 0 meaning "any free port". */
export function envPort(defaultPort: number, description: string) {
  return z.coerce
    .number()
    .int('must be a whole number')
    .min(0, 'must be 0..65535')
    .max(65535, 'must be 0..65535')
    .default(defaultPort)
    .describe(description);
}

/** A whole number within [min, max]. */
export function envInt(
  defaultValue: number,
  description: string,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
) {
  return z.coerce
    .number()
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .default(defaultValue)
    .describe(description);
}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** What a duration that does not parse is told. */
export const DURATION_RULE = 'must be a duration such as 500ms, 30s, 10m or 1h';

/** `250ms`, `30s`, `10m`, `1h` or a bare number of milliseconds, in ms; undefined if not one. */
export function parseDurationMs(value: string): number | undefined {
  const match = DURATION.exec(value.trim());
  if (match === null) return undefined;
  return Math.round(Number(match[1]) * (UNIT_MS[match[2] ?? 'ms'] ?? 1));
}

/** A duration such as `250ms`, `30s`, `10m`, `1h`, or a bare number of milliseconds; parsed to ms. */
export function envDurationMs(defaultValue: string, description: string) {
  return z
    .string()
    .default(defaultValue)
    .transform((value, ctx) => {
      const ms = parseDurationMs(value);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: DURATION_RULE });
        return z.NEVER;
      }
      return ms;
    })
    .describe(description);
}

/** `true`/`false` (also `1`/`0`, `yes`/`no`). */
export function envBoolean(defaultValue: boolean, description: string) {
  return z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .default(defaultValue ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1' || value === 'yes')
    .describe(description);
}

/** A URL with one of the given protocols, e.g. `redis:`; optional unless it has a default. */
export function envUrl(protocols: readonly string[], description: string, defaultValue?: string) {
  const schema = z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
  );
  return (defaultValue === undefined ? schema.optional() : schema.default(defaultValue)).describe(
    description,
  );
}

/** A comma-separated list, items trimmed, blanks dropped. */
export function envList(defaultValue: string, description: string) {
  return z
    .string()
    .default(defaultValue)
    .transform((value) =>
      value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    )
    .describe(description);
}

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A pino log level. */
export function envLogLevel(defaultLevel: (typeof logLevels)[number] = 'info') {
  return z
    .enum(logLevels, { message: `must be one of ${logLevels.join(', ')}` })
    .default(defaultLevel)
    .describe('Log level.');
}

/**
 * How often a service runs a memory-reducing garbage collection (`MemoryReducer` of
 * `@slicekeeper/observability`); `0` turns it off. One setting of every service.
 */
export function envMemoryReduceInterval() {
  return envDurationMs(
    '5m',
    'How often a memory-reducing garbage collection gives back the heap memory a burst of work left (a pause of about 0.1–0.4 s each); 0 turns it off.',
  );
}
