import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RegistrationClient, RegistrationError } from './registration-client';

const run = promisify(execFile);

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

const REGISTRATION = {
  node: 'node-a',
  driver: 'gpu.example.com',
  endpoint: 'unix:///run/p/gpu.sock',
  version: 'v1.ResourcePublisher',
  registeredAt: '2026-11-26T12:00:00.000Z',
  sequence: 1,
};

/** Answers every request with `answer` and records what it was asked. */
function handler(seen: Seen[], answer: () => { status: number; body: unknown }) {
  return (request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        authorization: request.headers.authorization,
        body,
      });
      const { status, body: payload } = answer();
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(payload));
    });
  };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('RegistrationClient', () => {
  let dir: string;
  const seen: Seen[] = [];
  let next: { status: number; body: unknown } = { status: 201, body: REGISTRATION };
  const server = createServer(handler(seen, () => next));
  let baseUrl: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'registration-client-'));
    baseUrl = `http://127.0.0.1:${await listen(server)}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    seen.length = 0;
    next = { status: 201, body: REGISTRATION };
  });

  it('registers with the token of its file and returns the stored registration', async () => {
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'first-token\n');
    const client = new RegistrationClient({ baseUrl, tokenFile });
    const registration = await client.register({
      node: 'node-a',
      endpoint: 'unix:///run/p/gpu.sock',
      driver: 'gpu.example.com',
    });
    expect(registration).toEqual(REGISTRATION);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/plugins' });
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({
      node: 'node-a',
      endpoint: 'unix:///run/p/gpu.sock',
      driver: 'gpu.example.com',
    });
    expect(seen[0]?.authorization).toBe('Bearer first-token');

    // A rotated projected token is used at the next request.
    await writeFile(tokenFile, 'rotated-token\n');
    await client.register({ node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' });
    expect(seen[1]?.authorization).toBe('Bearer rotated-token');
  });

  it('deregisters one endpoint with the grace asked, and a missing plugin is no error', async () => {
    const client = new RegistrationClient({ baseUrl, token: 'static-token' });
    next = { status: 404, body: { code: 'not-found', message: 'not registered', details: [] } };
    await client.deregister(
      { node: 'node-a', driver: 'gpu.example.com', endpoint: 'unix:///run/p/gpu.sock' },
      { grace: '0s' },
    );
    expect(seen[0]).toMatchObject({
      method: 'DELETE',
      url: '/v1/plugins/node-a/gpu.example.com?endpoint=unix%3A%2F%2F%2Frun%2Fp%2Fgpu.sock&grace=0s',
      authorization: 'Bearer static-token',
    });
  });

  it('reads a plugin’s status, a cluster-scoped one at _cluster, and a plugin not registered as none', async () => {
    const client = new RegistrationClient({ baseUrl, token: 'admin-token' });
    const status = { node: '', driver: 'fabric.example.com', sync: { outcome: 'synced' } };
    next = { status: 200, body: status };
    expect(await client.status({ node: '', driver: 'fabric.example.com' })).toEqual(status);
    expect(seen[0]).toMatchObject({
      method: 'GET',
      url: '/v1/plugins/_cluster/fabric.example.com',
      authorization: 'Bearer admin-token',
    });
    next = { status: 404, body: { code: 'not-found', message: 'not registered', details: [] } };
    expect(await client.status({ node: 'node-a', driver: 'gpu.example.com' })).toBeUndefined();
  });

  it.each([
    { name: 'forbidden', status: 403, retryable: false, message: /403 forbidden: not yours/ },
    { name: 'rate-limited', status: 429, retryable: true, message: /429 rate-limited/ },
    { name: 'review-outage', status: 503, retryable: true, message: /503 unavailable/ },
  ])(
    'a $status answer ($name) fails with the API’s reason',
    async ({ status, retryable, message }) => {
      const client = new RegistrationClient({ baseUrl, token: 't' });
      const code = status === 403 ? 'forbidden' : status === 429 ? 'rate-limited' : 'unavailable';
      next = { status, body: { code, message: 'not yours', details: [] } };
      const failure = client.register({ node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' });
      await expect(failure).rejects.toBeInstanceOf(RegistrationError);
      await expect(failure).rejects.toMatchObject({ retryable, status, message });
    },
  );

  it('an API that does not answer is a retryable failure', async () => {
    const closed = createServer();
    const port = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const client = new RegistrationClient({ baseUrl: `http://127.0.0.1:${port}`, token: 't' });
    await expect(
      client.register({ node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' }),
    ).rejects.toMatchObject({ retryable: true, status: undefined, message: /ECONNREFUSED/ });
  });

  describe('registering while the API is not ready', () => {
    const UNAVAILABLE = {
      status: 503,
      body: { code: 'RedisUnavailable', message: 'Redis is down' },
    };

    /** A server answering `first`, then each of `then` in turn, then the last one again. */
    async function apiAnswering(
      first: { status: number; body: unknown },
      ...then: { status: number; body: unknown }[]
    ) {
      const asked: Seen[] = [];
      let answer = first;
      const api = createServer(
        handler(asked, () => {
          const current = answer;
          answer = then.shift() ?? answer;
          return current;
        }),
      );
      const client = new RegistrationClient({ baseUrl: `http://127.0.0.1:${await listen(api)}` });
      return { asked, client, close: () => new Promise((resolve) => api.close(resolve)) };
    }

    it('tries a 503 again until the API registers the plugin', async () => {
      const api = await apiAnswering(UNAVAILABLE, UNAVAILABLE, { status: 201, body: REGISTRATION });
      try {
        await expect(
          api.client.registerRetrying(
            { node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' },
            10_000,
          ),
        ).resolves.toMatchObject({ driver: 'gpu.example.com', sequence: 1 });
        expect(api.asked).toHaveLength(3);
      } finally {
        await api.close();
      }
    });

    it('gives up at once on a refusal, and after the time given on a 503', async () => {
      const refused = await apiAnswering({
        status: 403,
        body: { code: 'Forbidden', message: 'token is for node-b' },
      });
      const unavailable = await apiAnswering(UNAVAILABLE);
      try {
        await expect(
          refused.client.registerRetrying(
            { node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' },
            10_000,
          ),
        ).rejects.toMatchObject({ retryable: false, status: 403 });
        expect(refused.asked).toHaveLength(1);
        await expect(
          unavailable.client.registerRetrying(
            { node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' },
            0,
          ),
        ).rejects.toMatchObject({ retryable: true, status: 503, message: /Redis is down/ });
        expect(unavailable.asked).toHaveLength(1);
      } finally {
        await Promise.all([refused.close(), unavailable.close()]);
      }
    });
  });

  describe('over HTTPS', () => {
    let https: Server;
    let httpsUrl: string;

    beforeAll(async () => {
      for (const name of ['ca', 'other-ca']) {
        await run('openssl', [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '1',
          '-subj',
          `/CN=${name}`,
          '-keyout',
          join(dir, `${name}.key`),
          '-out',
          join(dir, `${name}.pem`),
          '-addext',
          'subjectAltName=IP:127.0.0.1',
        ]);
      }
      https = createHttpsServer(
        {
          key: await readFile(join(dir, 'ca.key')),
          cert: await readFile(join(dir, 'ca.pem')),
        },
        handler(seen, () => next),
      );
      httpsUrl = `https://127.0.0.1:${await listen(https)}`;
    });

    afterAll(async () => {
      await new Promise((resolve) => https.close(resolve));
    });

    it('trusts the API’s certificate through the configured CA', async () => {
      const client = new RegistrationClient({
        baseUrl: httpsUrl,
        token: 't',
        caFile: join(dir, 'ca.pem'),
      });
      await expect(
        client.register({ node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' }),
      ).resolves.toEqual(REGISTRATION);
    });

    it.each([
      {
        name: 'another-ca-file',
        caFile: 'other-ca.pem',
        trustedBy: () => join(dir, 'other-ca.pem'),
      },
      {
        name: 'the-system-cas',
        caFile: undefined,
        trustedBy: () => 'the system CAs (set REGISTRATION_API_CA_FILE to the CA that signed it)',
      },
    ])(
      'refuses an API whose certificate $name did not sign, saying so, sending no token',
      async ({ caFile, trustedBy }) => {
        const client = new RegistrationClient({
          baseUrl: httpsUrl,
          token: 'secret',
          ...(caFile === undefined ? {} : { caFile: join(dir, caFile) }),
        });
        await expect(
          client.register({ node: 'node-a', endpoint: 'unix:///run/p/gpu.sock' }),
        ).rejects.toMatchObject({
          message: `POST /v1/plugins: the registration API's certificate is not trusted by ${trustedBy()}: DEPTH_ZERO_SELF_SIGNED_CERT`,
          retryable: true,
        });
        expect(seen).toEqual([]);
      },
    );
  });
});
