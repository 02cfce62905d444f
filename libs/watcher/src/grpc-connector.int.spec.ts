import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { EndpointPolicy } from '@slicekeeper/admission';
import type { DriverInventory, SyncStatus } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import type { SlicekeeperError } from '@slicekeeper/errors';
import { fromDriverInventory, publisher } from '@slicekeeper/proto';
import type { PublishFeedback } from '@slicekeeper/proto';
import { ManualClock } from '@slicekeeper/time/testing';
import { waitFor } from '@slicekeeper/testing';
import { createGrpcConnector } from './grpc-connector';
import type { DialPolicy, GrpcConnectorOptions } from './grpc-connector';
import { PluginStream } from './plugin-stream';
import type { PublisherConnector } from './publisher-connector';
import { gpus, registration, silentLogger } from './testing/fakes';
import { blackHoleRelay, silentServer } from './testing/raw-grpc-server';

type Outcome =
  | { kind: 'message'; inventory: DriverInventory }
  | { kind: 'rejected'; problem: string }
  | { kind: 'end' }
  | { kind: 'error'; error: SlicekeeperError };

/** Opens a stream; `outcome` is the first thing it reports. */
function watch(connector: PublisherConnector, endpoint: string) {
  let settle: (outcome: Outcome) => void = () => undefined;
  const outcome = new Promise<Outcome>((resolve) => {
    settle = resolve;
  });
  const stream = connector(
    { endpoint, nodeName: 'node-a' },
    {
      message: (inventory) => {
        settle({ kind: 'message', inventory });
      },
      rejected: ({ problem }) => {
        settle({ kind: 'rejected', problem });
      },
      end: () => {
        settle({ kind: 'end' });
      },
      error: (error) => {
        settle({ kind: 'error', error });
      },
    },
  );
  return { stream, outcome };
}

