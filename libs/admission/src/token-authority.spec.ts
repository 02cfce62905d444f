import { TokenAuthority, mayAccessNode } from './token-authority';

const ADMIN = 'admin-token-0123456789abcdef0123456789';
const NODE_A = 'node-a-token-0123456789abcdef012345678';

describe('TokenAuthority', () => {
  const authority = TokenAuthority.parse(
    JSON.stringify({
      tokens: [
        { name: 'ops', token: ADMIN, role: 'admin' },
        { name: 'node-a', token: NODE_A, role: 'node', node: 'node-a' },
      ],
    }),
  );

  it('knows who holds each token', () => {
    expect(authority.authenticate(`Bearer ${ADMIN}`)).toEqual({
      name: 'ops',
      scope: { kind: 'admin' },
    });
    expect(authority.authenticate(`bearer ${NODE_A}`)).toEqual({
      name: 'node-a',
      scope: { kind: 'node', node: 'node-a' },
    });
  });

  it.each([
    ['no header', undefined],
    ['empty', ''],
    ['unknown token', 'Bearer x'.padEnd(50, 'x')],
    ['basic auth', `Basic ${ADMIN}`],
    ['no scheme', ADMIN],
    ['two spaces', `Bearer  ${ADMIN}`],
    ['trailing garbage', `Bearer ${ADMIN} x`],
    ['token prefix', `Bearer ${ADMIN.slice(0, -1)}`],
    ['non-ASCII', `Bearer ${ADMIN}é`],
  ])('refuses %s', (_name, header) => {
    expect(authority.authenticate(header)).toBeUndefined();
  });

  it('lets a node-bound token at its own node only', () => {
    const admin = authority.authenticate(`Bearer ${ADMIN}`);
    const nodeA = authority.authenticate(`Bearer ${NODE_A}`);
    if (admin === undefined || nodeA === undefined) throw new Error('fixture tokens unknown');
    expect(mayAccessNode(admin, 'node-b')).toBe(true);
    expect(mayAccessNode(nodeA, 'node-a')).toBe(true);
    expect(mayAccessNode(nodeA, 'node-b')).toBe(false);
    expect(mayAccessNode(nodeA, '')).toBe(false);
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    [
      'unknown role',
      JSON.stringify({ tokens: [{ name: 'a', token: ADMIN, role: 'root' }] }),
      /tokens\.0\.role/,
    ],
    [
      'node missing',
      JSON.stringify({ tokens: [{ name: 'a', token: ADMIN, role: 'node' }] }),
      /tokens\.0\.node/,
    ],
    [
      'short token',
      JSON.stringify({ tokens: [{ name: 'a', token: 'short', role: 'admin' }] }),
      /at least 32/,
    ],
    [
      'token with spaces',
      JSON.stringify({ tokens: [{ name: 'a', token: `${ADMIN} x`, role: 'admin' }] }),
      /RFC 6750/,
    ],
    [
      'bad node name',
      JSON.stringify({ tokens: [{ name: 'a', token: ADMIN, role: 'node', node: 'Node_A' }] }),
      /node: a lowercase RFC 1123/,
    ],
    [
      'duplicates',
      JSON.stringify({
        tokens: [
          { name: 'a', token: ADMIN, role: 'admin' },
          { name: 'a', token: ADMIN, role: 'admin' },
        ],
      }),
      /duplicate name.*listed twice/,
    ],
  ])('rejects a token file with %s', (_name, text, message) => {
    expect(() => TokenAuthority.parse(text)).toThrow(message);
  });
});
