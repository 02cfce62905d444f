import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ADMIN_TOKEN, ApiHarness, admin } from '../testing/api-harness';

/** Directives of a Content-Security-Policy header, by name. */
function directives(header: unknown): Map<string, string> {
  if (typeof header !== 'string') throw new Error(`no CSP header: ${String(header)}`);
  return new Map(
    header
      .split(';')
      .map((d) => d.trim())
      .filter((d) => d !== '')
      .map((d) => {
        const [name = '', ...values] = d.split(/\s+/);
        return [name, values.join(' ')];
      }),
  );
}

describe('the status page files', () => {
  let server: RedisServer;
  let h: ApiHarness;

  beforeAll(async () => {
    server = await RedisServer.start();
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('ui') }).ready();
  });
  afterAll(async () => {
    await h.close();
    await server.stop();
  });

  it.each([
    ['/ui', 'text/html; charset=utf-8', '<script type="module" src="/ui/status-page.js">'],
    ['/ui/', 'text/html; charset=utf-8', '<link rel="stylesheet" href="/ui/status-page.css"'],
    ['/ui/status-page.js', 'text/javascript; charset=utf-8', 'fetch(path, {'],
    ['/ui/status-page.css', 'text/css; charset=utf-8', '.key--problem'],
    ['/ui/favicon.svg', 'image/svg+xml', '<svg'],
  ])('serves %s without a token, as %s', async (url, contentType, excerpt) => {
    const res = await h.app.inject({ method: 'GET', url });
    expect([res.statusCode, res.headers['content-type']]).toEqual([200, contentType]);
    expect(res.body).toContain(excerpt);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('holds no data, even when asked with a token: the page reads /v1 itself', async () => {
    await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: 'node-a', endpoint: 'unix:///var/lib/kubelet/plugins/gpu.sock' },
    });
    const listed = await h.app.inject({ method: 'GET', url: '/v1/plugins', headers: admin });
    expect(listed.body).toContain('node-a');

    for (const headers of [{}, admin]) {
      const shell = await h.app.inject({ method: 'GET', url: '/ui', headers });
      expect(shell.statusCode).toBe(200);
      expect(shell.body).not.toContain('node-a');
      expect(shell.body).not.toContain('gpu.example.com');
      expect(shell.body).not.toContain(ADMIN_TOKEN);
    }
    // The data itself still needs the token.
    expect((await h.app.inject({ method: 'GET', url: '/v1/plugins' })).statusCode).toBe(401);
  });

  it('allows script and style from its own files only, and no inline ones', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/ui' });
    const csp = directives(res.headers['content-security-policy']);
    expect(Object.fromEntries(csp)).toEqual({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'connect-src': "'self'",
      'img-src': "'self'",
      'base-uri': "'none'",
      'form-action': "'none'",
      'frame-ancestors': "'none'",
    });
    // And the shell has neither an inline script nor an inline style that the policy would block.
    expect(res.body).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(res.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it('answers 304 to a request with the current ETag', async () => {
    const first = await h.app.inject({ method: 'GET', url: '/ui/status-page.js' });
    const etag = first.headers.etag;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await h.app.inject({
      method: 'GET',
      url: '/ui/status-page.js',
      headers: { 'if-none-match': String(etag) },
    });
    expect([again.statusCode, again.body]).toEqual([304, '']);
    const stale = await h.app.inject({
      method: 'GET',
      url: '/ui/status-page.js',
      headers: { 'if-none-match': '"something-older"' },
    });
    expect(stale.statusCode).toBe(200);
  });

  it('serves nothing else under /ui and leaves the API its own headers', async () => {
    expect((await h.app.inject({ method: 'GET', url: '/ui/app.ts' })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/ui/../app.ts' })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'POST', url: '/ui' })).statusCode).toBe(405);
    const api = await h.app.inject({ method: 'GET', url: '/v1/plugins', headers: admin });
    expect(directives(api.headers['content-security-policy']).get('default-src')).toBe("'self'");
  });

  it('is not part of the OpenAPI document', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<string, unknown>;
    }>();
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/ui'))).toEqual([]);
  });
});
