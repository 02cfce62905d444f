import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';
import { errorSchema } from './schemas/error';
import { ApiHarness, admin, gpuInfo } from './testing/api-harness';
import type { FakePlugin } from './testing/api-harness';

/** A plugin endpoint the harness's policy admits without touching the file system or DNS. */
const GPU = '10.0.0.9:50051';
const PLUGIN = '/v1/plugins/node-a/gpu.example.com';

/** The answer is the API's one error body, as JSON, and nothing else. */
function errorBody(res: LightMyRequestResponse) {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return errorSchema.parse(res.json());
}

/** Writes `request` on a raw socket to the listening API and resolves with all it answered. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      resolve(answer);
    });
    socket.end(request);
  });
}

/** Status, headers (lowercase) and JSON body of a raw HTTP/1.1 answer. */
function parseRaw(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: JSON.parse(body) as unknown,
  };
}

describe('error answers', () => {
  let server: RedisServer;
  let h: ApiHarness;

  beforeAll(async () => {
    server = await RedisServer.start();
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('errors') }).ready();
  });
  afterAll(async () => {
    await h.close();
    await server.stop();
  });
  afterEach(() => {
    jest.restoreAllMocks();
    h.prober.plugins.clear();
    h.prober.notifyErrors.clear();
  });

  describe('405 Method Not Allowed', () => {
    /** Every path of the OpenAPI document with its methods, as a client would read them. */
    async function documentedPaths(): Promise<[string, string[]][]> {
      const doc = (await h.app.inject({ method: 'GET', url: '/docs/json' })).json<{
        paths: Record<string, Record<string, unknown>>;
      }>();
      return Object.entries(doc.paths).map(([path, operations]) => {
        const methods = Object.keys(operations).map((m) => m.toUpperCase());
        // fastify answers HEAD wherever it answers GET.
        if (methods.includes('GET')) methods.push('HEAD');
        return [
          path.replace('{node}', 'node-a').replace('{driver}', 'gpu.example.com'),
          methods.sort(),
        ];
      });
    }
    const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const;

    it('answers every other method on every documented path with 405, Allow and the error body', async () => {
      const paths = await documentedPaths();
      expect(paths.map(([path]) => path)).toEqual(
        expect.arrayContaining(['/v1/plugins', PLUGIN, '/healthz', '/readyz', '/metrics']),
      );
      for (const [path, allowed] of paths) {
        for (const method of METHODS.filter((m) => !allowed.includes(m))) {
          const res = await h.app.inject({ method, url: path, headers: admin });
          expect([method, path, res.statusCode, res.headers.allow]).toEqual([
            method,
            path,
            405,
            allowed.join(', '),
          ]);
          expect(errorBody(res)).toEqual({
            code: 'method-not-allowed',
            message: `${method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
            details: [],
          });
        }
      }
    });

    it.each([
      ['PUT', '/v1/plugins', 'GET, HEAD, POST'],
      ['PATCH', '/v1/plugins/n/d', 'DELETE, GET, HEAD'],
      ['DELETE', '/v1/plugins?node=node-a', 'GET, HEAD, POST'],
      ['POST', '/healthz', 'GET, HEAD'],
    ])('answers %s %s with 405, without asking for a token', async (method, url, allow) => {
      const res = await h.app.inject({ method: method as InjectOptions['method'], url });
      expect([res.statusCode, res.headers.allow, errorBody(res).code]).toEqual([
        405,
        allow,
        'method-not-allowed',
      ]);
    });

    it('still answers 404 to a path no route has, whatever the method', async () => {
      for (const method of ['GET', 'PUT'] as const) {
        const res = await h.app.inject({ method, url: '/v1/nowhere' });
        expect([res.statusCode, res.headers.allow, errorBody(res).code]).toEqual([
          404,
          undefined,
          'not-found',
        ]);
      }
    });
  });

  describe('one body for every error', () => {
    const cases: [string, InjectOptions, number, string][] = [
      ['an unknown route', { method: 'GET', url: '/nowhere' }, 404, 'not-found'],
      ['no token', { method: 'GET', url: '/v1/plugins' }, 401, 'unauthorized'],
      [
        'bad JSON',
        {
          method: 'POST',
          url: '/v1/plugins',
          headers: { ...admin, 'content-type': 'application/json' },
          payload: '{"node":',
        },
        400,
        'invalid-json',
      ],
      [
        'a body failing the schema',
        { method: 'POST', url: '/v1/plugins', headers: admin, payload: { node: 5 } },
        400,
        'invalid-request',
      ],
      [
        'a body too large',
        {
          method: 'POST',
          url: '/v1/plugins',
          headers: admin,
          payload: { node: 'node-a', endpoint: GPU, pad: 'x'.repeat(20_000) },
        },
        413,
        'body-too-large',
      ],
      [
        'an unsupported media type',
        {
          method: 'POST',
          url: '/v1/plugins',
          headers: { ...admin, 'content-type': 'application/xml' },
          payload: '<plugin/>',
        },
        415,
        'unsupported-media-type',
      ],
      [
        'a path parameter longer than the router takes',
        { method: 'GET', url: `/v1/plugins/${'a'.repeat(301)}/gpu.example.com`, headers: admin },
        400,
        'invalid-request',
      ],
      [
        'a path parameter that is not valid percent-encoding',
        { method: 'GET', url: '/v1/plugins/node-%E0%A4%A/gpu.example.com', headers: admin },
        400,
        'invalid-request',
      ],
    ];

    it.each(cases)('answers %s', async (_name, request, status, code) => {
      const res = await h.app.inject(request);
      expect(res.statusCode).toBe(status);
      expect(errorBody(res).code).toBe(code);
    });

    it('names the parameter problem of a too-long path parameter, without echoing it', async () => {
      const res = await h.app.inject({
        method: 'DELETE',
        url: `/v1/plugins/${'\u001b'.repeat(400)}/gpu.example.com`,
        headers: admin,
      });
      expect([res.statusCode, errorBody(res)]).toEqual([
        400,
        {
          code: 'invalid-request',
          message: 'invalid params: a path parameter is longer than 300 characters',
          details: [{ field: 'params', message: 'must be at most 300 characters' }],
        },
      ]);
    });

    it('names a path parameter that is not valid percent-encoding, without echoing it', async () => {
      const res = await h.app.inject({
        method: 'GET',
        url: `/v1/plugins/%E0%A4%A${'x'.repeat(250)}/gpu.example.com`,
        headers: admin,
      });
      expect([res.statusCode, errorBody(res)]).toEqual([
        400,
        {
          code: 'invalid-request',
          message: 'invalid params: a path parameter is not valid percent-encoding',
          details: [{ field: 'params', message: 'must be valid percent-encoding' }],
        },
      ]);
    });

    it('answers 500 without the cause, and logs the cause', async () => {
      jest.spyOn(h.store, 'get').mockRejectedValue(new Error('disk on fire'));
      h.logs.length = 0;
      const res = await h.app.inject({ method: 'GET', url: PLUGIN, headers: admin });
      expect([res.statusCode, errorBody(res)]).toEqual([
        500,
        { code: 'internal', message: 'internal error', details: [] },
      ]);
      expect(h.rawLogs.join('')).toContain('disk on fire');
    });

    it('answers 503 to a Redis connection error from any command', async () => {
      jest
        .spyOn(h.store, 'get')
        .mockRejectedValue(
          new Error("Stream isn't writeable and enableOfflineQueue options is false"),
        );
      const res = await h.app.inject({ method: 'GET', url: PLUGIN, headers: admin });
      expect([res.statusCode, errorBody(res).code]).toEqual([503, 'redis-unavailable']);
    });
  });

  describe('errors fastify answers before any route runs', () => {
    let port: number;

    beforeAll(async () => {
      await h.app.listen({ host: '127.0.0.1', port: 0 });
      port = (h.app.server.address() as AddressInfo).port;
    });

    it('answers a malformed HTTP request with 400 and the error body', async () => {
      const answer = parseRaw(
        await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'),
      );
      expect([
        answer.status,
        answer.headers['content-type'],
        errorSchema.parse(answer.body).code,
      ]).toEqual([400, 'application/json', 'bad-request']);
    });

    it('answers headers too large with 431 and the error body', async () => {
      const answer = parseRaw(
        await rawExchange(
          port,
          `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'x'.repeat(20_000)}\r\n\r\n`,
        ),
      );
      expect([answer.status, errorSchema.parse(answer.body).code]).toEqual([
        431,
        'headers-too-large',
      ]);
    });

    it('answers a request arriving while the API shuts down with 503 and the error body', async () => {
      const closing = await new ApiHarness({
        redisUrl: server.url,
        prefix: uniquePrefix('closing'),
      }).ready();
      try {
        await closing.app.listen({ host: '127.0.0.1', port: 0 });
        let reached: () => void = () => undefined;
        const probing = new Promise<void>((resolve) => (reached = resolve));
        let release: () => void = () => undefined;
        const held = new Promise<void>((resolve) => (release = resolve));
        closing.prober.beforeGetInfo = async () => {
          reached();
          await held;
        };
        const socket = connect((closing.app.server.address() as AddressInfo).port, '127.0.0.1');
        let received = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (received += chunk));
        const ended = new Promise((resolve) => socket.on('close', resolve));
        // A registration, held at its probe while the API starts closing…
        const body = JSON.stringify({ node: 'node-a', endpoint: GPU });
        socket.write(
          `POST /v1/plugins HTTP/1.1\r\nHost: x\r\nAuthorization: ${admin.authorization}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        await probing;
        const closed = closing.app.close();
        await waitFor(() => !closing.app.server.listening, { description: 'the server closing' });
        // …and a request behind it on the same connection, which arrives during the shutdown.
        socket.write('GET /v1/plugins HTTP/1.1\r\nHost: x\r\n\r\n');
        release();
        await ended;
        await closed;
        const [first, second] = received.split(/(?=HTTP\/1\.1 \d{3} )/).map(parseRaw);
        expect(first?.status).toBe(201);
        expect([second?.status, second?.headers.connection, second?.body]).toEqual([
          503,
          'close',
          { code: 'shutting-down', message: expect.any(String) as unknown, details: [] },
        ]);
      } finally {
        await closing.connections.close();
      }
    });
  });

  describe('plugin text', () => {
    const HOSTILE = `\u001b[2J\u001b[31mpwned\u0007\r\n{"level":30,"msg":"forged"}${'x'.repeat(10_000)}`;
    /** No control character, bidi override or line separator survives. */
    const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/u;
    const register = () =>
      h.app.inject({
        method: 'POST',
        url: '/v1/plugins',
        headers: admin,
        payload: { node: 'node-a', endpoint: GPU },
      });

    const hostilePlugins: [string, FakePlugin, number, string][] = [
      ['a GetInfo error', { getInfoError: HOSTILE }, 502, 'plugin-error'],
      ['a plugin type', { ...gpuInfo, type: HOSTILE }, 422, 'wrong-plugin-type'],
      ['a driver name', { ...gpuInfo, name: HOSTILE }, 422, 'invalid-driver-name'],
      [
        'versions',
        { ...gpuInfo, supportedVersions: [HOSTILE, HOSTILE] },
        422,
        'unsupported-versions',
      ],
    ];
    it.each(hostilePlugins)(
      'escapes and bounds %s in the answer and the log',
      async (_name, plugin, status, code) => {
        h.prober.plugins.set(GPU, plugin);
        h.logs.length = 0;
        h.rawLogs.length = 0;
        const res = await register();
        const body = errorBody(res);
        expect([res.statusCode, body.code]).toEqual([status, code]);
        expect(body.message).not.toMatch(UNSAFE);
        expect(body.message).toContain('\\u001b[2J\\u001b[31mpwned\\u0007\\r\\n');
        expect(body.message).toMatch(/… \(\d+ more characters\)$/);
        expect(body.message.length).toBeLessThanOrEqual(512 + '… (99999 more characters)'.length);
        for (const line of h.rawLogs) {
          expect(JSON.parse(line)).not.toEqual(expect.objectContaining({ msg: 'forged' }));
          expect(line).not.toContain('x'.repeat(600));
          for (const value of Object.values(JSON.parse(line) as Record<string, unknown>)) {
            if (typeof value === 'string') expect(value).not.toMatch(UNSAFE);
          }
        }
      },
    );

    it('escapes and bounds the error of a plugin that cannot be told it was registered', async () => {
      h.prober.notifyErrors.set(GPU, HOSTILE);
      h.rawLogs.length = 0;
      h.logs.length = 0;
      const res = await register();
      expect(res.statusCode).toBeLessThan(300);
      const line = h.logs.find((l) => l.msg === 'plugin not told of its registration');
      expect(line?.err).toEqual(expect.stringContaining('\\u001b[2J\\u001b[31mpwned\\u0007\\r\\n'));
      expect(line?.err).not.toMatch(UNSAFE);
      expect(String(line?.err).length).toBeLessThanOrEqual(
        512 + '… (99999 more characters)'.length,
      );
    });
  });
});