/** A server that counts connections and answers none: what a hostile endpoint wants reached. */
async function target(listen: (server: Server) => void) {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => {
    server.once('listening', resolve);
    listen(server);
  });
  return {
    server,
    connections: () => connections,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * A PluginStream on the connector, both on one manual clock, closed by `closers`; `until`
 * resolves once its condition holds after some state change.
 */
function supervised(
  endpoint: string,
  clock: ManualClock,
  options: GrpcConnectorOptions & { backoffMs: number; closers: (() => Promise<unknown>)[] },
) {
  const { backoffMs, closers, ...connector } = options;
  const waiters: (() => void)[] = [];
  const stream = new PluginStream({
    registration: registration(endpoint, 1),
    connector: createGrpcConnector({ ...connector, clock }),
    clock,
    backoff: { initialMs: backoffMs, maxMs: backoffMs, jitter: 0 },
    logger: silentLogger,
    onChange: () => {
      for (const wake of waiters.splice(0)) wake();
    },
  });
  closers.push(() => {
    stream.close('test over');
    return Promise.resolve();
  });
  const until = async (holds: () => boolean) => {
    while (!holds()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { stream, until };
}

describe('createGrpcConnector with an endpoint policy', () => {
  let root: string;
  let sockets: string;
  const closers: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sk-connector-'));
    sockets = join(root, 'plugins');
    await mkdir(sockets);
    await mkdir(join(root, 'host'));
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function driver(endpoint: string): Promise<DriverServer> {
    const plugin = new DriverServer({
      driverName: 'gpu.example.com',
      endpoint,
      inventory: gpus(2),
    });
    await plugin.start();
    closers.push(() => plugin.close());
    return plugin;
  }

  it('dials the address the name resolved to, and resolves it again at every dial', async () => {
    const plugin = await driver('127.0.0.1:0');
    const port = plugin.endpoint.split(':')[1] ?? '';
    const lookups: string[] = [];
    const policy = new EndpointPolicy({
      tcpHosts: ['gpu.plugins.test'],
      allowLoopback: true,
      lookup: (host) => {
        lookups.push(host);
        return Promise.resolve(['127.0.0.1']);
      },
    });
    const connector = createGrpcConnector({ policy });
    for (const attempt of [1, 2]) {
      const { stream, outcome } = watch(connector, `gpu.plugins.test:${port}`);
      await expect(outcome).resolves.toMatchObject({ kind: 'message' });
      stream.cancel();
      expect(lookups).toHaveLength(attempt);
    }
    expect(plugin.watchCalls).toBe(2);
  });

  it('refuses a name that rebinds to a forbidden address at a later dial, never connecting to it', async () => {
    const loopback = await target((server) => server.listen(0, '127.0.0.1'));
    closers.push(loopback.close);
    const port = (loopback.server.address() as AddressInfo).port;
    const endpoint = `gpu.plugins.test:${port}`;
    // First an allowed address (TEST-NET-1: nothing answers there), then the host itself.
    const answers = [['192.0.2.1'], ['127.0.0.1']];
    const policy = new EndpointPolicy({
      tcpHosts: ['gpu.plugins.test'],
      lookup: () => Promise.resolve(answers.shift() ?? []),
    });
    const admitted: string[] = [];
    let firstAdmitted: () => void = () => undefined;
    const admittedOnce = new Promise<void>((resolve) => {
      firstAdmitted = resolve;
    });
    const spy: DialPolicy = {
      admit: async (registered) => {
        const checked = await policy.admit(registered);
        admitted.push(checked.target);
        firstAdmitted();
        return checked;
      },
    };
    const connector = createGrpcConnector({ policy: spy });

    const first = watch(connector, endpoint);
    await admittedOnce;
    first.stream.cancel();
    expect(admitted).toEqual([`192.0.2.1:${port}`]);

    const second = watch(connector, endpoint);
    const outcome = await second.outcome;
    expect(outcome).toMatchObject({
      kind: 'error',
      error: {
        kind: 'terminal',
        code: 'endpoint-forbidden',
        message: `endpoint policy refused the dial: endpoint "${endpoint}": "gpu.plugins.test" resolves to 127.0.0.1: loopback addresses are not allowed`,
      },
    });
    expect(admitted).toHaveLength(1);
    await loopback.close();
    expect(loopback.connections()).toBe(0);
  });

  describe('unix sockets', () => {
    const policy = () => new EndpointPolicy({ socketDirectories: [sockets] });

    it.each([
      ['a symlinked socket', 'evil.sock', 'docker.sock'],
      ['a socket in a symlinked directory', 'evil-dir/docker.sock', 'docker.sock'],
    ])('refuses %s that leads outside the directories', async (_name, path) => {
      const outside = await target((server) => server.listen(join(root, 'host', 'docker.sock')));
      closers.push(outside.close);
      closers.push(() => rm(join(sockets, path.split('/')[0] ?? ''), { force: true }));
      if (path.includes('/')) await symlink(join(root, 'host'), join(sockets, 'evil-dir'));
      else await symlink(join(root, 'host', 'docker.sock'), join(sockets, path));

      const endpoint = `unix://${join(sockets, path)}`;
      const { outcome } = watch(createGrpcConnector({ policy: policy() }), endpoint);
      expect(await outcome).toMatchObject({
        kind: 'error',
        error: {
          code: 'endpoint-forbidden',
          message: expect.stringMatching(
            /^endpoint policy refused the dial: endpoint ".*": the socket is really .*\/host\/docker\.sock, outside the allowed directories/,
          ) as unknown,
        },
      });
      expect(outside.connections()).toBe(0);
    });

    it('checks the socket again at every dial: a socket swapped for a symlink is refused, the stream backs off', async () => {
      const path = join(sockets, 'gpu.sock');
      const plugin = await driver(`unix://${path}`);
      const outside = await target((server) => server.listen(join(root, 'host', 'other.sock')));
      closers.push(outside.close);
      const clock = new ManualClock();
      const { stream, until } = supervised(`unix://${path}`, clock, {
        policy: policy(),
        backoffMs: 1000,
        closers,
      });
      stream.start();
      await until(() => stream.state === 'streaming');
      // The plugin goes away and its socket path becomes a symlink to another socket on the
      // host before the reconnect: the reconnect must not follow it.
      await plugin.close();
      await until(() => stream.state === 'backoff');
      await symlink(join(root, 'host', 'other.sock'), path);
      closers.push(() => rm(path, { force: true }));
      await clock.advance(1000);
      await until(() => stream.state === 'backoff' && stream.reconnects === 2);

      expect(stream.error).toMatch(
        /^endpoint policy refused the dial: endpoint ".*gpu\.sock": the socket is really .*\/host\/other\.sock, outside the allowed directories/,
      );
      expect(outside.connections()).toBe(0);
    });
  });
});

describe('createGrpcConnector connections', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A plugin serving every node behind a TCP relay that counts the connections made to it. */
  async function relayedPlugin() {
    const plugin = new DriverServer({ driverName: 'gpu.example.com', endpoint: '127.0.0.1:0' });
    plugin.publish(gpus(1), 'node-a');
    plugin.publish(gpus(2), 'node-b');
    const [host = '', port = ''] = (await plugin.start()).split(':');
    closers.push(() => plugin.close());
    const open = new Set<Socket>();
    let connections = 0;
    const relay = createServer((socket) => {
      connections++;
      open.add(socket);
      const upstream = connect(Number(port), host);
      socket.pipe(upstream).pipe(socket);
      const drop = () => {
        open.delete(socket);
        socket.destroy();
        upstream.destroy();
      };
      socket.on('close', drop).on('error', drop);
      upstream.on('close', drop).on('error', drop);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => relay.close(resolve)));
    const { port: relayPort } = relay.address() as AddressInfo;
    return {
      plugin,
      endpoint: `127.0.0.1:${relayPort}`,
      connections: () => connections,
      open: () => open.size,
    };
  }

  function stream(connector: PublisherConnector, endpoint: string, nodeName: string) {
    const received: DriverInventory[] = [];
    const failures: SlicekeeperError[] = [];
    const call = connector(
      { endpoint, nodeName },
      {
        message: (inventory) => {
          received.push(inventory);
        },
        rejected: () => undefined,
        end: () => undefined,
        error: (error) => {
          failures.push(error);
        },
      },
    );
    return { call, received, failures };
  }

  it('streams for several keys of one endpoint over one connection, closed with the last stream', async () => {
    const relayed = await relayedPlugin();
    const connector = createGrpcConnector();
    const a = stream(connector, relayed.endpoint, 'node-a');
    const b = stream(connector, relayed.endpoint, 'node-b');
    await waitFor(() => a.received.length > 0 && b.received.length > 0, {
      description: 'both streams',
    });

    expect(a.received[0]).toEqual(gpus(1));
    expect(b.received[0]).toEqual(gpus(2));
    expect(relayed.connections()).toBe(1);
    a.call.cancel();
    await waitFor(() => relayed.plugin.openStreams === 1, { description: 'the first stream over' });
    expect(relayed.open()).toBe(1);
    b.call.cancel();
    await waitFor(() => relayed.open() === 0, { description: 'the connection closed' });
  });

  it('dials a fresh connection after a stream failed, as a private channel would', async () => {
    const relayed = await relayedPlugin();
    const connector = createGrpcConnector();
    const a = stream(connector, relayed.endpoint, 'node-a');
    await waitFor(() => a.received.length > 0, { description: 'the stream' });
    relayed.plugin.failStreams();
    await waitFor(() => a.failures.length > 0, { description: 'the failure' });
    const again = stream(connector, relayed.endpoint, 'node-a');
    await waitFor(() => again.received.length > 0, { description: 'the stream again' });

    expect(a.failures[0]?.code).toBe('unavailable');
    expect(relayed.connections()).toBe(2);
    again.call.cancel();
    await waitFor(() => relayed.open() === 0, { description: 'every connection closed' });
  });
});

describe('createGrpcConnector feedback (NotifyPublishStatus)', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const synced: SyncStatus = {
    outcome: 'synced',
    snapshotGeneration: 4,
    slices: ['00000-gpu.example.com-node-a-x7k2p'],
    pools: [],
    attempt: 1,
    startedAt: '2026-01-02T03:04:05.000Z',
    finishedAt: '2026-01-02T03:04:05.100Z',
    writes: 1,
  };

  async function streaming(options: { servePublishStatus?: boolean } = {}) {
    const feedback: PublishFeedback[] = [];
    const plugin = new DriverServer({
      driverName: 'gpu.example.com',
      endpoint: '127.0.0.1:0',
      inventory: gpus(2),
      onFeedback: (f) => feedback.push(f),
      ...options,
    });
    const endpoint = await plugin.start();
    closers.push(() => plugin.close());
    const { stream, outcome } = watch(createGrpcConnector({ notifyTimeoutMs: 5000 }), endpoint);
    await expect(outcome).resolves.toMatchObject({ kind: 'message' });
    closers.push(() => {
      stream.cancel();
      return Promise.resolve();
    });
    return { plugin, stream, feedback };
  }

  it('tells the plugin an outcome over the open stream', async () => {
    const { plugin, stream, feedback } = await streaming();

    await expect(stream.notify('node-a', synced)).resolves.toBe('delivered');
    expect(feedback).toMatchObject([
      { nodeName: 'node-a', outcome: 'synced', snapshotGeneration: 4 },
    ]);
    expect(plugin.openStreams).toBe(1);
  });

  it('answers unimplemented for a plugin without the RPC', async () => {
    const { stream } = await streaming({ servePublishStatus: false });

    await expect(stream.notify('node-a', synced)).resolves.toBe('unimplemented');
  });

  it('answers failed once the stream is over, without a call', async () => {
    const { stream, feedback } = await streaming();
    stream.cancel();

    await expect(stream.notify('node-a', synced)).resolves.toBe('failed');
    expect(feedback).toEqual([]);
  });

  it('gives up on a call not answered within notifyTimeoutMs', async () => {
    const server = new GrpcServer();
    server.addService(publisher.ResourcePublisherService, {
      watchResources: (call: ServerWritableStream<unknown, publisher.DriverResources>) => {
        call.write(fromDriverInventory(gpus(1)));
      },
      // Never answers.
      notifyPublishStatus: () => undefined,
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => {
        if (error === null) resolve(bound);
        else reject(error);
      });
    });
    closers.push(() => {
      server.forceShutdown();
      return Promise.resolve();
    });
    const { stream, outcome } = watch(
      createGrpcConnector({ notifyTimeoutMs: 50 }),
      `127.0.0.1:${port}`,
    );
    await expect(outcome).resolves.toMatchObject({ kind: 'message' });
    closers.push(() => {
      stream.cancel();
      return Promise.resolve();
    });

    await expect(stream.notify('node-a', synced)).resolves.toBe('failed');
  });
});

