import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { KUBELET_130_PLUGIN_VERSION } from '@slicekeeper/contracts';
import { kubeletDra } from '@slicekeeper/proto';
import { ManualClock } from '@slicekeeper/time/testing';
import { createGrpcConnector } from './grpc-connector';
import { PluginStream } from './plugin-stream';
import { registration, silentLogger } from './testing/fakes';

type Call = ServerWritableStream<
  kubeletDra.NodeListAndWatchResourcesRequest,
  kubeletDra.NodeListAndWatchResourcesResponse
>;

/** What a kubelet 1.30 driver streams: two GPUs of the named resources model. */
const gpus: kubeletDra.NodeListAndWatchResourcesResponse = {
  resources: [
    {
      namedResources: {
        instances: [
          {
            name: 'gpu-0',
            attributes: [
              { name: 'model', attributeValue: { string: 'A100' } },
              { name: 'memory', attributeValue: { quantity: { string: '80Gi' } } },
            ],
          },
          { name: 'gpu-1', attributes: [{ name: 'mig', attributeValue: { bool: false } }] },
        ],
      },
    },
  ],
};

/**
 * A driver written for kubelet 1.30, served with @grpc/grpc-js straight from the generated
 * `v1alpha3.Node` service (as the Go kubeletplugin helper serves it), not with driver-kit.
 * `serve` is its NodeListAndWatchResources; without it the method is Unimplemented.
 */
async function kubelet130Driver(serve?: (call: Call) => void) {
  const server = new Server();
  const requests: kubeletDra.NodeListAndWatchResourcesRequest[] = [];
  server.addService(kubeletDra.NodeService, {
    ...(serve === undefined
      ? {}
      : {
          nodeListAndWatchResources: (call: Call) => {
            requests.push(call.request);
            serve(call);
          },
        }),
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => {
      if (error === null) resolve(bound);
      else reject(error);
    });
  });
  return {
    endpoint: `127.0.0.1:${port}`,
    requests,
    close: () => {
      server.forceShutdown();
    },
  };
}

describe('a kubelet 1.30 driver (v1alpha3.Node/NodeListAndWatchResources)', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0).reverse()) close();
  });

  /** A PluginStream of a registration agreed on `1.0.0`, and a way to wait for its states. */
  function watch(endpoint: string) {
    const waiters: (() => void)[] = [];
    const clock = new ManualClock();
    const stream = new PluginStream({
      registration: { ...registration(endpoint, 1), version: KUBELET_130_PLUGIN_VERSION },
      connector: createGrpcConnector(),
      clock,
      backoff: { initialMs: 1000, maxMs: 1000, jitter: 0 },
      logger: silentLogger,
      onChange: () => {
        for (const wake of waiters.splice(0)) wake();
      },
    });
    closers.push(() => {
      stream.close('test over');
    });
    const until = async (holds: () => boolean) => {
      while (!holds()) await new Promise<void>((resolve) => waiters.push(resolve));
    };
    stream.start();
    return { stream, until, clock };
  }

  const published = {
    pools: [
      {
        name: 'node-a',
        scope: { kind: 'node' },
        devices: [
          {
            name: 'gpu-0',
            attributes: { model: { string: 'A100' } },
            capacity: { memory: { value: '80Gi' } },
          },
          { name: 'gpu-1', attributes: { mig: { bool: false } } },
        ],
      },
    ],
  };

  it('streams its named resources as one node-local pool, asking with an empty request', async () => {
    const driver = await kubelet130Driver((call) => {
      call.write(gpus);
    });
    closers.push(driver.close);
    const { stream, until } = watch(driver.endpoint);

    await until(() => stream.latest !== undefined);
    expect(stream.state).toBe('streaming');
    expect(stream.latest).toEqual(published);
    expect(driver.requests).toEqual([{}]);
  });

  it('publishes nothing for a driver that answers Unimplemented', async () => {
    const driver = await kubelet130Driver();
    closers.push(driver.close);
    const { stream, until } = watch(driver.endpoint);

    await until(() => stream.state === 'unimplemented');
    expect(stream.latest).toBeUndefined();
  });

  it('keeps the last inventory when the driver ends the stream (EOF)', async () => {
    const driver = await kubelet130Driver((call) => {
      call.write(gpus);
      call.end();
    });
    closers.push(driver.close);
    const { stream, until } = watch(driver.endpoint);

    await until(() => stream.state === 'ended');
    expect(stream.latest).toEqual(published);
  });

  it('reconnects with backoff after an error, keeping what it had', async () => {
    const driver = await kubelet130Driver((call) => {
      call.write(gpus);
      call.emit('error', { code: status.UNAVAILABLE, details: 'device plugin restarting' });
    });
    closers.push(driver.close);
    const { stream, until, clock } = watch(driver.endpoint);

    await until(() => stream.state === 'backoff');
    expect(stream.latest).toEqual(published);
    expect(stream.error).toMatch(/NodeListAndWatchResources .*device plugin restarting/);
    await clock.advance(1000);
    await until(() => driver.requests.length === 2 && stream.state === 'backoff');
    // The second call streamed again, then failed again: a reconnect after each error.
    expect(driver.requests).toHaveLength(2);
  });

  it('reports a message it cannot publish, naming the field, and keeps streaming', async () => {
    const driver = await kubelet130Driver((call) => {
      call.write({ resources: [{}] });
    });
    closers.push(driver.close);
    const { stream, until } = watch(driver.endpoint);

    await until(() => stream.lastRejection !== undefined);
    expect(stream.lastRejection).toMatch(/^resources\[0\]\.namedResources: must be set/);
    expect(stream.latest).toBeUndefined();
  });
});
