import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { credentials } from '@grpc/grpc-js';
import { publisher } from '@slicekeeper/proto';
import { OtlpReceiver, waitFor } from '@slicekeeper/testing';
import type { ReceivedSpan } from '@slicekeeper/testing';

const ROOT = resolve(__dirname, '../../..');
const MAIN = join(ROOT, 'apps/example-driver/src/main.ts');
/** The W3C traceparent of a sampled span the receiver got. */
function traceparentOf(span: ReceivedSpan | undefined): string | undefined {
  return span === undefined ? undefined : `00-${span.traceId}-${span.spanId}-01`;
}

describe('example-driver process, traced', () => {
  let dir: string;
  let receiver: OtlpReceiver;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sk-example-traced-'));
    receiver = await OtlpReceiver.start();
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
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends each inventory (initial and each change) inside its own "publish inventory" span, exported by exit', async () => {
    const file = join(dir, 'inventory.json');
    await copyFile(join(ROOT, 'apps/example-driver/inventory/profiles/gpu.json'), file);
    const endpoint = `unix://${join(dir, 'plugin.sock')}`;
    const driver = await start({
      NODE_NAME: 'node-a',
      ENDPOINT: endpoint,
      INVENTORY_FILE: file,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
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

    expect(receiver.spans()).toEqual([]);
    await stop(driver);
    call.cancel();
    client.close();

    const published = receiver.spans().filter((span) => span.name === 'publish inventory');
    expect(published).toHaveLength(2);
    expect(traceparents).toEqual([
      traceparentOf(published[0]),
      traceparentOf(published[1]),
      traceparentOf(published[1]),
    ]);
    expect(traceparentOf(published[0])).not.toBe(traceparentOf(published[1]));
    for (const span of published) {
      expect(span).toMatchObject({
        service: 'example-driver',
        kind: 'producer',
        attributes: { 'slicekeeper.node': 'node-a', 'slicekeeper.driver': 'gpu.example.com' },
      });
      // A root: the trace starts at the driver.
      expect(span.parentSpanId).toBeUndefined();
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
