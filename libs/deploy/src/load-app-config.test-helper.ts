import { join } from 'node:path';
import type { Environment } from '@slicekeeper/config';
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

/**
 * Parses `env` with the app's own `apps/<app>/src/config.ts` (the code its main.ts runs), so a
 * deployment file is judged by exactly what would make the app refuse to start. Loaded through
 * jest's module system rather than imported: a testing lib may not depend on apps.
 */
export function loadAppConfig(app: App, env: Environment): Record<string, unknown> {
  const module = jest.requireActual<ConfigModule>(join(repoRoot, 'apps', app, 'src', 'config.ts'));
  return module.loadConfig(env);
}
