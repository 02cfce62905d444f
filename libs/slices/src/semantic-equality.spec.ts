import type { CounterSet, Device } from '@slicekeeper/contracts';
import { counterSetsEqual, deviceEqual, semanticEqual, taintTimesEqual } from './semantic-equality';
import { gpu } from './testing/fixtures';

const taint = { key: 'example.com/ecc', effect: 'NoSchedule' };

type Policy = NonNullable<NonNullable<Device['capacity']>[string]['requestPolicy']>;

/** A consumable-capacity policy: `default` within a range from 1Gi in `step`s. */
function shared(defaultValue: string, step: string): Policy {
  return { default: defaultValue, validRange: { min: '1Gi', max: '100Gi', step } };
}

const deviceCases: [name: string, stored: Device, desired: Device, equal: boolean][] = [
  ['identical', gpu(0), gpu(0), true],
  [
    'attribute-order-ignored',
    gpu(0, { attributes: { a: { int: 1 }, b: { bool: true } } }),
    gpu(0, { attributes: { b: { bool: true }, a: { int: 1 } } }),
    true,
  ],
  [
    'attribute-missing',
    gpu(0, { attributes: { a: { int: 1 } } }),
    gpu(0, { attributes: {} }),
    false,
  ],
  ['attribute-added', gpu(0, { attributes: {} }), gpu(0, { attributes: { a: { int: 1 } } }), false],
  [
    'attribute-type-changed',
    gpu(0, { attributes: { a: { int: 1 } } }),
    gpu(0, { attributes: { a: { string: '1' } } }),
    false,
  ],
  [
    'absent-map-equals-empty-map',
    gpu(0, { capacity: {} }),
    { ...gpu(0), capacity: undefined },
    true,
  ],
  [
    'capacity-by-value',
    gpu(0, { capacity: { memory: { value: '1Gi' } } }),
    gpu(0, { capacity: { memory: { value: '1024Mi' } } }),
    true,
  ],
  [
    'capacity-value-differs',
    gpu(0, { capacity: { memory: { value: '1Gi' } } }),
    gpu(0, { capacity: { memory: { value: '1G' } } }),
    false,
  ],
  [
    'request-policy-by-value',
    gpu(0, { capacity: { bw: { value: '100Gi', requestPolicy: shared('1024Mi', '1073741824') } } }),
    gpu(0, { capacity: { bw: { value: '100Gi', requestPolicy: shared('1Gi', '1Gi') } } }),
    true,
  ],
  [
    'request-policy-default-differs',
    gpu(0, { capacity: { bw: { value: '100Gi', requestPolicy: shared('2Gi', '1Gi') } } }),
    gpu(0, { capacity: { bw: { value: '100Gi', requestPolicy: shared('1Gi', '1Gi') } } }),
    false,
  ],
  [
    'request-policy-unset-default-is-null',
    gpu(0, {
      capacity: { bw: { value: '1', requestPolicy: { default: null } as unknown as Policy } },
    }),
    gpu(0, { capacity: { bw: { value: '1', requestPolicy: {} } } }),
    true,
  ],
  [
    'request-policy-valid-values-by-value',
    gpu(0, {
      capacity: { q: { value: '8', requestPolicy: { default: '1', validValues: ['1', '2'] } } },
    }),
    gpu(0, {
      capacity: {
        q: { value: '8', requestPolicy: { default: '1000m', validValues: ['1', '2000m'] } },
      },
    }),
    true,
  ],
  [
    'request-policy-removed',
    gpu(0, { capacity: { bw: { value: '100Gi', requestPolicy: shared('1Gi', '1Gi') } } }),
    gpu(0, { capacity: { bw: { value: '100Gi' } } }),
    false,
  ],
  [
    'list-attribute-order-matters',
    gpu(0, { attributes: { numa: { ints: [0, 1] } } }),
    gpu(0, { attributes: { numa: { ints: [1, 0] } } }),
    false,
  ],
  [
    'list-attribute-equal',
    gpu(0, { attributes: { roots: { strings: ['a', 'b'] } } }),
    gpu(0, { attributes: { roots: { strings: ['a', 'b'] } } }),
    true,
  ],
  [
    'unset-boolean-equals-false',
    gpu(0, { allowMultipleAllocations: false, bindsToNode: false }),
    gpu(0),
    true,
  ],
  [
    'binding-conditions-differ',
    gpu(0, { bindingConditions: ['a'] }),
    gpu(0, { bindingConditions: ['b'] }),
    false,
  ],
  [
    'pass-through-member-equal',
    { ...gpu(0), futureField: { a: [1] } } as Device,
    { ...gpu(0), futureField: { a: [1] } } as Device,
    true,
  ],
  [
    'pass-through-member-differs',
    { ...gpu(0), futureField: { a: [1] } } as Device,
    { ...gpu(0), futureField: { a: [2] } } as Device,
    false,
  ],
  [
    'absent-taint-value-equals-empty',
    gpu(0, { taints: [{ ...taint, value: '' }] }),
    gpu(0, { taints: [taint] }),
    true,
  ],
  [
    'taint-effect-differs',
    gpu(0, { taints: [taint] }),
    gpu(0, { taints: [{ ...taint, effect: 'NoExecute' }] }),
    false,
  ],
  [
    'taint-order-matters',
    gpu(0, { taints: [taint, { key: 'b', effect: 'None' }] }),
    gpu(0, { taints: [{ key: 'b', effect: 'None' }, taint] }),
    false,
  ],
  [
    'counter-consumption-by-value',
    gpu(0, { consumesCounters: [{ counterSet: 's', counters: { memory: { value: '2Gi' } } }] }),
    gpu(0, { consumesCounters: [{ counterSet: 's', counters: { memory: { value: '2048Mi' } } }] }),
    true,
  ],
  [
    'unknown-stored-field-is-a-difference',
    { ...gpu(0), ...JSON.parse('{"bindingConditions":["ready"]}') } as Device,
    gpu(0),
    false,
  ],
  [
    'empty-unknown-stored-field-is-no-difference',
    { ...gpu(0), ...JSON.parse('{"bindingConditions":[]}') } as Device,
    gpu(0),
    true,
  ],
];

