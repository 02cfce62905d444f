import { fromPassThrough, toPassThrough } from './pass-through-mapper';

/** What toPassThrough makes of `json` at `passThrough`: the fields, and the problems. */
function parse(json: string) {
  const problems: string[] = [];
  const fields = toPassThrough(json, () => 'passThrough', problems);
  return { fields, problems };
}

describe('pass-through fields', () => {
  it.each<[string, string, unknown]>([
    ['empty-is-none', '', undefined],
    ['empty-object', '{}', {}],
    [
      'members-as-written',
      '{"newField":{"a":1,"b":[true,null,"x"]}}',
      { newField: { a: 1, b: [true, null, 'x'] } },
    ],
    [
      'largest-exact-integer',
      '{"n":9007199254740991,"m":-9007199254740991}',
      { n: 9007199254740991, m: -9007199254740991 },
    ],
    ['fraction', '{"ratio":0.25}', { ratio: 0.25 }],
    ['large-double-in-exponent-form', '{"d":1.5e300}', { d: 1.5e300 }],
  ])('carries %s over', (_, json, expected) => {
    expect(parse(json)).toEqual({ fields: expected, problems: [] });
  });

  it.each<[string, string, string]>([
    ['not-json', '{newField: 1}', 'passThrough: must be a JSON object (is not JSON: '],
    ['truncated', '{"a":', 'passThrough: must be a JSON object (is not JSON: '],
    ['array', '[{"a":1}]', 'passThrough: must be a JSON object (is an array)'],
    ['null', 'null', 'passThrough: must be a JSON object (is null)'],
    ['string', '"x"', 'passThrough: must be a JSON object (is a string)'],
    ['number', '42', 'passThrough: must be a JSON object (is a number)'],
    ['unsafe-number', '12345678901234567890', 'passThrough: must be a JSON object (is a number)'],
  ])('refuses %s, naming the field and the rule', (_, json, start) => {
    const { fields, problems } = parse(json);
    expect(fields).toBeUndefined();
    expect(problems).toHaveLength(1);
    expect(problems[0]?.startsWith(start)).toBe(true);
  });

  it.each<[string, string, string[]]>([
    [
      'integer-beyond-2^53',
      '{"newField":{"a":[1,9007199254740993]}}',
      [
        'passThrough.newField.a[1]: 9007199254740993 is outside the range slicekeeper can ' +
          'publish exactly (±9007199254740991)',
      ],
    ],
    [
      'int64-max-under-an-odd-key',
      '{"example.com/x":9223372036854775807,"y":-9007199254740992}',
      [
        'passThrough[example.com/x]: 9223372036854775807 is outside the range slicekeeper can ' +
          'publish exactly (±9007199254740991)',
        'passThrough.y: -9007199254740992 is outside the range slicekeeper can publish exactly ' +
          '(±9007199254740991)',
      ],
    ],
    [
      'beyond-a-double',
      '{"big":1e400}',
      ['passThrough.big: 1e400 is outside the range of a double'],
    ],
  ])('refuses %s, naming the member', (_, json, problems) => {
    expect(parse(json)).toEqual({ fields: undefined, problems });
  });

  it.each<[string, Record<string, unknown> | undefined, string]>([
    ['none', undefined, ''],
    ['empty', {}, '{}'],
    ['members', { a: [1, 'x'], b: { c: null } }, '{"a":[1,"x"],"b":{"c":null}}'],
  ])('writes %s as JSON text', (_, fields, json) => {
    expect(fromPassThrough(fields)).toBe(json);
  });
});
