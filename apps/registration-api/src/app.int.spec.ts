import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import {
  ADMIN_TOKEN,
  ApiHarness,
  NODE_A_TOKEN,
  SOCKET_DIR,
  admin,
  auth,
  nodeA,
} from './testing/api-harness';

const GPU = `unix://${SOCKET_DIR}/gpu.sock`;

describe('registration API', () => {
  let server: RedisServer;
  let h: ApiHarness;

  beforeAll(async () => {
    server = await RedisServer.start();
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('api') }).ready();
  });
  afterAll(async () => {
    await h.close();
    await server.stop();
  });

  it('serves an OpenAPI document with a schema for every body and response code', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<{
      paths: Record<
        string,
        Record<string, { requestBody?: unknown; responses: Record<string, { content?: unknown }> }>
      >;
    }>();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/plugins',
        '/v1/plugins/{node}/{driver}',
        '/healthz',
        '/readyz',
        '/metrics',
      ]),
    );
    expect(Object.keys(doc.paths['/v1/plugins']?.post?.responses ?? {})).toEqual(
      expect.arrayContaining([
        '200',
        '201',
        '400',
        '401',
        '403',
        '409',
        '413',
        '422',
        '429',
        '502',
      ]),
    );
    expect(doc.paths['/v1/plugins']?.post?.requestBody).toBeDefined();
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [code, response] of Object.entries(operation.responses)) {
          expect([`${method} ${path} ${code}`, response.content]).toEqual([
            `${method} ${path} ${code}`,
            expect.anything(),
          ]);
        }
      }
    }
    const ui = await h.app.inject({ method: 'GET', url: '/docs' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toContain('text/html');
  });

  it('answers probes without a token', async () => {
    expect((await h.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({
      status: 'ok',
    });
    const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { status: 'ok' }]);
  });

  it('is not ready while Redis does not answer', async () => {
    const slow = await new ApiHarness({
      redisUrl: server.url,
      prefix: uniquePrefix('api'),
      readinessTimeoutMs: 100,
    }).ready();
    try {
      // A Redis that accepts the connection and never answers, as a hung server does.
      jest.spyOn(slow.redis, 'ping').mockReturnValue(new Promise<'PONG'>(() => undefined));
      const res = await slow.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        code: 'not-ready',
        message: 'redis: no answer within 100ms',
        details: [],
      });
    } finally {
      jest.restoreAllMocks();
      await slow.close();
    }
  });

  it('counts requests by route and code, and registrations by node', async () => {
    await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: nodeA,
      payload: { node: 'node-a', endpoint: GPU },
    });
    await h.app.inject({ method: 'GET', url: '/v1/plugins/node-a/nope', headers: nodeA });
    await h.app.inject({ method: 'GET', url: '/nowhere' });
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toMatch(
      /^slicekeeper_api_requests_total\{method="POST",route="\/v1\/plugins",code="201",service="registration-api"\} 1$/m,
    );
    expect(res.body).toMatch(
      /^slicekeeper_api_requests_total\{method="GET",route="\/v1\/plugins\/:node\/:driver",code="404",service="registration-api"\} 1$/m,
    );
    expect(res.body).toMatch(
      /^slicekeeper_api_requests_total\{method="GET",route="unmatched",code="404",.*\} 1$/m,
    );
    expect(res.body).toMatch(
      /^slicekeeper_api_registrations_total\{node="node-a",result="created",service="registration-api"\} 1$/m,
    );
  });

  it('sets security headers and request ids on every answer', async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/v1/plugins',
      headers: { ...admin, 'x-request-id': 'trace-42' },
    });
    expect(res.headers).toMatchObject({
      'x-request-id': 'trace-42',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'strict-transport-security': expect.stringContaining('max-age') as unknown,
      'content-security-policy': expect.stringContaining("default-src 'self'") as unknown,
    });
    const forged = await h.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': 'a b "c"' },
    });
    expect(forged.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs a request id on every request line and never a token', async () => {
    h.logs.length = 0;
    h.rawLogs.length = 0;
    await h.app.inject({ method: 'GET', url: '/v1/plugins', headers: admin });
    await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: nodeA,
      payload: { node: 'node-a', endpoint: GPU },
    });
    await h.app.inject({ method: 'GET', url: '/v1/plugins', headers: auth(`${NODE_A_TOKEN}x`) });
    await h.app.inject({ method: 'POST', url: '/v1/plugins', headers: admin, payload: '{' });
    expect(h.logs.length).toBeGreaterThanOrEqual(8);
    for (const line of h.logs) expect(line).toHaveProperty('reqId');
    expect(h.logs.some((line) => line.principal === 'node-a' && line.msg === 'registered')).toBe(
      true,
    );
    const all = h.rawLogs.join('');
    expect(all).not.toContain(ADMIN_TOKEN);
    expect(all).not.toContain(NODE_A_TOKEN);
  });

  it('limits requests per token across replicas, through Redis', async () => {
    const prefix = uniquePrefix('rate');
    const replicas = [
      await new ApiHarness({ redisUrl: server.url, prefix, rateLimitMax: 3 }).ready(),
      await new ApiHarness({ redisUrl: server.url, prefix, rateLimitMax: 3 }).ready(),
    ];
    try {
      const get = (i: number, headers: Record<string, string>) =>
        replicas[i % 2]?.app.inject({ method: 'GET', url: '/v1/plugins', headers });
      for (let i = 0; i < 3; i++) expect((await get(i, admin))?.statusCode).toBe(200);
      const limited = await get(3, admin);
      expect(limited?.statusCode).toBe(429);
      expect(limited?.json()).toEqual({
        code: 'rate-limited',
        message: expect.stringMatching(
          /^rate limit of 3 requests per 1 minute exceeded; retry in \d+s$/,
        ) as unknown,
        details: [],
      });
      expect(limited?.headers['retry-after']).toBeDefined();
      expect((await get(4, admin))?.statusCode).toBe(429);
      expect((await get(0, nodeA))?.statusCode).toBe(200);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });
});
