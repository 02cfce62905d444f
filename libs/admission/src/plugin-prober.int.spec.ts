import { realpath } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { registration } from '@slicekeeper/proto';
import { EndpointPolicy } from './endpoint-policy';
import { GrpcPluginProber } from './plugin-prober';

type Behaviour = 'answer' | 'hang' | 'unimplemented' | 'fail';

describe('GrpcPluginProber', () => {
  const server = new Server();
  const told: registration.RegistrationStatus[] = [];
  let behaviour: Behaviour = 'answer';
  let endpoint = '';
  const policy = new EndpointPolicy({ allowLoopback: true });
  const prober = new GrpcPluginProber({ dialTimeoutMs: 2000, callTimeoutMs: 200 });

  beforeAll(async () => {
    server.addService(registration.RegistrationService, {
      getInfo: (
        _call: ServerUnaryCall<registration.InfoRequest, registration.PluginInfo>,
        callback: sendUnaryData<registration.PluginInfo>,
      ) => {
        if (behaviour === 'hang') return;
        if (behaviour === 'unimplemented') {
          callback({ code: status.UNIMPLEMENTED, details: 'unknown service' });
          return;
        }
        if (behaviour === 'fail') {
          callback({ code: status.PERMISSION_DENIED, details: 'go away' });
          return;
        }
        callback(null, {
          type: 'DRAPlugin',
          name: 'gpu.example.com',
          endpoint: '',
          supportedVersions: ['v1.ResourcePublisher'],
        });
      },
      notifyRegistrationStatus: (
        call: ServerUnaryCall<
          registration.RegistrationStatus,
          registration.RegistrationStatusResponse
        >,
        callback: sendUnaryData<registration.RegistrationStatusResponse>,
      ) => {
        told.push(call.request);
        callback(null, {});
      },
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => {
        if (error === null) resolve(bound);
        else reject(error);
      });
    });
    endpoint = `127.0.0.1:${port}`;
  });
  afterAll(() => {
    server.forceShutdown();
  });

  async function session() {
    return prober.connect(await policy.admit(endpoint));
  }

  it('asks the plugin who it is and tells it the outcome', async () => {
    behaviour = 'answer';
    const plugin = await session();
    try {
      expect(await plugin.getInfo()).toEqual({
        type: 'DRAPlugin',
        name: 'gpu.example.com',
        endpoint: '',
        supportedVersions: ['v1.ResourcePublisher'],
      });
      await plugin.notify({ registered: false, error: 'no thanks' });
      expect(told).toEqual([{ pluginRegistered: false, error: 'no thanks' }]);
    } finally {
      plugin.close();
      plugin.close();
    }
  });

  it.each([
    ['hang', 'plugin-timeout', /no answer within 200ms/],
    ['fail', 'plugin-error', /go away/],
  ] as const)('reports a plugin that does %s', async (mode, code, message) => {
    behaviour = mode;
    const plugin = await session();
    try {
      await expect(plugin.getInfo()).rejects.toMatchObject({ code, message });
    } finally {
      plugin.close();
    }
  });

  it('reports a plugin without the registration service as such', async () => {
    behaviour = 'unimplemented';
    const plugin = await session();
    try {
      expect(await plugin.getInfo()).toBeUndefined();
    } finally {
      plugin.close();
    }
  });

  describe('a dial that cannot succeed', () => {
    // A dial timeout far beyond the test's own: a prober that waits for it fails the test.
    const patient = new GrpcPluginProber({ dialTimeoutMs: 60_000 });
    const open = new EndpointPolicy({ allowLoopback: true, socketDirectories: [tmpdir()] });
    const servers: NetServer[] = [];
    const sockets: Socket[] = [];
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    });

    /** A TCP server on a free loopback port that treats every connection with `handle`. */
    async function tcpServer(handle: (socket: Socket) => void, server = createServer(handle)) {
      servers.push(server);
      server.on('connection', (socket: Socket) => sockets.push(socket));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `127.0.0.1:${(server.address() as AddressInfo).port}`;
    }

    it('fails at once on a closed port, with the reason', async () => {
      const endpoint = await tcpServer(() => undefined);
      await new Promise((resolve) => servers.pop()?.close(resolve));
      await expect(patient.connect(await open.admit(endpoint))).rejects.toMatchObject({
        code: 'plugin-unreachable',
        message: `dial ${endpoint}: connect ECONNREFUSED ${endpoint}`,
      });
    }, 10_000);

    it('fails at once on a missing socket, with the reason', async () => {
      const name = `slicekeeper-no-such-plugin-${process.pid}.sock`;
      const real = join(await realpath(tmpdir()), name);
      const endpoint = `unix://${join(tmpdir(), name)}`;
      await expect(patient.connect(await open.admit(endpoint))).rejects.toMatchObject({
        code: 'plugin-unreachable',
        message: `dial ${endpoint}: connect ENOENT ${real}`,
      });
    }, 10_000);

    it.each([
      ['closes every connection', () => tcpServer((socket) => socket.destroy())],
      [
        'speaks HTTP/1',
        () =>
          tcpServer(
            () => undefined,
            createHttpServer((_, res) => res.end()),
          ),
      ],
      ['sends a banner and hangs up', () => tcpServer((socket) => socket.end('SSH-2.0-x\r\n'))],
    ])(
      'fails at once on a peer that %s: not a gRPC server',
      async (_name, listen) => {
        const endpoint = await listen();
        await expect(patient.connect(await open.admit(endpoint))).rejects.toMatchObject({
          code: 'plugin-unreachable',
          message: expect.stringMatching(
            new RegExp(
              `^dial ${endpoint}: not a gRPC server \\(the HTTP/2 handshake failed: .+\\)$`,
            ),
          ) as unknown,
        });
      },
      10_000,
    );

    it('gives up on a peer that never answers after the dial timeout', async () => {
      const endpoint = await tcpServer(() => undefined);
      const fast = new GrpcPluginProber({ dialTimeoutMs: 300 });
      await expect(fast.connect(await open.admit(endpoint))).rejects.toMatchObject({
        code: 'plugin-unreachable',
        message: `dial ${endpoint}: not reachable within 300ms`,
      });
    });
  });
});
