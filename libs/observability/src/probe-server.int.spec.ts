import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { createMetricsRegistry } from './metrics';
import { ProbeServer } from './probe-server';

const silent = createLogger({ service: 'test', level: 'silent' });

describe('ProbeServer', () => {
  let redisUp = false;
  const server = new ProbeServer({
    port: 0,
    registry: createMetricsRegistry('probe-test'),
    logger: silent,
    readiness: {
      redis: () => (redisUp ? Promise.resolve() : Promise.reject(new Error('connection refused'))),
      'kube-apiserver': () => Promise.resolve(),
    },
  });
  let url: string;

  beforeAll(async () => {
    url = await server.start();
  });
  afterAll(() => server.close());

  it('answers /healthz while the process lives', async () => {
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
  });

  it('is ready only when every check passes, and says which one fails', async () => {
    redisUp = false;
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toBe('redis: connection refused\n');

    redisUp = true;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it('lists what its checks report under ok', async () => {
    const other = new ProbeServer({
      port: 0,
      registry: createMetricsRegistry('probe-test'),
      logger: silent,
      readiness: {
        redis: () => Promise.resolve(),
        'kube-apiserver': () => Promise.resolve('resource.k8s.io/v1beta1 (Kubernetes v1.32.9)'),
      },
    });
    const otherUrl = await other.start();
    const res = await fetch(`${otherUrl}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(
      'ok\nkube-apiserver: resource.k8s.io/v1beta1 (Kubernetes v1.32.9)\n',
    );
    await other.close();
  });

  it('serves Prometheus metrics labelled with the service', async () => {
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toMatch(/^process_cpu_user_seconds_total\{service="probe-test"\} /m);
  });

  it('answers 404 for unknown paths', async () => {
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });

  it('stops being ready once shutdown begins', async () => {
    server.markShuttingDown();
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('shutting down\n');
  });

  it('closes idempotently', async () => {
    const other = new ProbeServer({
      port: 0,
      registry: createMetricsRegistry('x'),
      logger: silent,
    });
    await other.start();
    const first = other.close();
    expect(other.close()).toBe(first);
    await first;
  });
});

describe('createLogger', () => {
  it('never writes bearer tokens', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    const logger = createLogger({ service: 'api', destination });
    logger.info(
      { req: { headers: { authorization: 'Bearer s3cret' } }, token: 's3cret' },
      'request',
    );
    expect(lines.join('')).not.toContain('s3cret');
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ service: 'api', msg: 'request' });
  });
});
