import { uniquePrefix } from './unique-prefix';

describe('uniquePrefix', () => {
  it('never repeats', () => {
    const prefixes = new Set(Array.from({ length: 1000 }, () => uniquePrefix('a')));
    expect(prefixes.size).toBe(1000);
  });
});
