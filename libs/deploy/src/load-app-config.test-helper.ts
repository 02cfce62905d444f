import { join } from 'node:path';
import { redisTarget, traceExportSettings } from '@slicekeeper/config';
import type {
  Environment,
  RedisEnv,
  RedisTarget,
  TelemetryEnv,
  TraceExportSettings,
} from '@slicekeeper/config';
import { repoRoot } from '@slicekeeper/testing';

/** The deployable apps: each has a docker/Dockerfile target and an apps/<app>/src/config.ts. */
export const apps = [
  'registration-api',
  'plugin-watcher',
  'slice-syncer',
  'example-driver',
  'kube-emulator',
] as const;
export type App = (typeof apps)[number];

export function isApp(name: string): name is App {
  return (apps as readonly string[]).includes(name);
}

interface ConfigModule {
  loadConfig(env: Environment): Record<string, unknown>;
}

function configModule(app: App): ConfigModule & Record<string, unknown> {
  return jest.requireActual<ConfigModule & Record<string, unknown>>(
    join(repoRoot, 'apps', app, 'src', 'config.ts'),
  );
}

/**
 * Parses `env` with the app's own `apps/<app>/src/config.ts` (the code its main.ts runs), so a
 * deployment file is judged by exactly what would make the app refuse to start. Loaded through
 * jest's module system rather than imported: a testing lib may not depend on apps.
 */
export function loadAppConfig(app: App, env: Environment): Record<string, unknown> {
  return configModule(app).loadConfig(env);
}

/**
 * The variables the app's config schema declares (the zod object its config.ts exports). The
 * config ignores any other variable, so a misspelt or not yet supported one would be dropped
 * without a word: a deployment file must set only these.
 */
export function appConfigVariables(app: App): string[] {
  const schemas = Object.values(configModule(app)).filter(
    (value): value is { shape: Record<string, unknown> } =>
      typeof value === 'object' &&
      value !== null &&
      typeof (value as { safeParse?: unknown }).safeParse === 'function' &&
      typeof (value as { shape?: unknown }).shape === 'object',
  );
  const [schema, ...others] = schemas;
  if (schema === undefined || others.length > 0) {
    throw new Error(`apps/${app}/src/config.ts: expected one exported config schema`);
  }
  return Object.keys(schema.shape);
}

/** Where the app's Redis connections go with `env`, worked out as the app itself does. */
export function appRedisTarget(app: App, env: Environment): RedisTarget {
  return redisTarget(loadAppConfig(app, env) as unknown as RedisEnv);
}

/** Where and how the app exports traces with `env` (undefined: tracing off), as it works it out. */
export function appTraceExport(app: App, env: Environment): TraceExportSettings | undefined {
  return traceExportSettings(loadAppConfig(app, env) as unknown as TelemetryEnv, app);
}

/** Whether the app keeps anything in Redis (its config has the Redis settings). */
export function usesRedis(app: App): boolean {
  return appConfigVariables(app).includes('REDIS_PREFIX');
}
