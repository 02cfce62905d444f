import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { gunzipSync } from 'node:zlib';
import { credentials } from '@grpc/grpc-js';
import { publisher } from '@slicekeeper/proto';
import { waitFor } from '@slicekeeper/testing';

const ROOT = resolve(__dirname, '../../..');
const MAIN = join(ROOT, 'apps/example-driver/src/main.ts');
/** OTLP's `Span.SpanKind` of a producer span. */
const SPAN_KIND_PRODUCER = 4;

interface OtlpValue {
  stringValue?: string;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

/** A span as the test reads it: ids in lowercase hex, string attributes by name. */
interface ReceivedSpan {
  service: string | undefined;
  name: string;
  kind: number;
  traceparent: string;
  parentSpanId: string;
  attributes: Record<string, string | undefined>;
}

/** OTLP/JSON ids are hex; a base64 one (protobuf's JSON mapping) is read as well. */
function hexId(id: string, length: number): string {
  return id.length === length ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

function attributesOf(list: { key: string; value: OtlpValue }[] = []) {
  return Object.fromEntries(list.map(({ key, value }) => [key, value.stringValue]));
}

/** An OTLP/HTTP receiver (JSON bodies, as slicekeeper exports them) keeping every span. */
function otlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      const received = JSON.parse(body.toString('utf8')) as OtlpExport;
      for (const resourceSpans of received.resourceSpans ?? []) {
        const service = attributesOf(resourceSpans.resource?.attributes)['service.name'];
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            const traceId = hexId(span.traceId, 32);
            const spanId = hexId(span.spanId, 16);
            spans.push({
              service,
              name: span.name,
              kind: span.kind,
              traceparent: `00-${traceId}-${spanId}-01`,
              parentSpanId: span.parentSpanId === undefined ? '' : hexId(span.parentSpanId, 16),
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, spans };
}

describe('example-driver process, traced', () => {
  let dir: string;
  const receiver = otlpReceiver();
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sk-example-traced-'));
    await new Promise<void>((done) => receiver.server.listen(0, '127.0.0.1', done));
  });
  /** Runs the driver with `env` and resolves once it serves (its `serving` log line). */
  async function start(env: Record<string, string>): Promise<ChildProcess> {
    const started = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=@slicekeeper/source', MAIN],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH, LOG_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    children.push(started);
    let serving = false;
    createInterface({ input: started.stdout }).on('line', (line) => {
      if ((JSON.parse(line) as { msg?: string }).msg === 'serving') serving = true;
    });
    await waitFor(() => serving, { timeoutMs: 30_000, description: 'driver serving' });
    return started;
  }

  async function stop(driver: ChildProcess): Promise<void> {
    const exited = new Promise<number | null>((done) => driver.once('exit', done));
    driver.kill('SIGTERM');
    expect(await exited).toBe(0);
  }

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await new Promise((done) => receiver.server.close(done));
    await rm(dir, { recursive: true, force: true });
  });

  it('sends each inventory (initial and each change) inside its own "publish inventory" span, exported by exit', async () => {
    const file = join(dir, 'inventory.json');
    await copyFile(join(ROOT, 'apps/example-driver/inventory/profiles/gpu.json'), file);
    const endpoint = `unix://${join(dir, 'plugin.sock')}`;
    const { port } = receiver.server.address() as AddressInfo;
    const driver = await start({
      NODE_NAME: 'node-a',
      ENDPOINT: endpoint,
      INVENTORY_FILE: file,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      // Nothing is exported on a schedule: the spans arrive only because SIGTERM flushes them.
      OTEL_BSP_SCHEDULE_DELAY: '1h',
    });

    const traceparents: string[] = [];
    const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
    const connect = () => {
      const call = client.watchResources({ nodeName: 'node-a' });
      call.on('data', (m: publisher.DriverResources) => traceparents.push(m.traceparent));
      call.on('error', () => undefined);
      return call;
    };
    let call = connect();
    await waitFor(() => traceparents.length === 1, {
      timeoutMs: 30_000,
      description: 'initial inventory',
    });
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace(/80Gi/g, '40Gi'));
    await waitFor(() => traceparents.length === 2, {
      timeoutMs: 10_000,
      description: 'file change streamed',
    });
    // A reconnect is sent the latest inventory with the traceparent it was published with.
    call.cancel();
    call = connect();
    await waitFor(() => traceparents.length === 3, { description: 'resent on reconnect' });

    expect(receiver.spans).toEqual([]);
    await stop(driver);
    call.cancel();
    client.close();

    const published = receiver.spans.filter((span) => span.name === 'publish inventory');
    expect(published).toHaveLength(2);
    expect(traceparents).toEqual([
      published[0]?.traceparent,
      published[1]?.traceparent,
      published[1]?.traceparent,
    ]);
    expect(published[0]?.traceparent).not.toBe(published[1]?.traceparent);
    for (const span of published) {
      expect(span).toMatchObject({
        service: 'example-driver',
        kind: SPAN_KIND_PRODUCER,
        parentSpanId: '',
        attributes: { 'slicekeeper.node': 'node-a', 'slicekeeper.driver': 'gpu.example.com' },
      });
    }
  }, 60_000);

  it('sends no traceparent without an OTLP endpoint', async () => {
    const endpoint = `unix://${join(dir, 'untraced.sock')}`;
    const driver = await start({ NODE_NAME: 'node-a', ENDPOINT: endpoint, PROFILE: 'gpu' });
    const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
    const received: publisher.DriverResources[] = [];
    const call = client.watchResources({ nodeName: 'node-a' });
    call.on('data', (m: publisher.DriverResources) => received.push(m));
    call.on('error', () => undefined);
    await waitFor(() => received.length === 1, { description: 'inventory' });
    expect(received[0]?.pools[0]?.devices).toHaveLength(8);
    expect(received[0]?.traceparent).toBe('');
    await stop(driver);
    call.cancel();
    client.close();
  }, 60_000);
});