describe('createGrpcConnector timeouts', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('drops a stream whose connection stops answering keepalive pings, and backs off', async () => {
    const plugin = new DriverServer({
      driverName: 'gpu.example.com',
      endpoint: '127.0.0.1:0',
      inventory: gpus(2),
    });
    const relay = await blackHoleRelay(await plugin.start());
    closers.push(() => plugin.close(), relay.close);
    const clock = new ManualClock();
    const { stream, until } = supervised(relay.target, clock, {
      backoffMs: 60_000,
      closers,
      keepaliveTimeMs: 10_000,
      keepaliveTimeoutMs: 1000,
    });

    stream.start();
    await until(() => stream.state === 'streaming');
    relay.blackHole();
    await clock.advance(10_000);
    await clock.advance(1000);
    await until(() => stream.state === 'backoff');

    expect(stream.error).toBe(
      `WatchResources ${relay.target}: keepalive timeout: a ping was not answered within 1000 ms`,
    );
    expect(stream.latest).toEqual(gpus(2));
  });

  it('gives up a dial that does not connect within connectTimeoutMs, and backs off', async () => {
    const silent = await silentServer();
    closers.push(silent.close);
    const clock = new ManualClock();
    const { stream, until } = supervised(silent.target, clock, {
      connectTimeoutMs: 3000,
      backoffMs: 60_000,
      closers,
    });

    stream.start();
    await waitFor(() => silent.connections() === 1, { description: 'the TCP connection' });
    await clock.advance(3000);
    await until(() => stream.state === 'backoff');

    expect(stream.error).toBe(
      `WatchResources ${silent.target}: connect timeout: no HTTP/2 connection within 3000 ms`,
    );
    expect(clock.pending()).toEqual([60_000]);
  });
});

