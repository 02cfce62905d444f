import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ServerWritableStream, ServiceDefinition } from '@grpc/grpc-js';
import type { DriverInventory } from '@slicekeeper/contracts';
import type { SlicekeeperError } from '@slicekeeper/errors';
import { fromDriverInventory, publisher } from '@slicekeeper/proto';
import { ManualClock } from '@slicekeeper/time/testing';
import { createGrpcConnector } from './grpc-connector';
import { PluginStream } from './plugin-stream';
import type { InventoryStreamHandlers, MessageRejection } from './publisher-connector';
import { gpus, registration, silentLogger } from './testing/fakes';

/** ResourcePublisher as the wire sees it: the server writes whatever bytes a test scripts. */
const RAW_PUBLISHER: ServiceDefinition = {
  watchResources: {
    ...publisher.ResourcePublisherService.watchResources,
    responseSerialize: (value: Buffer) => value,
    responseDeserialize: (value: Buffer) => value,
  },
};

/** A driver whose `n`-th WatchResources call writes `scripts[n]` and stays open. */
class ScriptedPublisher {
  calls = 0;
  private readonly server = new Server();

  constructor(private readonly scripts: Buffer[][]) {
    this.server.addService(RAW_PUBLISHER, {
      watchResources: (call: ServerWritableStream<unknown, Buffer>) => {
        for (const frame of this.scripts[this.calls] ?? []) call.write(frame);
        this.calls++;
      },
    });
  }

  start(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
        if (error === null) resolve(`127.0.0.1:${port}`);
        else reject(error);
      });
    });
  }

  close(): void {
    this.server.forceShutdown();
  }
}

function encode(message: publisher.DriverResources): Buffer {
  return Buffer.from(publisher.DriverResources.encode(message).finish());
}

const GOOD = gpus(2);

/** gpus(1) with `example.com/x` set to `value`, which a driver may send (any int64). */
function withInt(value: bigint): Buffer {
  const message = fromDriverInventory(gpus(1));
  const device = message.pools[0]?.devices[0];
  if (device === undefined) throw new Error('no device');
  device.attributes['example.com/x'] = { value: { $case: 'intValue', value } };
  return encode(message);
}

/** gpus(1) with the pool generation `generation`. */
function withGeneration(generation: bigint): Buffer {
  const message = fromDriverInventory(gpus(1));
  const pool = message.pools[0];
  if (pool === undefined) throw new Error('no pool');
  pool.generation = generation;
  return encode(message);
}

type Reported =
  | { kind: 'message'; inventory: DriverInventory }
  | { kind: 'rejected'; rejection: MessageRejection }
  | { kind: 'end' }
  | { kind: 'error'; error: SlicekeeperError };

/** Handlers that record what a call reports, for a test to await. */
class Recorder implements InventoryStreamHandlers {
  readonly reported: Reported[] = [];
  private wake: () => void = () => undefined;

  message(inventory: DriverInventory): void {
    this.record({ kind: 'message', inventory });
  }
  rejected(rejection: MessageRejection): void {
    this.record({ kind: 'rejected', rejection });
  }
  end(): void {
    this.record({ kind: 'end' });
  }
  error(error: SlicekeeperError): void {
    this.record({ kind: 'error', error });
  }

