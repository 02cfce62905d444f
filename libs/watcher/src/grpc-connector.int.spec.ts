import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EndpointPolicy } from '@slicekeeper/admission';
import type { DriverInventory } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import type { SlicekeeperError } from '@slicekeeper/errors';
import { ManualClock } from '@slicekeeper/runtime/testing';
import { createGrpcConnector } from './grpc-connector';
import type { DialPolicy } from './grpc-connector';
import { PluginStream } from './plugin-stream';
import type { PublisherConnector } from './publisher-connector';
import { gpus, registration, silentLogger } from './testing/fakes';

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
      const waiters: (() => void)[] = [];
      const stream = new PluginStream({
        registration: registration(`unix://${path}`, 1),
        connector: createGrpcConnector({ policy: policy() }),
        clock,
        backoff: { initialMs: 1000, maxMs: 1000, jitter: 0 },
        logger: silentLogger,
        onChange: () => {
          for (const wake of waiters.splice(0)) wake();
        },
      });
      closers.push(() => {
        stream.close('test over');
        return Promise.resolve();
      });
      /** Resolves once `holds` is true after some state change. */
      const until = async (holds: () => boolean) => {
        while (!holds()) await new Promise<void>((resolve) => waiters.push(resolve));
      };

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
