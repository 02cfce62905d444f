import { Server, ServerCredentials, credentials, status } from '@grpc/grpc-js';
import type { ServerWritableStream, sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import type { DriverInventory } from '@slicekeeper/contracts';
import { publisher, registration, toDriverInventory } from './index';

async function listen(server: Server): Promise<string> {
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => {
      if (error === null) resolve(bound);
      else reject(error);
    });
  });
  return `127.0.0.1:${port}`;
}

function gpu(index: number, memory: string): publisher.Device {
  return publisher.Device.fromPartial({
    name: `gpu-${index}`,
    attributes: {
      model: { value: { $case: 'stringValue', value: 'A100' } },
      index: { value: { $case: 'intValue', value: BigInt(index) } },
      'gpu.example.com/driverVersion': { value: { $case: 'versionValue', value: '550.54.15' } },
    },
    capacity: { memory: { value: memory } },
  });
}

describe('ResourcePublisher over gRPC', () => {
  const server = new Server();
  const sent: publisher.DriverResources[] = [
    publisher.DriverResources.fromPartial({
      pools: [publisher.Pool.fromPartial({ name: '', devices: [gpu(0, '40Gi')] })],
    }),
    publisher.DriverResources.fromPartial({
      pools: [publisher.Pool.fromPartial({ name: '', devices: [gpu(0, '40Gi'), gpu(1, '80Gi')] })],
    }),
  ];
  let requestedNode = '';
  let address: string;

  beforeAll(async () => {
    server.addService(publisher.ResourcePublisherService, {
      watchResources: (
        call: ServerWritableStream<publisher.WatchResourcesRequest, publisher.DriverResources>,
      ) => {
        requestedNode = call.request.nodeName;
        for (const message of sent) call.write(message);
        call.end();
      },
    });
    address = await listen(server);
  });
  afterAll(() => {
    server.forceShutdown();
  });

  it('streams complete inventories that map to domain objects', async () => {
    const client = new publisher.ResourcePublisherClient(address, credentials.createInsecure());
    const received: DriverInventory[] = [];
    await new Promise<void>((resolve, reject) => {
      const stream = client.watchResources({ nodeName: 'node-a' });
      stream.on('data', (message: publisher.DriverResources) => {
        received.push(toDriverInventory(message, { nodeName: 'node-a' }));
      });
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    client.close();

    expect(requestedNode).toBe('node-a');
    expect(received).toHaveLength(2);
    expect(received[1]).toEqual({
      pools: [
        {
          name: 'node-a',
          scope: { kind: 'node' },
          devices: [0, 1].map((index) => ({
            name: `gpu-${index}`,
            attributes: {
              model: { string: 'A100' },
              index: { int: index },
              'gpu.example.com/driverVersion': { version: '550.54.15' },
            },
            capacity: { memory: { value: index === 0 ? '40Gi' : '80Gi' } },
          })),
        },
      ],
    });
  });
});

describe('Registration over gRPC (kubelet plugin-registration API)', () => {
  const server = new Server();
  const statuses: registration.RegistrationStatus[] = [];
  let address: string;

  beforeAll(async () => {
    server.addService(registration.RegistrationService, {
      getInfo: (
        _call: ServerUnaryCall<registration.InfoRequest, registration.PluginInfo>,
        callback: sendUnaryData<registration.PluginInfo>,
      ) => {
        callback(null, {
          type: 'DRAPlugin',
          name: 'gpu.example.com',
          endpoint: '',
          supportedVersions: ['v1.ResourcePublisher', 'v1beta1.DRAPlugin'],
        });
      },
      notifyRegistrationStatus: (
        call: ServerUnaryCall<
          registration.RegistrationStatus,
          registration.RegistrationStatusResponse
        >,
        callback: sendUnaryData<registration.RegistrationStatusResponse>,
      ) => {
        statuses.push(call.request);
        callback(null, {});
      },
    });
    address = await listen(server);
  });
  afterAll(() => {
    server.forceShutdown();
  });

  it('answers GetInfo and receives NotifyRegistrationStatus', async () => {
    const client = new registration.RegistrationClient(address, credentials.createInsecure());
    const info = await new Promise<registration.PluginInfo>((resolve, reject) => {
      client.getInfo({}, (error, response) => {
        if (error === null) resolve(response);
        else reject(error);
      });
    });
    expect(info).toEqual({
      type: 'DRAPlugin',
      name: 'gpu.example.com',
      endpoint: '',
      supportedVersions: ['v1.ResourcePublisher', 'v1beta1.DRAPlugin'],
    });

    await new Promise<void>((resolve, reject) => {
      client.notifyRegistrationStatus(
        { pluginRegistered: false, error: 'no supported version' },
        (error) => {
          if (error === null) resolve();
          else reject(error);
        },
      );
    });
    client.close();
    expect(statuses).toEqual([{ pluginRegistered: false, error: 'no supported version' }]);
  });

  it('reports Unimplemented for a service the plugin does not serve', async () => {
    const client = new publisher.ResourcePublisherClient(address, credentials.createInsecure());
    const code = await new Promise<number | undefined>((resolve) => {
      const stream = client.watchResources({ nodeName: 'node-a' });
      stream.on('data', () => undefined);
      stream.on('error', (error: { code?: number }) => {
        resolve(error.code);
      });
    });
    client.close();
    expect(code).toBe(status.UNIMPLEMENTED);
  });
});