  /** The first `count` reports, or fewer if the call ends before. */
  async first(count: number): Promise<Reported[]> {
    while (this.reported.length < count && !this.ended()) {
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    return this.reported.slice(0, count);
  }

  private ended(): boolean {
    return this.reported.some(
      (r) =>
        r.kind === 'end' || r.kind === 'error' || (r.kind === 'rejected' && r.rejection.callEnded),
    );
  }

  private record(reported: Reported): void {
    this.reported.push(reported);
    this.wake();
  }
}

/** How an error reads in a failed expectation, rather than `{}`. */
function readable(reported: Reported[]): unknown[] {
  return reported.map((r) => (r.kind === 'error' ? { kind: 'error', error: r.error.message } : r));
}

describe('createGrpcConnector: messages it cannot use', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0).reverse()) close();
  });

  async function serve(
    scripts: Buffer[][],
  ): Promise<{ driver: ScriptedPublisher; endpoint: string }> {
    const driver = new ScriptedPublisher(scripts);
    closers.push(() => {
      driver.close();
    });
    return { driver, endpoint: await driver.start() };
  }

  it.each([
    [
      'an int attribute of 2^53+1',
      withInt(2n ** 53n + 1n),
      'pools[0].devices[0].attributes[example.com/x].int: 9007199254740993 is outside the range ' +
        'slicekeeper can publish exactly (±9007199254740991)',
    ],
    [
      'a pool generation of 2^63-1',
      withGeneration(2n ** 63n - 1n),
      'pools[0].generation: 9223372036854775807 is outside the range slicekeeper can publish ' +
        'exactly (±9007199254740991)',
    ],
  ])(
    'rejects %s naming the field, keeps the call, and takes the next message',
    async (_, bad, problem) => {
      const { driver, endpoint } = await serve([[bad, encode(fromDriverInventory(GOOD))]]);
      const recorder = new Recorder();
      const call = createGrpcConnector()({ endpoint, nodeName: 'node-a' }, recorder);
      closers.push(() => {
        call.cancel();
      });

      expect(readable(await recorder.first(2))).toEqual([
        { kind: 'rejected', rejection: { problem, callEnded: false } },
        { kind: 'message', inventory: GOOD },
      ]);
      expect(driver.calls).toBe(1);
    },
  );

  it('rejects a message that does not decode, ending the call', async () => {
    // Pools (field 1) announced as 5 bytes long, with 1 byte sent.
    const { endpoint } = await serve([[Buffer.from([0x0a, 0x05, 0x0a])]]);
    const recorder = new Recorder();
    const call = createGrpcConnector()({ endpoint, nodeName: 'node-a' }, recorder);
    closers.push(() => {
      call.cancel();
    });

    expect(readable(await recorder.first(1))).toEqual([
      {
        kind: 'rejected',
        rejection: { problem: 'message does not decode: premature EOF', callEnded: true },
      },
    ]);
  });

  it('rejects a message over the size limit, then reconnects and takes the next one', async () => {
    const limit = 1024 * 1024;
    const large = fromDriverInventory(gpus(1));
    const device = large.pools[0]?.devices[0];
    if (device === undefined) throw new Error('no device');
    device.attributes['blob'] = { value: { $case: 'stringValue', value: 'x'.repeat(2 * limit) } };
    const tooLarge = encode(large);
    const { driver, endpoint } = await serve([[tooLarge], [encode(fromDriverInventory(GOOD))]]);

    const clock = new ManualClock();
    const seen: string[] = [];
    let changed: () => void = () => undefined;
    const stream = new PluginStream({
      registration: registration(endpoint, 1),
      connector: createGrpcConnector({ maxMessageBytes: limit }),
      clock,
      backoff: { initialMs: 1000, jitter: 0 },
      logger: silentLogger,
      onChange: () => {
        changed();
      },
      onRejected: (_, problem) => seen.push(problem),
    });
    closers.push(() => {
      stream.close('test over');
    });
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise<void>((resolve) => (changed = resolve));
    };

    stream.start();
    await until(() => stream.state === 'backoff');
    const problem = `message of ${tooLarge.length} bytes exceeds the limit of ${limit} bytes`;
    expect(seen).toEqual([problem]);
    expect(stream.lastRejection).toBe(problem);
    expect(clock.pending()).toEqual([1000]);

    await clock.advance(1000);
    await until(() => stream.state === 'streaming');
    expect(stream.latest).toEqual(GOOD);
    expect(stream.lastRejection).toBeUndefined();
    expect(driver.calls).toBe(2);
  });
});
