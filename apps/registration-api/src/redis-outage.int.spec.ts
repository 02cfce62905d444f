import type { InjectOptions } from 'fastify';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';
import { ApiHarness, admin } from './testing/api-harness';

/** Plugin endpoints the harness's policy admits without touching the file system or DNS. */
const GPU = '10.0.0.9:50051';
const NIC = '10.0.0.10:50051';

/**
 * Jest's timeout for a test that sends requests while Redis is down: ample for an answer, far
 * shorter than a request that waits for Redis to come back, which therefore fails the test.
 */
const NO_HANG_MS = 5000;

const requests: [string, InjectOptions][] = [
  [
    'POST /v1/plugins',
    {
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: 'node-a', endpoint: NIC },
    },
  ],
  ['GET /v1/plugins', { method: 'GET', url: '/v1/plugins', headers: admin }],
  [
    'GET /v1/plugins/{node}/{driver}',
    { method: 'GET', url: '/v1/plugins/node-a/gpu.example.com', headers: admin },
  ],
  [
    'DELETE /v1/plugins/{node}/{driver}',
    { method: 'DELETE', url: '/v1/plugins/node-a/gpu.example.com', headers: admin },
  ],
];

const unavailable = {
  code: 'redis-unavailable',
  message: expect.stringMatching(/^Redis is unavailable/) as unknown,
  details: [],
};

/**
 * Redis stops under a running API, then comes back. Requests that need Redis must fail fast with
 * 503 and the API's error body (not hang until Redis returns), the outage must be one log line
 * (not a stack per reconnect attempt on stderr), and the API must serve again once Redis is back.
 */
describe('the API while Redis is down', () => {
  let server: RedisServer;
  let h: ApiHarness;
  /** What was written to stderr or through console.error/warn while the API ran. */
  const stderr: string[] = [];
  /** Redis errors and stack frames among it (jest may write progress of its own). */
  const rawErrors = () => stderr.filter((text) => /redis|ECONNREFUSED|\n\s+at /i.test(text));
  /** Connection errors ioredis reported (one per failed reconnect attempt). */
  let connectionErrors = 0;
  const lines = (msg: string) => h.logs.filter((line) => line.msg === msg);

  beforeAll(async () => {
    // Append-only, so that the plugin registered before the outage is still there after it.
    server = await RedisServer.start({ appendOnly: true });
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('outage') }).ready();
    const registered = await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: 'node-a', endpoint: GPU },
    });
    expect(registered.statusCode).toBe(201);
    h.redis.on('error', () => {
      connectionErrors++;
    });
    const capture = (...args: unknown[]) => {
      stderr.push(args.map(String).join(' '));
    };
    jest.spyOn(console, 'error').mockImplementation(capture);
    jest.spyOn(console, 'warn').mockImplementation(capture);
    jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      capture(chunk);
      return true;
    });
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await h.close();
    await server.stop();
  });

  it(
    'answers 503 with the error body while Redis is down',
    async () => {
      await server.kill();
      // Several reconnect attempts fail first, so that "one line per outage" is put to the test.
      await waitFor(() => connectionErrors >= 3, { description: 'three failed reconnects' });
      for (const [name, request] of requests) {
        const res = await h.app.inject(request);
        expect([name, res.statusCode, res.json()]).toEqual([name, 503, unavailable]);
      }
      const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
      expect([ready.statusCode, ready.json()]).toEqual([
        503,
        { code: 'not-ready', message: 'redis: unavailable', details: [] },
      ]);
    },
    NO_HANG_MS,
  );

  it('logs the outage once, as one structured line, and nothing on stderr', () => {
    expect(connectionErrors).toBeGreaterThanOrEqual(3);
    expect(lines('redis unavailable')).toEqual([
      expect.objectContaining({
        level: 50,
        err: expect.stringContaining('ECONNREFUSED') as unknown,
      }),
    ]);
    const line = h.rawLogs.find((raw) => raw.includes('redis unavailable')) ?? '';
    expect(line).not.toMatch(/\n./);
    expect(line).not.toContain('    at ');
    expect(rawErrors()).toEqual([]);
  });

  it(
    'answers 503 to a request that was already past the rate limiter when Redis stopped',
    async () => {
      await server.restart();
      await waitFor(() => lines('redis reconnected').length > 0, {
        description: 'the reconnected line',
      });
      let reached: () => void = () => undefined;
      const probing = new Promise<void>((resolve) => {
        reached = resolve;
      });
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      h.prober.beforeGetInfo = async () => {
        reached();
        await held;
      };
      try {
        const answer = h.app.inject(requests[0]?.[1] ?? {});
        await probing;
        await server.kill();
        await waitFor(() => lines('redis unavailable').length === 2, {
          description: 'the second outage',
        });
        release();
        const res = await answer;
        expect([res.statusCode, res.json()]).toEqual([503, unavailable]);
      } finally {
        h.prober.beforeGetInfo = undefined;
        release();
      }
    },
    NO_HANG_MS,
  );

  it('serves again once Redis is back, and says so once', async () => {
    await server.restart();
    await waitFor(() => lines('redis reconnected').length === 2, {
      description: 'the second reconnected line',
    });
    const listed = await h.app.inject({ method: 'GET', url: '/v1/plugins', headers: admin });
    expect(listed.statusCode).toBe(200);
    const registered = await h.app.inject(requests[0]?.[1] ?? {});
    expect(registered.statusCode).toBe(201);
    const removed = await h.app.inject(requests[3]?.[1] ?? {});
    expect(removed.statusCode).toBe(200);
    expect((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect([lines('redis unavailable').length, lines('redis reconnected')]).toEqual([
      2,
      [expect.objectContaining({ level: 30 }), expect.objectContaining({ level: 30 })],
    ]);
    expect(rawErrors()).toEqual([]);
  });
});
