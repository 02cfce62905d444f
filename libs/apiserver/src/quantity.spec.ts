import { QUANTITY_FORMAT_MESSAGE as QUANTITY_FORMAT_ERROR } from '@slicekeeper/slices';
import { canonicalQuantity } from './quantity';

describe('canonicalQuantity', () => {
  it.each([
    ['keeps a canonical binary quantity', '80Gi', '80Gi'],
    ['keeps a plain integer below 1000', '132', '132'],
    ['groups thousands into a decimal suffix', '1000', '1k'],
    ['keeps digits that do not divide evenly', '1500', '1500'],
    ['moves binary quantities to the largest exact suffix', '1024Mi', '1Gi'],
    ['turns a fractional binary quantity into a smaller suffix', '1.5Gi', '1536Mi'],
    ['shows a fraction in milli units', '0.5', '500m'],
    ['shows small binary values in decimal', '512', '512'],
    ['keeps a decimal exponent, on a multiple of three', '1e4', '10e3'],
    ['rounds below a nano up', '0.0000000001', '1n'],
    ['drops a leading plus sign', '+5', '5'],
    ['keeps negative values', '-2k', '-2k'],
    ['writes zero as 0', '0Gi', '0'],
    ['caps binary quantities at 2^63-1', '16Ei', '9223372036854775807'],
    ['keeps an exponent that wraps around to an int32', '1e99999999999', '10e1215752190'],
  ])('%s: %s → %s', (_name, input, expected) => {
    expect(canonicalQuantity(input)).toBe(expected);
  });

  it.each([['80GB!'], ['abc'], [''], ['1.2.3']])('rejects %j with the server message', (input) => {
    expect(() => canonicalQuantity(input)).toThrow(QUANTITY_FORMAT_ERROR);
  });

  it('rejects an unknown suffix', () => {
    expect(() => canonicalQuantity('5Xi')).toThrow();
  });
});
