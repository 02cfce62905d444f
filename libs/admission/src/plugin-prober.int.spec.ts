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

  it('gives up dialling after the dial timeout', async () => {
    const fast = new GrpcPluginProber({ dialTimeoutMs: 300 });
    const nowhere = await new EndpointPolicy({ socketDirectories: ['/tmp'] }).admit(
      'unix:///tmp/slicekeeper-no-such-plugin.sock',
    );
    await expect(fast.connect(nowhere)).rejects.toMatchObject({
      code: 'plugin-unreachable',
      message: /not reachable within 300ms/,
    });
  });
});
