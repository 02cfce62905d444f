import { TokenAuthority } from '@slicekeeper/admission';
import { generateStackTokens, tokenFileJson } from './stack-tokens';

describe('stack tokens', () => {
  it('make a token file the registration API accepts: an admin and one token per node', () => {
    const tokens = generateStackTokens(['node-a', 'node-b']);
    const authority = TokenAuthority.parse(tokenFileJson(tokens));
    expect(authority.authenticate(`Bearer ${tokens.admin}`)?.scope).toEqual({ kind: 'admin' });
    expect(authority.authenticate(`Bearer ${tokens.nodes.get('node-a') ?? ''}`)?.scope).toEqual({
      kind: 'node',
      node: 'node-a',
    });
    expect(authority.authenticate(`Bearer ${tokens.nodes.get('node-b') ?? ''}`)?.scope).toEqual({
      kind: 'node',
      node: 'node-b',
    });
  });

  it('are fresh every time', () => {
    expect(generateStackTokens(['n']).admin).not.toBe(generateStackTokens(['n']).admin);
  });
});
