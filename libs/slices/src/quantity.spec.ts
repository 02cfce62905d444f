import { compareQuantities, isQuantity, parseQuantity, quantitiesEqual } from './quantity';

describe('quantity', () => {
  const equal: [name: string, a: string, b: string][] = [
    ['binary-equals-smaller-binary', '1Gi', '1024Mi'],
    ['binary-equals-plain', '1Gi', '1073741824'],
    ['fraction-equals-milli', '0.5', '500m'],
    ['kilo-equals-exponent', '1k', '1e3'],
    ['upper-exponent', '1E3', '1000'],
    ['lone-E-is-exa', '1E', '1e18'],
    ['plus-sign', '+1', '1'],
    ['negative-zero', '-0', '0'],
    ['zero-with-suffix', '0Gi', '0'],
    ['leading-dot', '.5', '0.5'],
    ['trailing-dot', '5.', '5'],
    ['fractional-binary', '1.5Ki', '1536'],
    ['nano-and-exponent', '1n', '1e-9'],
    ['micro-and-nano', '1u', '1000n'],
    ['exa-binary', '2Ei', '2305843009213693952'],
    ['trailing-zeros', '100.000', '1e2'],
    ['negative-binary', '-1Ki', '-1024'],
  ];

  it.each(equal)('%s: %s equals %s', (_, a, b) => {
    expect(quantitiesEqual(a, b)).toBe(true);
    expect(quantitiesEqual(b, a)).toBe(true);
  });

  const different: [name: string, a: string, b: string][] = [
    ['binary-is-not-decimal', '1Gi', '1G'],
    ['sign-matters', '1', '-1'],
    ['milli-is-not-one', '1m', '1'],
    ['huge-exponent', '1e2000000000', '1'],
    ['tiny-exponent', '1e-2000000000', '0'],
    ['invalid-equals-nothing-else', '1K', '1000'],
  ];

  it.each(different)('%s: %s differs from %s', (_, a, b) => {
    expect(quantitiesEqual(a, b)).toBe(false);
  });

  const ordered: [name: string, smaller: string, larger: string][] = [
    ['kibi-over-kilo', '1k', '1Ki'],
    ['negative-below-zero', '-5', '0'],
    ['more-negative-below-less-negative', '-2Gi', '-1Gi'],
    ['same-leading-digit-position', '12', '19'],
    ['fraction-below-whole', '999m', '1'],
    ['large-exponent-above-many-digits', '999999999999', '1e20'],
  ];

  it.each(ordered)('%s: %s < %s', (_, smaller, larger) => {
    const a = parseQuantity(smaller);
    const b = parseQuantity(larger);
    if (a === undefined || b === undefined) throw new Error('fixture is not a quantity');
    expect(compareQuantities(a, b)).toBe(-1);
    expect(compareQuantities(b, a)).toBe(1);
    expect(compareQuantities(a, a)).toBe(0);
  });

  const invalid: [name: string, text: string][] = [
    ['empty', ''],
    ['unknown-suffix', '1K'],
    ['two-dots', '1.2.3'],
    ['no-digits', 'e3'],
    ['exponent-without-digits', '1e'],
    ['letters', 'abc'],
    ['inner-space', '1 Gi'],
    ['trailing-space', '1Gi '],
    ['double-sign', '--1'],
    ['exponent-over-int32', '1e99999999999'],
    ['lone-dot', '.'],
    ['lone-sign', '+'],
    ['suffix-then-exponent', '1m3'],
  ];

  it.each(invalid)('%s: rejects %j', (_, text) => {
    expect(parseQuantity(text)).toBeUndefined();
    expect(isQuantity(text)).toBe(false);
  });

  it('accepts what it parses', () => {
    for (const [, a, b] of equal) {
      expect(isQuantity(a)).toBe(true);
      expect(isQuantity(b)).toBe(true);
    }
  });
});
