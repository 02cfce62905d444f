import { credentials } from '@grpc/grpc-js';
import type { DriverInventory } from '@slicekeeper/contracts';
import { publisher } from '@slicekeeper/proto';
import { formatTraceparent } from '@slicekeeper/telemetry';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import type { RecordedTracing } from '@slicekeeper/telemetry/testing';
import { waitFor } from '@slicekeeper/testing';
import { DriverServer } from './driver-server';

const GIVEN = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function gpus(count: number): DriverInventory {
  return {
    pools: [
      {
        name: 'pool',
        scope: { kind: 'node' },
        devices: Array.from({ length: count }, (_, i) => ({ name: `gpu-${i}` })),
      },
    ],
  };
}

describe('DriverServer traceparent', () => {
  let recorded: RecordedTracing;
  const servers: DriverServer[] = [];
  const closers: (() => void)[] = [];
  beforeAll(() => {
    recorded = recordedTracing('driver');
  });
  afterAll(async () => {
    await recorded.shutdown();
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function serve(inventory?: DriverInventory): Promise<DriverServer> {
    const server = new DriverServer({
      driverName: 'gpu.example.com',
      endpoint: '127.0.0.1:0',
      ...(inventory === undefined ? {} : { inventory }),
    });
    servers.push(server);
    await server.start();
    return server;
  }

  /**
   * A WatchResources stream, as the watcher opens one, once the server has it; records each
   * message's traceparent.
   */
  async function open(server: DriverServer, nodeName: string) {
    const calls = server.watchCalls;
    const client = new publisher.ResourcePublisherClient(
      server.endpoint,
      credentials.createInsecure(),
    );
    const traceparents: string[] = [];
    const devices: number[] = [];
    const call = client.watchResources({ nodeName });
    call.on('data', (m: publisher.DriverResources) => {
      traceparents.push(m.traceparent);
      devices.push(m.pools.reduce((sum, pool) => sum + pool.devices.length, 0));
    });
    call.on('error', () => undefined);
    const close = () => {
      call.cancel();
      client.close();
    };
    closers.push(close);
    await waitFor(() => server.watchCalls > calls, { description: 'stream open' });
    return { traceparents, devices, close };
  }

  /** Publishes inside a span of the driver's; resolves with that span's traceparent. */
  async function publishInSpan(
    server: DriverServer,
    inventory: DriverInventory,
    nodeName?: string,
  ): Promise<string> {
    return recorded.tracing.inSpan('publish inventory', {}, (span) => {
      server.publish(inventory, nodeName);
      return Promise.resolve(formatTraceparent(span.spanContext()));
    });
  }

  it('sends the traceparent of the span a publish is made in, and none outside a span', async () => {
    const server = await serve();
    const stream = await open(server, 'node-a');
    const inSpan = await publishInSpan(server, gpus(1));
    await waitFor(() => stream.traceparents.length === 1);
    server.publish(gpus(2));
    await waitFor(() => stream.traceparents.length === 2);
    expect(stream.traceparents).toEqual([inSpan, '']);
    expect(inSpan).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(
      recorded.named('publish inventory').map((s) => formatTraceparent(s.spanContext())),
    ).toContain(inSpan);
  });

  it('sends a stream opened after the publish (a reconnect) the same traceparent', async () => {
    const server = await serve();
    const first = await open(server, 'node-a');
    const shared = await publishInSpan(server, gpus(1));
    const own = await publishInSpan(server, gpus(3), 'node-b');
    await waitFor(() => first.traceparents.length === 1);
    first.close();
    const again = await open(server, 'node-a');
    const nodeB = await open(server, 'node-b');
    await waitFor(() => again.traceparents.length === 1 && nodeB.traceparents.length === 1);
    expect(first.traceparents).toEqual([shared]);
    expect(again.traceparents).toEqual([shared]);
    expect(nodeB.traceparents).toEqual([own]);
    expect(own).not.toBe(shared);
  });

  it('sends the initial inventory with the span active when the server was built', async () => {
    let expected = '';
    const server = await recorded.tracing.inSpan('start driver', {}, (span) => {
      expected = formatTraceparent(span.spanContext());
      return serve(gpus(1));
    });
    const stream = await open(server, 'node-a');
    await waitFor(() => stream.traceparents.length === 1);
    expect(stream.traceparents).toEqual([expected]);
  });

  it('sends an explicit traceparent as given, also inside another span', async () => {
    const server = await serve();
    const stream = await open(server, 'node-a');
    await recorded.tracing.inSpan('other', {}, () => {
      server.publish(gpus(1), { traceparent: GIVEN });
      return Promise.resolve();
    });
    server.publish(gpus(2), { nodeName: 'node-a', traceparent: '' });
    await waitFor(() => stream.traceparents.length === 2);
    expect(stream.traceparents).toEqual([GIVEN, '']);
  });

  it.each([
    { name: 'uppercase', traceparent: GIVEN.toUpperCase() },
    { name: 'version-ff', traceparent: GIVEN.replace(/^00/, 'ff') },
    { name: 'zero-trace-id', traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` },
    {
      name: 'zero-span-id',
      traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
    },
    { name: 'trace-id-only', traceparent: '4bf92f3577b34da6a3ce929d0e0e4736' },
  ])(
    'refuses an explicit traceparent that is not one ($name) and sends nothing',
    async ({ traceparent }) => {
      const server = await serve(gpus(1));
      const stream = await open(server, 'node-a');
      await waitFor(() => stream.traceparents.length === 1);
      expect(() => {
        server.publish(gpus(2), { traceparent });
      }).toThrow(
        `publish: traceparent "${traceparent}": must be a W3C traceparent: 00-<32 lowercase hex trace id>-<16 lowercase hex span id>-<2 hex flags>, ids not all zero`,
      );
      server.publish(gpus(3));
      await waitFor(() => stream.traceparents.length === 2);
      expect(stream.devices).toEqual([1, 3]);
      expect(stream.traceparents).toEqual(['', '']);
    },
  );
});
