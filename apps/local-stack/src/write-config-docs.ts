import { readFileSync, writeFileSync } from 'node:fs';
import { replaceConfigSection } from '@slicekeeper/local-stack';
import { expectedConfigSection, readmePath } from './config-docs';

/** `npm run docs:config`: rewrites the README's configuration tables from the config schemas. */
const readme = readFileSync(readmePath, 'utf8');
const updated = replaceConfigSection(readme, expectedConfigSection());
if (updated === readme) {
  process.stdout.write('README.md: configuration tables are up to date\n');
} else {
  writeFileSync(readmePath, updated);
  process.stdout.write('README.md: configuration tables rewritten\n');
}
