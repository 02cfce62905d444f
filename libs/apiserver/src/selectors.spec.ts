import { parseFieldSelector, parseLabelSelector } from './selectors';

const labels = {
  gold: { tier: 'gold', vendor: 'acme' },
  silver: { tier: 'silver' },
  none: { vendor: 'acme' },
};

function matching(selector: string): string[] {
  const parsed = parseLabelSelector(selector);
  return Object.entries(labels)
    .filter(([, l]) => parsed.matches(l))
    .map(([name]) => name);
}

describe('label selectors', () => {
  it.each([
    ['', ['gold', 'silver', 'none']],
    ['tier=gold', ['gold']],
    ['tier==silver', ['silver']],
    ['tier!=gold', ['silver', 'none']],
    ['tier in (gold,silver)', ['gold', 'silver']],
    ['tier notin (gold)', ['silver', 'none']],
    ['tier', ['gold', 'silver']],
    ['!tier', ['none']],
    ['vendor,tier notin (silver)', ['gold', 'none']],
    ['tier=gold,vendor=acme', ['gold']],
  ])('%j selects %j', (selector, expected) => {
    expect(matching(selector)).toEqual(expected);
  });

  it.each([
    ['tier in gold', "unable to parse requirement: found 'gold' expected: '('"],
    ['tier=gold,', "found '', expected: identifier after ','"],
    ['=gold', "found '=', expected: !, identifier, or 'end of string'"],
    ['tier=a b', "found 'b', expected: ',' or 'end of string'"],
  ])('rejects %j as apimachinery does', (selector, message) => {
    expect(() => parseLabelSelector(selector)).toThrow(message);
  });

  it('rejects a label value that is not valid', () => {
    expect(() => parseLabelSelector('tier=-bad')).toThrow(
      /^unable to parse requirement: values\[0\]\[tier\]: Invalid value: "-bad"/,
    );
  });
});

describe('field selectors', () => {
  const known = (label: string) => {
    if (!['metadata.name', 'spec.nodeName', 'spec.driver'].includes(label))
      throw new Error(`unsupported ${label}`);
    return label;
  };

  it('ANDs terms and supports != and escapes', () => {
    const selector = parseFieldSelector('spec.nodeName=node-a,spec.driver!=net.example.com', known);
    expect(selector.matches({ 'spec.nodeName': 'node-a', 'spec.driver': 'gpu.example.com' })).toBe(
      true,
    );
    expect(selector.matches({ 'spec.nodeName': 'node-a', 'spec.driver': 'net.example.com' })).toBe(
      false,
    );
    expect(selector.exact('spec.nodeName')).toBe('node-a');
    expect(parseFieldSelector('metadata.name=a\\,b', known).exact('metadata.name')).toBe('a,b');
  });

  it('rejects a term without an operator and unknown field labels', () => {
    expect(() => parseFieldSelector('spec.nodeName', known)).toThrow(
      "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'",
    );
    expect(() => parseFieldSelector('spec.pool.name=x', known)).toThrow(
      'unsupported spec.pool.name',
    );
  });
});
