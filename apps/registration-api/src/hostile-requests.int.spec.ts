import type { InjectOptions } from 'fastify';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ApiHarness, SOCKET_DIR, admin, auth, nodeA } from './testing/api-harness';

/**
 * Malformed and hostile requests. Each must get the right 4xx with the uniform error body, leave
 * Redis exactly as it was and dial nothing.
 */
interface HostileCase {
  name: string;
  request: InjectOptions;
  status: number;
  code: string;
  /** Fields the 400 must list (all of them). */
  fields?: string[];
}

const register = (payload: unknown, headers: Record<string, string> = admin): InjectOptions => ({
  method: 'POST',
  url: '/v1/plugins',
  headers,
  payload: payload as InjectOptions['payload'],
});
const raw = (payload: string, contentType = 'application/json'): InjectOptions => ({
  method: 'POST',
  url: '/v1/plugins',
  headers: { ...admin, 'content-type': contentType },
  payload,
});
const endpoint = (value: string): InjectOptions => register({ node: 'node-a', endpoint: value });
const GPU = `unix://${SOCKET_DIR}/gpu.sock`;

const cases: HostileCase[] = [
  // Authentication and node binding.
  {
    name: 'no token',
    request: register({ node: 'node-a', endpoint: GPU }, {}),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'unknown token',
    request: register({ node: 'node-a', endpoint: GPU }, auth('x'.repeat(40))),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'basic instead of bearer',
    request: register(
      { node: 'node-a', endpoint: GPU },
      { authorization: `Basic ${admin.authorization.slice(7)}` },
    ),
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'token in the query string',
    request: { method: 'GET', url: `/v1/plugins?access_token=${admin.authorization.slice(7)}` },
    status: 401,
    code: 'unauthorized',
  },
  {
    name: 'node-bound token registering on another node',
    request: register({ node: 'node-b', endpoint: GPU }, nodeA),
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'node-bound token removing on another node',
    request: { method: 'DELETE', url: '/v1/plugins/node-b/gpu.example.com', headers: nodeA },
    status: 403,
    code: 'forbidden',
  },
  {
    name: "node-bound token reading another node's plugin",
    request: { method: 'GET', url: '/v1/plugins/node-b/gpu.example.com', headers: nodeA },
    status: 403,
    code: 'forbidden',
  },
  {
    name: 'node-bound token listing another node',
    request: { method: 'GET', url: '/v1/plugins?node=node-b', headers: nodeA },
    status: 403,
    code: 'forbidden',
  },
  // Bodies.
  { name: 'bad JSON', request: raw('{"node": "node-a",'), status: 400, code: 'invalid-json' },
  { name: 'empty JSON body', request: raw(''), status: 400, code: 'invalid-json' },
  {
    name: 'text body',
    request: raw('node=node-a', 'text/plain'),
    status: 415,
    code: 'unsupported-media-type',
  },
  {
    name: 'form body',
    request: raw('node=node-a', 'application/x-www-form-urlencoded'),
    status: 415,
    code: 'unsupported-media-type',
  },
  {
    name: 'array body',
    request: raw('[]'),
    status: 400,
    code: 'invalid-request',
    fields: ['body'],
  },
  {
    name: 'string body',
    request: raw('"node-a"'),
    status: 400,
    code: 'invalid-request',
    fields: ['body'],
  },
  {
    name: 'wrong types',
    request: register({ node: 5, endpoint: true, supportedVersions: 'v1' }),
    status: 400,
    code: 'invalid-request',
    fields: ['body.node', 'body.endpoint', 'body.supportedVersions'],
  },
  {
    name: 'missing fields',
    request: register({}),
    status: 400,
    code: 'invalid-request',
    fields: ['body.node', 'body.endpoint'],
  },
  {
    name: 'unknown fields',
    request: register({ node: 'node-a', endpoint: GPU, admin: true, version: 'v1' }),
    status: 400,
    code: 'invalid-request',
    fields: ['body.admin', 'body.version'],
  },
  {
    name: '__proto__ pollution',
    request: raw(`{"node":"node-a","endpoint":"${GPU}","__proto__":{"admin":true}}`),
    status: 400,
    code: 'invalid-json',
  },
  {
    name: 'constructor.prototype pollution',
    request: raw(
      `{"node":"node-a","endpoint":"${GPU}","constructor":{"prototype":{"admin":true}}}`,
    ),
    status: 400,
    code: 'invalid-json',
  },
  {
    name: 'huge body',
    request: register({ node: 'node-a', endpoint: GPU, pad: 'x'.repeat(20_000) }),
    status: 413,
    code: 'body-too-large',
  },
  {
    name: 'deeply nested JSON',
    request: raw(`{"node":${'['.repeat(4000)}${']'.repeat(4000)},"endpoint":"${GPU}"}`),
    status: 400,
    code: 'invalid-request',
    fields: ['body.node'],
  },
  {
    name: 'too many versions',
    request: register({
      node: 'node-a',
      endpoint: GPU,
      supportedVersions: Array.from({ length: 17 }, (_, i) => `v${i}`),
    }),
    status: 400,
    code: 'invalid-request',
    fields: ['body.supportedVersions'],
  },
  // Names.
  {
    name: 'unicode driver name',
    request: register({ node: 'node-a', endpoint: GPU, driver: 'gpü.example.com' }),
    status: 400,
    code: 'invalid-request',
    fields: ['body.driver'],
  },
  {
    name: 'homoglyph node name',
    request: register({ node: 'nоde-a', endpoint: GPU }),
    status: 400,
    code: 'invalid-request',
    fields: ['body.node'],
  },
  {
    name: 'driver name of 64 characters',
    request: register({ node: 'node-a', endpoint: GPU, driver: `${'a'.repeat(60)}.com` }),
    status: 400,
    code: 'invalid-request',
    fields: ['body.driver'],
  },
  {
    // Dot segments are resolved before routing: the request names no route at all.
    name: 'dot segments in the URL',
    request: { method: 'GET', url: '/v1/plugins/%2e%2e/gpu.example.com', headers: admin },
    status: 404,
    code: 'not-found',
  },
  {
    name: 'encoded slash in URL params',
    request: {
      method: 'DELETE',
      url: '/v1/plugins/node-a%2F..%2Fnode-b/gpu.example.com',
      headers: admin,
    },
    status: 400,
    code: 'invalid-request',
    fields: ['params.node'],
  },
  {
    name: 'limit out of range',
    request: { method: 'GET', url: '/v1/plugins?limit=100000', headers: admin },
    status: 400,
    code: 'invalid-request',
    fields: ['querystring.limit'],
  },
  {
    name: 'forged page cursor',
    request: { method: 'GET', url: '/v1/plugins?after=%00%FF', headers: admin },
    status: 400,
    code: 'invalid-request',
    fields: ['querystring.after'],
  },
  // Endpoints: malformed.
  {
    name: 'path traversal in socket path',
    request: endpoint(`unix://${SOCKET_DIR}/../../../../run/docker.sock`),
    status: 400,
    code: 'invalid-request',
    fields: ['body.endpoint'],
  },
  {
    name: 'relative socket path',
    request: endpoint('unix://plugins/gpu.sock'),
    status: 400,
    code: 'invalid-request',
    fields: ['body.endpoint'],
  },
  {
    name: 'NUL in socket path',
    request: endpoint(`unix://${SOCKET_DIR}/gpu\u0000.sock`),
    status: 400,
    code: 'invalid-request',
    fields: ['body.endpoint'],
  },
  {
    name: 'CRLF in endpoint',
    request: endpoint('10.0.0.1:9000\r\nX-Injected: 1'),
    status: 400,
    code: 'invalid-request',
    fields: ['body.endpoint'],
  },
  {
    name: 'URL instead of endpoint',
    request: endpoint('http://10.0.0.1:9000/'),
    status: 400,
    code: 'invalid-request',
    fields: ['body.endpoint'],
  },
  {
    name: 'socket path too long',
    request: endpoint(`unix://${SOCKET_DIR}/${'a'.repeat(90)}.sock`),
    status: 400,
    code: 'invalid-endpoint',
    fields: ['body.endpoint'],
  },
  {
    name: 'traversal in removal endpoint',
    request: {
      method: 'DELETE',
      url: `/v1/plugins/node-a/gpu.example.com?endpoint=${encodeURIComponent(`unix://${SOCKET_DIR}/../x.sock`)}`,
      headers: admin,
    },
    status: 400,
    code: 'invalid-request',
    fields: ['querystring.endpoint'],
  },
  // Endpoints: well-formed but not allowed.
  {
    name: 'socket outside the plugin directory',
    request: endpoint('unix:///run/containerd/containerd.sock'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'sibling directory with the same prefix',
    request: endpoint(`unix://${SOCKET_DIR}-evil/gpu.sock`),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'cloud metadata address',
    request: endpoint('169.254.169.254:80'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'cloud metadata name',
    request: endpoint('metadata.google.internal:80'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'IPv6 metadata address',
    request: endpoint('[fd00:ec2::254]:80'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'link-local address',
    request: endpoint('169.254.10.10:9000'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'loopback address',
    request: endpoint('127.0.0.1:6379'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'IPv4-mapped loopback',
    request: endpoint('[::ffff:127.0.0.1]:6379'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'decimal loopback',
    request: endpoint('2130706433:6379'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'unspecified address',
    request: endpoint('0.0.0.0:6379'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'private address outside the allowlist',
    request: endpoint('192.168.0.10:9000'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'name outside the allowlist',
    request: endpoint('evil.example.com:9000'),
    status: 403,
    code: 'endpoint-forbidden',
  },
  {
    name: 'localhost',
    request: endpoint('localhost:6379'),
    status: 403,
    code: 'endpoint-forbidden',
  },
];

describe('hostile requests', () => {
  let server: RedisServer;
  let h: ApiHarness;

  beforeAll(async () => {
    server = await RedisServer.start();
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('api') }).ready();
    // Something to protect: a registration on each node, stored directly (no dial).
    for (const node of ['node-a', 'node-b']) {
      await h.store.add({
        node,
        driver: 'gpu.example.com',
        endpoint: GPU,
        version: 'v1.ResourcePublisher',
      });
    }
  });
  afterAll(async () => {
    await h.close();
    await server.stop();
  });

  it('has a table of at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = await h.redisState();
    const res = await h.app.inject(c.request);
    expect(res.statusCode).toBe(c.status);
    const body = res.json<{ code: string; message: string; details: { field: string }[] }>();
    expect(body).toEqual({
      code: c.code,
      message: expect.any(String) as unknown,
      details: expect.any(Array) as unknown,
    });
    if (c.fields !== undefined) expect(body.details.map((d) => d.field)).toEqual(c.fields);
    expect(h.prober.connects).toEqual([]);
    expect(await h.redisState()).toEqual(before);
  });
});