describe('createGrpcConnector trace context', () => {
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  let server: GrpcServer;
  afterEach(() => {
    server.forceShutdown();
  });

  it("hands on each message's traceparent, of a taken message and of a rejected one", async () => {
    server = new GrpcServer();
    server.addService(publisher.ResourcePublisherService, {
      watchResources: (call: ServerWritableStream<unknown, publisher.DriverResources>) => {
        call.write(fromDriverInventory(gpus(1), traceparent));
        call.write(
          publisher.DriverResources.fromPartial({
            traceparent,
            pools: [{ name: 'p', generation: 2n ** 63n - 1n }],
          }),
        );
        call.write(fromDriverInventory(gpus(2)));
        call.end();
      },
      notifyPublishStatus: () => undefined,
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => {
        if (error === null) resolve(bound);
        else reject(error);
      });
    });
    const seen: unknown[] = [];
    let ended = false;
    createGrpcConnector()(
      { endpoint: `127.0.0.1:${port}`, nodeName: 'node-a' },
      {
        message: (inventory, sent) =>
          seen.push({ devices: inventory.pools[0]?.devices.length, sent }),
        rejected: ({ traceparent: sent }) => seen.push({ rejected: true, sent }),
        end: () => {
          ended = true;
        },
        error: () => undefined,
      },
    );
    await waitFor(() => ended, { description: 'the stream ended' });

    expect(seen).toEqual([
      { devices: 1, sent: traceparent },
      { rejected: true, sent: traceparent },
      { devices: 2, sent: undefined },
    ]);
  });
});
