import { interpolateCompose, interpolateComposeFile, parseEnvFile } from './interpolate-compose';

describe('interpolateCompose', () => {
  const variables = { SET: 'value', EMPTY: '' };

  it.each([
    ['plain-text', 'redis://redis:6379', 'redis://redis:6379'],
    ['escaped-dollar', 'echo $$HOME', 'echo $HOME'],
    ['bare-reference', 'x-$SET-y', 'x-value-y'],
    ['braced-reference', '${SET}', 'value'],
    ['unset-is-empty', '${UNSET}', ''],
    ['dash-default-unset', '${UNSET-redis://redis:6379}', 'redis://redis:6379'],
    ['dash-default-empty-kept', '${EMPTY-redis://redis:6379}', ''],
    ['colon-dash-default-empty', '${EMPTY:-fallback}', 'fallback'],
    ['colon-dash-default-set', '${SET:-fallback}', 'value'],
    ['colon-dash-blank-default', '${UNSET:-}', ''],
    ['nested-default', '${UNSET:-${SET}}', 'value'],
    ['plus-set', '${SET+on}', 'on'],
    ['plus-empty-set', '${EMPTY+on}', 'on'],
    ['colon-plus-empty', '${EMPTY:+on}', ''],
    ['question-set', '${SET?needed}', 'value'],
  ])('%s', (_name, text, expected) => {
    expect(interpolateCompose(text, variables)).toBe(expected);
  });

  it('fails on a required variable that is missing, with its message', () => {
    expect(() => interpolateCompose('${UNSET?set UNSET}', variables)).toThrow('UNSET: set UNSET');
    expect(() => interpolateCompose('${EMPTY:?}', variables)).toThrow('EMPTY: required');
  });

  it('interpolates every string of a parsed file, keys untouched', () => {
    expect(
      interpolateComposeFile(
        { services: { a: { environment: { URL: '${UNSET-x}' }, command: ['$$SET', 1] } } },
        variables,
      ),
    ).toEqual({ services: { a: { environment: { URL: 'x' }, command: ['$SET', 1] } } });
  });
});

describe('parseEnvFile', () => {
  it('reads NAME=value lines, blank values included, and skips comments', () => {
    expect(
      parseEnvFile(
        ['# comment', '', 'A=1', 'B=', "C='quoted # not a comment'", 'D=x # comment'].join('\n'),
      ),
    ).toEqual({ A: '1', B: '', C: 'quoted # not a comment', D: 'x' });
  });

  it('refuses a line that is not an assignment', () => {
    expect(() => parseEnvFile('just words')).toThrow('not NAME=value');
  });
});
