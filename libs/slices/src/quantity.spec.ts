import {
  QUANTITY_FORMAT_MESSAGE,
  QUANTITY_NUMERIC_MESSAGE,
  QUANTITY_SUFFIX_MESSAGE,
  compareQuantities,
  isQuantity,
  parseQuantity,
  quantitiesEqual,
  quantityProblem,
  readQuantity,
} from './quantity';

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
    // What ParseQuantity does beyond the grammar, so that the planner compares as the server does.
    ['no-digits-is-zero', 'e3', '0'],
    ['lone-dot-is-zero', '.', '0'],
    ['lone-sign-is-zero', '+', '0'],
    ['binary-suffix-alone-is-zero', 'Ki', '0'],
    ['below-nano-rounds-up', '0.0000000001', '1n'],
    ['negative-below-nano-rounds-away-from-zero', '-1e-12', '-1n'],
    ['binary-capped-at-int64', '16Ei', '9223372036854775807'],
    ['negative-binary-capped', '-16Ei', '-9223372036854775807'],
    ['exponent-wraps-to-int32', '1e4294967296', '1'],
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
    ['exponent-without-digits', '1e'],
    ['letters', 'abc'],
    ['inner-space', '1 Gi'],
    ['trailing-space', '1Gi '],
    ['double-sign', '--1'],
    ['exponent-over-int64', '1e9223372036854775808'],
    ['suffix-then-exponent', '1m3'],
    ['no-digits-with-a-large-binary-suffix', 'Pi'],
    ['no-digits-below-nano', 'e-10'],
  ];

  it.each(invalid)('%s: rejects %j', (_, text) => {
    expect(parseQuantity(text)).toBeUndefined();
    expect(isQuantity(text)).toBe(false);
  });

  const problems: [name: string, text: string, message: string][] = [
    ['format', '1.2.3', QUANTITY_FORMAT_MESSAGE],
    ['empty', '', QUANTITY_FORMAT_MESSAGE],
    ['suffix', '1K', QUANTITY_SUFFIX_MESSAGE],
    ['exponent-suffix', '1e3.5', QUANTITY_FORMAT_MESSAGE],
    ['numeric', '.Ei', QUANTITY_NUMERIC_MESSAGE],
    ['numeric-signed', '-Pi', QUANTITY_NUMERIC_MESSAGE],
    ['numeric-point-only', '.e-10', QUANTITY_NUMERIC_MESSAGE],
  ];

  it.each(problems)('%s: says why %j is no quantity, as the server does', (_, text, message) => {
    expect(readQuantity(text).problem).toBe(message);
    expect(quantityProblem(text)).toBe(message);
  });

  it.each([
    ['leading-zero', '0Pi'],
    ['zero-after-point', '.0Pi'],
    ['zero-before-point', '0.e-10'],
    ['sign-only', '-'],
  ])('%s: %j has digits enough for the slow path (no problem)', (_, text) => {
    expect(quantityProblem(text)).toBeUndefined();
    expect(readQuantity(text).problem).toBeUndefined();
  });

  it.each([
    ['1Ki', 'BinarySI'],
    ['0.0001Ki', 'DecimalSI'],
    ['1k', 'DecimalSI'],
    ['1e3', 'DecimalExponent'],
  ])('reads the format of %s: %s', (text, format) => {
    expect(parseQuantity(text)?.format).toBe(format);
  });

  it('accepts what it parses', () => {
    for (const [, a, b] of equal) {
      expect(isQuantity(a)).toBe(true);
      expect(isQuantity(b)).toBe(true);
      expect(quantityProblem(a)).toBeUndefined();
      expect(quantityProblem(b)).toBeUndefined();
    }
  });
});