describe('deviceEqual', () => {
  it.each(deviceCases)('%s', (_, stored, desired, equal) => {
    expect(deviceEqual(stored, desired)).toBe(equal);
  });
});

describe('taintTimesEqual', () => {
  const cases: [
    name: string,
    stored: string | undefined,
    desired: string | undefined,
    equal: boolean,
  ][] = [
    ['same', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z', true],
    ['rounded-by-the-server', '2025-01-01T00:00:01Z', '2025-01-01T00:00:00.600Z', true],
    ['exactly-one-second', '2025-01-01T00:00:01Z', '2025-01-01T00:00:00Z', true],
    ['over-one-second', '2025-01-01T00:00:01.001Z', '2025-01-01T00:00:00Z', false],
    ['other-zone-same-instant', '2025-01-01T02:00:00+02:00', '2025-01-01T00:00:00Z', true],
    ['unset-desired-matches', '2025-01-01T00:00:00Z', undefined, true],
    ['unset-stored-matches', undefined, '2025-01-01T00:00:00Z', true],
    ['unparseable-differs', 'soon', 'later', false],
  ];

  it.each(cases)('%s', (_, stored, desired, equal) => {
    expect(taintTimesEqual(stored, desired)).toBe(equal);
  });
});

describe('counterSetsEqual', () => {
  const set = (value: string): CounterSet => ({ name: 's', counters: { memory: { value } } });

  it('compares counters by value and absent lists as empty', () => {
    expect(counterSetsEqual([set('1Gi')], [set('1024Mi')])).toBe(true);
    expect(counterSetsEqual([set('1Gi')], [set('1G')])).toBe(false);
    expect(counterSetsEqual(undefined, [])).toBe(true);
    expect(counterSetsEqual([set('1')], undefined)).toBe(false);
  });
});

describe('semanticEqual', () => {
  const cases: [name: string, a: unknown, b: unknown, equal: boolean][] = [
    ['key-order', { a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, true],
    ['list-order', [1, 2], [2, 1], false],
    ['empty-equals-absent', { a: [], b: {}, c: '' }, {}, true],
    ['value-differs', { a: { b: 'x' } }, { a: { b: 'y' } }, false],
    ['extra-field', { a: 1 }, { a: 1, b: 2 }, false],
    ['list-versus-object', [], {}, true],
    ['list-versus-non-empty-object', [1], { 0: 1 }, false],
  ];

  it.each(cases)('%s', (_, a, b, equal) => {
    expect(semanticEqual(a, b)).toBe(equal);
    expect(semanticEqual(b, a)).toBe(equal);
  });
});
