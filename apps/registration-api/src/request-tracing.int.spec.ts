import { request as httpRequest } from 'node:http';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { SYNC_QUEUE_NAME } from '@slicekeeper/contracts';
import type { SyncStatus } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import { SpanKind, SpanStatusCode } from '@slicekeeper/telemetry';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import type { RecordedTracing } from '@slicekeeper/telemetry/testing';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ApiHarness, SOCKET_DIR, admin } from './testing/api-harness';
import { GET_INFO_METHOD, NOTIFY_METHOD } from './traced-prober';

const GPU = `unix://${SOCKET_DIR}/gpu.sock`;
const DRIVER = 'gpu.example.com';
/** A caller's span: a driver agent that registers inside a trace of its own. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

function only(spans: ReadableSpan[], name: string): ReadableSpan {
  const named = spans.filter((span) => span.name === name);
  if (named.length !== 1) {
    throw new Error(
      `${named.length} spans named "${name}": ${spans.map((s) => s.name).join(', ')}`,
    );
  }
  return named[0] as ReadableSpan;
}

/** Who a span's parent is: `trace id/span id`. */
function parentOf(span: ReadableSpan): string | undefined {
  const parent = span.parentSpanContext;
  return parent === undefined ? undefined : `${parent.traceId}/${parent.spanId}`;
}

function idOf(span: ReadableSpan): string {
  return `${span.spanContext().traceId}/${span.spanContext().spanId}`;
}

