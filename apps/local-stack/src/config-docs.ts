import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { z } from 'zod';
import { renderConfigSection, repoRoot } from '@slicekeeper/local-stack';
import type { ServiceConfig } from '@slicekeeper/local-stack';

/** The README whose configuration section is generated. */
export const readmePath = join(repoRoot, 'README.md');

/**
 * The config schema of every app that has a `src/config.ts`, read from the sources by path: the
 * docs are generated from apps the module boundaries do not let an app import. Each config.ts
 * must export exactly one zod object schema.
 */
export function loadServiceConfigs(): ServiceConfig[] {
  const load = createRequire(__filename);
  const apps = readdirSync(join(repoRoot, 'apps'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .filter((app) => existsSync(join(repoRoot, 'apps', app, 'src/config.ts')))
    .sort();
  return apps.map((app) => {
    const file = join(repoRoot, 'apps', app, 'src/config.ts');
    const exports = load(file) as Record<string, unknown>;
    const schemas = Object.values(exports).filter((value) => value instanceof z.ZodObject);
    const [schema] = schemas;
    if (schemas.length !== 1 || schema === undefined) {
      throw new Error(
        `${file}: exports ${schemas.length} zod object schemas; expected exactly one`,
      );
    }
    return { name: app, schema };
  });
}

/** The README's configuration section as the schemas say it should be. */
export function expectedConfigSection(): string {
  return renderConfigSection(loadServiceConfigs());
}
