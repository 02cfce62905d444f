import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import type { DriverInventory, SyncStatus } from '@slicekeeper/contracts';
import {
  publishStatusRequest,
  publisher,
  registration,
  toDriverInventory,
} from '@slicekeeper/proto';
import type { PublishFeedback } from '@slicekeeper/proto';
import { waitFor } from '@slicekeeper/testing';
import { DriverServer } from './driver-server';

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

/** A WatchResources client that records what it gets. */
function watch(endpoint: string, nodeName: string) {
  const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
  const seen = {
    inventories: [] as DriverInventory[],
    ended: false,
    code: undefined as number | undefined,
  };
  const call: ClientReadableStream<publisher.DriverResources> = client.watchResources({ nodeName });
  call.on('data', (m: publisher.DriverResources) =>
    seen.inventories.push(toDriverInventory(m, { nodeName })),
  );
  call.on('end', () => (seen.ended = true));
  call.on('error', (e: { code?: number }) => (seen.code = e.code));
  return {
    seen,
    close: () => {
      call.cancel();
      client.close();
    },
  };
}

/** Calls NotifyPublishStatus as slicekeeper does; resolves with the error, if any. */
async function notify(
  endpoint: string,
  request: publisher.NotifyPublishStatusRequest,
): Promise<ServiceError | null> {
  const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
  try {
    return await new Promise((resolve) => {
      client.notifyPublishStatus(request, (error) => {
        resolve(error);
      });
    });
  } finally {
    client.close();
  }
}

/** A sync status as the syncer records it. */
function syncStatus(fields: Partial<SyncStatus>): SyncStatus {
  return {
    outcome: 'synced',
    snapshotGeneration: 4,
    slices: [],
    pools: [],
    attempt: 1,
    startedAt: '2026-01-02T03:04:05.000Z',
    finishedAt: '2026-01-02T03:04:05.100Z',
    writes: 1,
    ...fields,
  };
}

