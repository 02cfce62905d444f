import { readFileSync } from 'node:fs';
import { configSectionOf } from '@slicekeeper/local-stack';
import { expectedConfigSection, loadServiceConfigs, readmePath } from './config-docs';

describe('README configuration tables', () => {
  it('document every app that has a config schema', () => {
    expect(loadServiceConfigs().map((service) => service.name)).toEqual([
      'example-driver',
      'kube-emulator',
      'local-stack',
      'plugin-watcher',
      'registration-api',
      'slice-syncer',
    ]);
  });

  it('match the config schemas (run `npm run docs:config` after changing a schema)', () => {
    const readme = readFileSync(readmePath, 'utf8');
    expect(configSectionOf(readme)).toBe(expectedConfigSection());
  });
});
