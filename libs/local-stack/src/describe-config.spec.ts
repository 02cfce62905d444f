import { z } from 'zod';
import { envBoolean, envDurationMs, envPort, envUrl } from '@slicekeeper/config';
import {
  configSectionOf,
  describeConfig,
  renderConfigSection,
  renderConfigTable,
  replaceConfigSection,
} from './describe-config';

const schema = z
  .object({
    PORT: envPort(8080, 'Port to listen on.'),
    WIPE_DELAY: envDurationMs('30s', 'Delay before slices go.'),
    LOOPBACK: envBoolean(false, 'Permit loopback.'),
    TOKEN_FILE: z.string().min(1).describe('Token file | JSON.'),
    URL: envUrl(['http:'], 'The API, `http://…`.').optional(),
    MODE: z.enum(['node', 'shared']).default('node').describe('How to *run*.'),
    LIST: z.string().default('').describe('A list.'),
  })
  .superRefine(() => undefined);

describe('describeConfig', () => {
  it.each([
    ['PORT', { defaultValue: '8080', optional: true, description: 'Port to listen on.' }],
    ['WIPE_DELAY', { defaultValue: '30s', optional: true, description: 'Delay before slices go.' }],
    ['LOOPBACK', { defaultValue: 'false', optional: true, description: 'Permit loopback.' }],
    ['TOKEN_FILE', { defaultValue: undefined, optional: false }],
    ['URL', { defaultValue: undefined, optional: true, description: 'The API, `http://…`.' }],
    ['MODE', { defaultValue: 'node', choices: ['node', 'shared'] }],
    ['LIST', { defaultValue: '', optional: true }],
  ])('reads %s through its wrappers', (name, expected) => {
    expect(describeConfig(schema).find((field) => field.name === name)).toMatchObject(expected);
  });
});

describe('renderConfigTable', () => {
  it('renders one aligned row per variable, marking required ones', () => {
    const table = renderConfigTable(z.object({ A: envPort(1, 'a.'), LONGER: z.string() }));
    expect(table.split('\n')).toEqual([
      '| variable | default      | description |',
      '| -------- | ------------ | ----------- |',
      '| `A`      | `1`          | a.          |',
      '| `LONGER` | **required** |             |',
    ]);
  });

  it('escapes pipes and emphasis outside code, says unset and empty', () => {
    const table = renderConfigTable(schema);
    expect(table).toContain('Token file \\| JSON.');
    expect(table).toContain('How to \\*run\\*. One of `node`, `shared`.');
    expect(table).toContain('The API, `http://…`.');
    expect(table).toMatch(/\| `URL` +\| unset +\|/);
    expect(table).toMatch(/\| `LIST` +\| empty +\|/);
  });
});

describe('replaceConfigSection', () => {
  const readme = '# x\n\n<!-- config:start -->\nold\n<!-- config:end -->\n\n## next\n';

  it('replaces only what is between the markers', () => {
    const section = renderConfigSection([{ name: 'svc', schema }]);
    const updated = replaceConfigSection(readme, section);
    expect(updated.startsWith('# x\n\n<!-- config:start -->\n\n')).toBe(true);
    expect(updated.endsWith('\n\n<!-- config:end -->\n\n## next\n')).toBe(true);
    expect(configSectionOf(updated)).toBe(section);
    expect(section).toContain('### svc\n\n| variable');
  });

  it('fails without markers', () => {
    expect(() => replaceConfigSection('# x\n', 'y')).toThrow(/config:start/);
  });
});