describe('DriverServer', () => {
  const servers: DriverServer[] = [];
  const closers: (() => void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function serve(options: Partial<ConstructorParameters<typeof DriverServer>[0]> = {}) {
    const server = new DriverServer({
      driverName: 'gpu.example.com',
      endpoint: '127.0.0.1:0',
      ...options,
    });
    servers.push(server);
    const endpoint = await server.start();
    return { server, endpoint };
  }

  function open(endpoint: string, node: string) {
    const stream = watch(endpoint.startsWith('unix://') ? endpoint : endpoint, node);
    closers.push(stream.close);
    return stream.seen;
  }

  it('answers GetInfo like a kubelet DRA plugin and records the registration status', async () => {
    const { server, endpoint } = await serve();
    const client = new registration.RegistrationClient(endpoint, credentials.createInsecure());
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
      supportedVersions: ['v1.ResourcePublisher'],
    });
    await new Promise<void>((resolve, reject) => {
      client.notifyRegistrationStatus({ pluginRegistered: true, error: '' }, (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    client.close();
    expect(server.registrationStatus).toEqual({ pluginRegistered: true, error: '' });
  });

  it('streams the latest inventory to every stream, per node when asked', async () => {
    const { server, endpoint } = await serve({ inventory: gpus(1) });
    const a = open(endpoint, 'node-a');
    const b = open(endpoint, 'node-b');
    await waitFor(() => a.inventories.length === 1 && b.inventories.length === 1);
    server.publish(gpus(2));
    server.publish(gpus(3), 'node-b');
    await waitFor(() => a.inventories.length === 2 && b.inventories.length === 3);
    expect(a.inventories.at(-1)).toEqual(gpus(2));
    expect(b.inventories.at(-1)).toEqual(gpus(3));
    expect(server.openStreams).toBe(2);
    expect(server.watchCalls).toBe(2);
  });

  it('serves the 1.34–1.36 device fields and pass-through fields as the driver gave them', async () => {
    const fabric: DriverInventory = {
      pools: [
        {
          name: 'fabric',
          scope: { kind: 'per-device' },
          passThrough: { newSpecField: { enabled: true } },
          devices: [
            {
              name: 'nic-0',
              nodeName: 'node-a',
              allowMultipleAllocations: true,
              capacity: {
                bandwidth: {
                  value: '100G',
                  requestPolicy: { default: '10G', validValues: ['10G', '25G', '100G'] },
                },
                memory: {
                  value: '16Gi',
                  requestPolicy: { default: '1Gi', validRange: { min: '1Gi', step: '1Gi' } },
                },
              },
              attributes: { lanes: { ints: [0, 1, 2, 3] }, firmware: { versions: ['1.2.3'] } },
            },
            {
              name: 'gpu-0',
              nodeSelector: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: 'rack', operator: 'In', values: ['r1'] }] },
                ],
              },
              bindsToNode: true,
              bindingConditions: ['example.com/attached'],
              bindingFailureConditions: ['example.com/attach-failed'],
              passThrough: { futureField: [1, 'two'] },
            },
            { name: 'fpga-0', allNodes: true, attributes: { modes: { strings: ['a', 'b'] } } },
          ],
        },
      ],
    };
    const { endpoint } = await serve({ inventory: fabric });
    const seen = open(endpoint, '');
    await waitFor(() => seen.inventories.length === 1);
    expect(seen.inventories[0]).toEqual(fabric);
  });

  it('waits for a first inventory when it has none', async () => {
    const { server, endpoint } = await serve();
    const a = open(endpoint, 'node-a');
    await waitFor(() => server.openStreams === 1);
    expect(a.inventories).toEqual([]);
    server.publish(gpus(1));
    await waitFor(() => a.inventories.length === 1);
  });

  it('fault switches: Unimplemented, EOF, failure, report-once', async () => {
    const { server, endpoint } = await serve({ inventory: gpus(1) });
    const ended = open(endpoint, 'n');
    await waitFor(() => ended.inventories.length === 1);
    server.endStreams();
    await waitFor(() => ended.ended);
    expect(ended.code).toBeUndefined();

    const failed = open(endpoint, 'n');
    await waitFor(() => server.openStreams === 1);
    server.failStreams();
    await waitFor(() => failed.code === status.UNAVAILABLE);

    server.setFault('unimplemented');
    const refused = open(endpoint, 'n');
    await waitFor(() => refused.code === status.UNIMPLEMENTED);
    expect(refused.inventories).toEqual([]);

    const once = (await serve({ inventory: gpus(2), reportOnce: true })).endpoint;
    const reported = open(once, 'n');
    await waitFor(() => reported.ended);
    expect(reported.inventories).toEqual([gpus(2)]);
  });

  it('serves on a unix socket, replaces a stale one, and removes it on close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sk-driver-'));
    try {
      const endpoint = `unix://${join(dir, 'plugin.sock')}`;
      const first = new DriverServer({
        driverName: 'gpu.example.com',
        endpoint,
        inventory: gpus(1),
      });
      await first.start();
      // A crashed driver leaves its socket behind; the next one must still start.
      const second = new DriverServer({
        driverName: 'gpu.example.com',
        endpoint,
        inventory: gpus(4),
      });
      servers.push(first, second);
      expect(await second.start()).toBe(endpoint);
      const seen = open(endpoint, 'n');
      await waitFor(() => seen.inventories.length === 1);
      expect(seen.inventories[0]).toEqual(gpus(4));
      const closing = second.close();
      expect(second.close()).toBe(closing);
      await closing;
      await expect(stat(join(dir, 'plugin.sock'))).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('discovery mode: serves Registration and ResourcePublisher on <driver>.sock in the registration directory, and removes it on close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sk-registry-'));
    try {
      const registry = join(dir, 'plugins_registry');
      const server = new DriverServer({
        driverName: 'gpu.example.com',
        registrationDirectory: registry,
        inventory: gpus(2),
      });
      servers.push(server);
      const endpoint = await server.start();
      expect(endpoint).toBe(`unix://${registry}/gpu.example.com.sock`);
      const client = new registration.RegistrationClient(endpoint, credentials.createInsecure());
      const info = await new Promise<registration.PluginInfo>((resolve, reject) => {
        client.getInfo({}, (error, response) => {
          if (error === null) resolve(response);
          else reject(error);
        });
      });
      client.close();
      // An empty endpoint: the registration socket serves the resource service too (kubelet).
      expect(info).toEqual({
        type: 'DRAPlugin',
        name: 'gpu.example.com',
        endpoint: '',
        supportedVersions: ['v1.ResourcePublisher'],
      });
      const seen = open(endpoint, 'n');
      await waitFor(() => seen.inventories.length === 1);
      await server.close();
      await expect(stat(join(registry, 'gpu.example.com.sock'))).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    {
      name: 'both',
      options: { endpoint: '127.0.0.1:0', registrationDirectory: '/run/registry' },
      error: 'DriverServer: endpoint and registrationDirectory: set one, not both',
    },
    {
      name: 'neither',
      options: {},
      error: 'DriverServer: endpoint or registrationDirectory: one is required',
    },
    {
      name: 'relative-directory',
      options: { registrationDirectory: 'registry' },
      error: 'DriverServer: registrationDirectory "registry": must be an absolute path',
    },
  ])('refuses where to listen: $name', ({ options, error }) => {
    expect(() => new DriverServer({ driverName: 'gpu.example.com', ...options })).toThrow(error);
  });

  it('streams the health the driver reports for each device', async () => {
    const inventory: DriverInventory = {
      pools: [
        {
          name: 'pool',
          scope: { kind: 'node' },
          devices: [
            { name: 'gpu-0', health: { status: 'healthy', timeoutSeconds: 30 } },
            { name: 'gpu-1', health: { status: 'unhealthy', message: 'ECC errors' } },
            { name: 'gpu-2' },
          ],
        },
      ],
    };
    const { server, endpoint } = await serve({ inventory: gpus(3) });
    const seen = open(endpoint, 'node-a');
    await waitFor(() => seen.inventories.length === 1);
    server.publish(inventory);
    await waitFor(() => seen.inventories.length === 2);
    expect(seen.inventories[1]).toEqual(inventory);
  });

  it('hands every publish feedback to the driver', async () => {
    const feedback: PublishFeedback[] = [];
    const { server, endpoint } = await serve({ onFeedback: (f) => feedback.push(f) });
    expect(server.lastFeedback).toBeUndefined();
    const invalid = syncStatus({
      outcome: 'invalid',
      error: 'pools[0].devices[0].name: must be a DNS-1123 label',
      problems: [{ field: 'pools[0].devices[0].name', message: 'must be a DNS-1123 label' }],
    });
    expect(await notify(endpoint, publishStatusRequest('node-a', invalid))).toBeNull();
    const synced = syncStatus({
      snapshotGeneration: 5,
      slices: ['00000-gpu.example.com-node-a-x7k2p'],
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
    });
    expect(await notify(endpoint, publishStatusRequest('node-a', synced))).toBeNull();
    expect(feedback).toEqual([
      {
        nodeName: 'node-a',
        snapshotGeneration: 4,
        outcome: 'invalid',
        problems: [{ field: 'pools[0].devices[0].name', message: 'must be a DNS-1123 label' }],
        droppedFields: [],
        sliceNames: [],
        error: 'pools[0].devices[0].name: must be a DNS-1123 label',
      },
      {
        nodeName: 'node-a',
        snapshotGeneration: 5,
        outcome: 'synced',
        problems: [],
        droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
        sliceNames: ['00000-gpu.example.com-node-a-x7k2p'],
      },
    ]);
    expect(server.lastFeedback).toEqual(feedback[1]);
  });

  it('refuses feedback it cannot read, naming the field', async () => {
    const feedback: PublishFeedback[] = [];
    const { server, endpoint } = await serve({ onFeedback: (f) => feedback.push(f) });
    const error = await notify(
      endpoint,
      publisher.NotifyPublishStatusRequest.fromPartial({
        nodeName: 'node-a',
        snapshotGeneration: 1n,
      }),
    );
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toMatch(
      /^outcome: must be one of PUBLISH_OUTCOME_PUBLISHED, .* \(is 0\)$/,
    );
    expect(feedback).toEqual([]);
    expect(server.lastFeedback).toBeUndefined();
  });

  it('answers the feedback even when the handler throws', async () => {
    const { server, endpoint } = await serve({
      onFeedback: () => {
        throw new Error('driver bug');
      },
    });
    expect(await notify(endpoint, publishStatusRequest('n', syncStatus({})))).toBeNull();
    expect(server.lastFeedback?.outcome).toBe('synced');
  });

  it('answers Unimplemented when told not to serve feedback, and still streams', async () => {
    const feedback: PublishFeedback[] = [];
    const { endpoint } = await serve({
      inventory: gpus(1),
      servePublishStatus: false,
      onFeedback: (f) => feedback.push(f),
    });
    const error = await notify(endpoint, publishStatusRequest('n', syncStatus({})));
    expect(error?.code).toBe(status.UNIMPLEMENTED);
    expect(feedback).toEqual([]);
    const seen = open(endpoint, 'n');
    await waitFor(() => seen.inventories.length === 1);
    expect(seen.inventories[0]).toEqual(gpus(1));
  });
});