describe('the API with tracing on', () => {
  let server: RedisServer;
  let recorded: RecordedTracing;
  let h: ApiHarness;

  beforeAll(async () => {
    server = await RedisServer.start();
    recorded = recordedTracing('registration-api');
  });
  afterAll(async () => {
    await recorded.shutdown();
    await server.stop();
  });
  beforeEach(async () => {
    recorded.reset();
    h = await new ApiHarness({
      redisUrl: server.url,
      prefix: uniquePrefix('traced'),
      tracing: recorded.tracing,
    }).ready();
  });
  afterEach(() => h.close());

  it("traces a registration under the caller's traceparent: the request, its calls to the plugin and the sync it asks for", async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: { ...admin, traceparent: TRACEPARENT },
      payload: { node: 'node-a', endpoint: GPU },
    });
    expect(res.statusCode).toBe(201);

    const spans = recorded.spans();
    const request = only(spans, 'POST /v1/plugins');
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(parentOf(request)).toBe(`${CALLER_TRACE}/${CALLER_SPAN}`);
    expect(request.status.code).toBe(SpanStatusCode.UNSET);
    expect(request.attributes).toEqual({
      'http.request.method': 'POST',
      'http.route': '/v1/plugins',
      'url.scheme': 'http',
      'url.path': '/v1/plugins',
      'server.address': 'localhost',
      'server.port': 80,
      'http.response.status_code': 201,
    });

    const getInfo = only(spans, GET_INFO_METHOD);
    const notify = only(spans, NOTIFY_METHOD);
    const publish = only(spans, 'publish sync');
    for (const child of [getInfo, notify, publish]) expect(parentOf(child)).toBe(idOf(request));
    expect([getInfo.kind, notify.kind, publish.kind]).toEqual([
      SpanKind.CLIENT,
      SpanKind.CLIENT,
      SpanKind.PRODUCER,
    ]);
    expect(getInfo.attributes).toEqual({
      'rpc.system.name': 'grpc',
      'rpc.method': GET_INFO_METHOD,
      'server.address': `${SOCKET_DIR}/gpu.sock`,
      'network.transport': 'unix',
      'rpc.status_code': 'OK',
      'slicekeeper.driver': DRIVER,
    });
    expect(notify.attributes).toMatchObject({
      'rpc.method': NOTIFY_METHOD,
      'slicekeeper.outcome': 'registered',
      'rpc.status_code': 'OK',
    });
    expect(publish.attributes).toEqual({
      'messaging.system': 'bullmq',
      'messaging.destination.name': SYNC_QUEUE_NAME,
      'messaging.operation.type': 'send',
      'slicekeeper.node': 'node-a',
      'slicekeeper.driver': DRIVER,
    });
  });

  it("writes the request's log lines with its trace and span ids, the body sent apart", async () => {
    // Over a socket, the body sent after the server's 100 Continue: it arrives in socket events
    // of its own, after the span began, and the handler still runs inside the span.
    const url = new URL(await h.app.listen({ host: '127.0.0.1', port: 0 }));
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const sent = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: '/v1/plugins',
          headers: {
            ...admin,
            traceparent: TRACEPARENT,
            'content-type': 'application/json',
            expect: '100-continue',
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      sent.on('error', reject);
      sent.on('continue', () => {
        sent.end(JSON.stringify({ node: 'node-a', endpoint: GPU }));
      });
    });
    expect(status).toBe(201);
    const request = only(recorded.spans(), 'POST /v1/plugins');
    const registered = h.logs.find((line) => line['msg'] === 'registered');
    expect(registered).toMatchObject({
      trace_id: CALLER_TRACE,
      span_id: request.spanContext().spanId,
    });
  });

  it('starts a trace of its own without a traceparent, and ignores one that does not parse', async () => {
    for (const headers of [admin, { ...admin, traceparent: '00-not-a-trace-01' }]) {
      recorded.reset();
      const res = await h.app.inject({ method: 'GET', url: '/v1/plugins', headers });
      expect(res.statusCode).toBe(200);
      const request = only(recorded.spans(), 'GET /v1/plugins');
      expect(parentOf(request)).toBeUndefined();
      expect(request.spanContext().traceId).not.toBe(CALLER_TRACE);
    }
  });

  it('marks a 5xx answer failed, with the plugin call that failed, and leaves a 4xx unset', async () => {
    h.prober.plugins.set(GPU, 'unreachable');
    const unreachable = await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: 'node-a', endpoint: GPU },
    });
    expect(unreachable.statusCode).toBe(502);
    const failed = only(recorded.spans(), 'POST /v1/plugins');
    expect(failed.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: `dial ${GPU}: refused`,
    });
    expect(failed.attributes).toMatchObject({
      'http.response.status_code': 502,
      'error.type': '502',
    });
    const dial = only(recorded.spans(), GET_INFO_METHOD);
    expect(dial.status.code).toBe(SpanStatusCode.ERROR);
    expect(dial.attributes['error.type']).toBe('plugin-unreachable');
    expect(parentOf(dial)).toBe(idOf(failed));

    recorded.reset();
    const missing = await h.app.inject({
      method: 'GET',
      url: `/v1/plugins/node-a/${DRIVER}?verbose=1`,
      headers: admin,
    });
    expect(missing.statusCode).toBe(404);
    const notFound = only(recorded.spans(), 'GET /v1/plugins/:node/:driver');
    expect(notFound.status.code).toBe(SpanStatusCode.UNSET);
    expect(notFound.attributes).toMatchObject({
      'http.response.status_code': 404,
      'url.path': `/v1/plugins/node-a/${DRIVER}`,
      'url.query': 'verbose=1',
    });
    expect(notFound.attributes['error.type']).toBeUndefined();
  });

  it('names a request no route matched by its method alone, without a route', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v2/nothing', headers: admin });
    expect(res.statusCode).toBe(404);
    const request = only(recorded.spans(), 'GET');
    expect(request.attributes['http.route']).toBeUndefined();
    expect(request.attributes['url.path']).toBe('/v2/nothing');
  });

  it('makes no span for the probes kubelet and Prometheus call', async () => {
    for (const url of ['/healthz', '/readyz', '/metrics']) {
      expect((await h.app.inject({ method: 'GET', url })).statusCode).toBe(200);
    }
    expect(recorded.spans()).toEqual([]);
  });

  it("answers a key's status with the trace id of its last sync", async () => {
    await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: 'node-a', endpoint: GPU },
    });
    const sync: SyncStatus = {
      outcome: 'synced',
      snapshotGeneration: 1,
      slices: [],
      pools: [],
      attempt: 1,
      startedAt: '2026-11-27T01:00:00.000Z',
      finishedAt: '2026-11-27T01:00:00.050Z',
      writes: 1,
      traceId: CALLER_TRACE,
    };
    await h.redis.set(
      redisKeys(h.prefix).syncStatus({ node: 'node-a', driver: DRIVER }),
      JSON.stringify(sync),
    );
    const one = await h.app.inject({
      method: 'GET',
      url: `/v1/plugins/node-a/${DRIVER}`,
      headers: admin,
    });
    const listed = await h.app.inject({ method: 'GET', url: '/v1/plugins', headers: admin });
    expect(one.json<{ sync: SyncStatus }>().sync.traceId).toBe(CALLER_TRACE);
    expect(listed.json<{ items: { sync: SyncStatus }[] }>().items[0]?.sync.traceId).toBe(
      CALLER_TRACE,
    );
  });
});

describe('the API with tracing off', () => {
  it('registers no hook and makes no span, though a tracer provider is installed', async () => {
    const server = await RedisServer.start();
    const recorded = recordedTracing('registration-api');
    const h = await new ApiHarness({
      redisUrl: server.url,
      prefix: uniquePrefix('untraced'),
    }).ready();
    try {
      const res = await h.app.inject({
        method: 'POST',
        url: '/v1/plugins',
        headers: { ...admin, traceparent: TRACEPARENT },
        payload: { node: 'node-a', endpoint: GPU },
      });
      expect(res.statusCode).toBe(201);
      expect(h.app.hasPlugin('request-spans')).toBe(false);
      expect(recorded.spans()).toEqual([]);
      expect(h.logs.find((line) => line['msg'] === 'registered')).not.toHaveProperty('trace_id');
    } finally {
      await h.close();
      await recorded.shutdown();
      await server.stop();
    }
  });
});
