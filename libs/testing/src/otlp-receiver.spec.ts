import { gzipSync } from 'node:zlib';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { repoRoot } from '@slicekeeper/local-stack';
import { OtlpReceiver } from './otlp-receiver';

const run = promisify(execFile);

/**
 * What a service does when tracing is on, in a process of its own (the exporter loads node:http
 * with a dynamic import, which jest's module system cannot run): starts tracing to `url` as
 * runService does, makes a CONSUMER span that is the child of a driver's traceparent with a
 * link, and a failed CLIENT span inside it, then shuts down (exporting both). Resolves with the
 * two span ids.
 */
async function exportFromAService(url: string): Promise<{ parent: string; child: string }> {
  const script = `
    const t = require('@slicekeeper/telemetry');
    const started = t.startTracing({
      url: process.argv[1] + '/v1/traces', headers: {}, timeoutMs: 5000,
      serviceName: 'plugin-watcher', resourceAttributes: {}, sampler: 'always_on', samplerRatio: 1,
      scheduleDelayMs: 10, maxQueueSize: 100, maxExportBatchSize: 100,
    });
    const ids = {};
    started.tracing.inSpan('receive inventory', {
      kind: t.SpanKind.CONSUMER,
      parent: t.parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
      links: t.linksTo(['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01']),
      attributes: { 'slicekeeper.node': 'node-a', 'slicekeeper.snapshot_generation': 7 },
    }, async (span) => {
      ids.parent = span.spanContext().spanId;
      const put = started.tracing.start('PUT', { kind: t.SpanKind.CLIENT });
      t.failSpan(put, new Error('conflict'));
      put.end();
      ids.child = put.spanContext().spanId;
    }).then(() => started.shutdown()).then(() => process.stdout.write(JSON.stringify(ids)));`;
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--conditions=@slicekeeper/source', '-e', script, url],
    { cwd: repoRoot, timeout: 60_000 },
  );
  return JSON.parse(stdout) as { parent: string; child: string };
}

function post(
  receiver: OtlpReceiver,
  body: string | Buffer,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  path = '/v1/traces',
): Promise<Response> {
  return fetch(new URL(path, receiver.url), { method: 'POST', headers, body });
}

describe('OtlpReceiver', () => {
  let receiver: OtlpReceiver;

  beforeEach(async () => {
    receiver = await OtlpReceiver.start();
  });

  afterEach(async () => {
    await receiver.close();
  });

  it('takes the spans a service exports (the OTLP/HTTP JSON exporter), ids in hex, attributes plain', async () => {
    const { parent, child } = await exportFromAService(receiver.url);

    const spans = await receiver.waitFor('both spans', (s) => (s.length === 2 ? s : undefined));
    const receive = spans.find((s) => s.name === 'receive inventory');
    const put = spans.find((s) => s.name === 'PUT');
    expect(receive).toMatchObject({
      service: 'plugin-watcher',
      kind: 'consumer',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: parent,
      parentSpanId: '00f067aa0ba902b7',
      attributes: { 'slicekeeper.node': 'node-a', 'slicekeeper.snapshot_generation': 7 },
      links: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' }],
      status: { code: 'unset' },
    });
    expect(put).toMatchObject({
      kind: 'client',
      spanId: child,
      parentSpanId: parent,
      status: { code: 'error', message: 'conflict' },
      events: ['exception'],
    });
    expect(put?.endTimeUnixNano).toBeGreaterThanOrEqual(put?.startTimeUnixNano ?? 0n);
    expect(receiver.traces().get('4bf92f3577b34da6a3ce929d0e0e4736')).toHaveLength(2);
    expect(receiver.countsByName().get('plugin-watcher PUT')).toBe(1);
  });

  it.each([
    ['not JSON', '{"resourceSpans":', /body is not JSON/],
    [
      'a span id of 8 digits',
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
                    spanId: '00f067aa',
                    name: 'x',
                    startTimeUnixNano: '1',
                    endTimeUnixNano: '2',
                  },
                ],
              },
            ],
          },
        ],
      }),
      /resourceSpans\.0\.scopeSpans\.0\.spans\.0\.spanId: must be 16 hex digits/,
    ],
    ['resourceSpans not a list', '{"resourceSpans":{}}', /resourceSpans: /],
  ])('answers a body that is %s with 400 naming the problem', async (_, body, message) => {
    const response = await post(receiver, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toMatch(message);
    expect(receiver.requests).toEqual({ accepted: 0, rejected: 1 });
    expect(receiver.spans()).toEqual([]);
  });

  it('answers 200 {} to a gzip body, and refuses other paths and content types', async () => {
    const ok = await post(receiver, gzipSync('{"resourceSpans":[]}'), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({});
    expect((await post(receiver, '{}', { 'content-type': 'application/x-protobuf' })).status).toBe(
      415,
    );
    expect((await post(receiver, '{}', undefined, '/v1/metrics')).status).toBe(404);
  });

  it('only counts spans when told to keep none', async () => {
    const counting = await OtlpReceiver.start({ keep: 'count' });
    try {
      const body = JSON.stringify({
        resourceSpans: [
          {
            resource: {
              attributes: [{ key: 'service.name', value: { stringValue: 'slice-syncer' } }],
            },
            scopeSpans: [
              {
                spans: ['plan', 'plan', 'PUT'].map((name, i) => ({
                  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
                  spanId: `00f067aa0ba902b${i}`,
                  name,
                  kind: 1,
                  startTimeUnixNano: '1',
                  endTimeUnixNano: '2',
                })),
              },
            ],
          },
        ],
      });
      expect((await post(counting, body)).status).toBe(200);
      expect(counting.spanCount).toBe(3);
      expect(Object.fromEntries(counting.countsByName())).toEqual({
        'slice-syncer plan': 2,
        'slice-syncer PUT': 1,
      });
      expect(counting.spans()).toEqual([]);
    } finally {
      await counting.close();
    }
  });
});
