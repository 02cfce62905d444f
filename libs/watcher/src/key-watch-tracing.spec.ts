import { Writable } from 'node:stream';
import { trace } from '@opentelemetry/api';
import pino from 'pino';
import type { DriverInventory, SliceKey } from '@slicekeeper/contracts';
import { TRACEPARENT_RULE } from '@slicekeeper/contracts';
import { createLogger } from '@slicekeeper/observability';
import type { Logger } from '@slicekeeper/observability';
import type { StoreOptions, StoreResult } from '@slicekeeper/state';
import { SpanKind, SpanStatusCode, formatTraceparent } from '@slicekeeper/telemetry';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import { ManualClock } from '@slicekeeper/time/testing';
import { KeyWatch } from './key-watch';
import {
  KEY,
  MemoryWriter,
  RecordingQueue,
  ScriptedConnector,
  gpus,
  registration,
} from './testing/fakes';

const A = 'unix:///run/gpu/a.sock';
const DRIVER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const OTHER_DRIVER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/**
 * A writer whose first `failures` stores fail, as when Redis drops the connection; with
 * `owesSync`, an equal store answers `unsynced`, as while no sync of the snapshot has finished.
 */
class FlakyWriter extends MemoryWriter {
  failures = 0;
  owesSync = false;
  override async store(
    key: SliceKey,
    endpoint: string,
    inventory: DriverInventory,
    receivedAt?: Date,
    options?: StoreOptions,
  ): Promise<StoreResult> {
    if (this.failures > 0) {
      this.failures--;
      await Promise.resolve();
      throw new Error('connection lost');
    }
    const result = await super.store(key, endpoint, inventory, receivedAt, options);
    return this.owesSync && result.kind === 'unchanged' ? { kind: 'unsynced' } : result;
  }
}

/**
 * A logger whose lines are parsed into `lines`, with the active span's ids on each line, as
 * `createLogger({ traceIds: true })` writes them. (Its mixin returns a frozen object outside a
 * span, which pino's merge cannot extend: a line with fields written outside a span throws.)
 */
function capturedLogger(lines: Record<string, unknown>[]): Logger {
  const destination = new Writable({
    write: (chunk: Buffer, _encoding, callback) => {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  return pino(
    {
      level: 'debug',
      mixin: () => {
        const context = trace.getActiveSpan()?.spanContext();
        return context === undefined ? {} : { trace_id: context.traceId, span_id: context.spanId };
      },
    },
    destination,
  );
}

describe('KeyWatch tracing', () => {
  const recorded = recordedTracing('plugin-watcher');
  let clock: ManualClock;
  let connector: ScriptedConnector;
  let writer: FlakyWriter;
  let queue: RecordingQueue;
  let lines: Record<string, unknown>[];
  let watch: KeyWatch;

  beforeEach(() => {
    clock = new ManualClock();
    connector = new ScriptedConnector();
    writer = new FlakyWriter();
    queue = new RecordingQueue();
    lines = [];
    watch = new KeyWatch({
      key: KEY,
      writer,
      queue,
      connector: connector.connect,
      clock,
      backoff: { random: () => 0 },
      wipeDelayMs: 30_000,
      logger: capturedLogger(lines),
      tracing: recorded.tracing,
    });
    watch.setRegistrations([registration(A, 1)]);
  });

  afterEach(async () => {
    await watch.close('test over');
    recorded.reset();
  });
  afterAll(() => recorded.shutdown());

  const settle = () => clock.advance(0);
  const storedTraceparents = () => writer.snapshots.get('node-a/gpu.example.com')?.traceparents;

  it("follows a message from the driver's span to the store and the sync asked for", async () => {
    connector.last(A).send(gpus(8), DRIVER);
    await settle();

    const [receive] = recorded.named('receive inventory');
    const [store] = recorded.named('store snapshot');
    const [publish] = recorded.named('publish sync');
    if (receive === undefined || store === undefined || publish === undefined) {
      throw new Error(
        `spans: ${recorded
          .spans()
          .map((s) => s.name)
          .join(', ')}`,
      );
    }
    expect(receive.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(receive.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(receive.kind).toBe(SpanKind.CONSUMER);
    expect(receive.attributes).toEqual({
      'rpc.system.name': 'grpc',
      'rpc.method': 'slicekeeper.v1.ResourcePublisher/WatchResources',
      'server.address': A,
      'slicekeeper.node': 'node-a',
      'slicekeeper.driver': 'gpu.example.com',
    });

    expect(store.parentSpanContext?.spanId).toBe(receive.spanContext().spanId);
    expect(store.spanContext().traceId).toBe(receive.spanContext().traceId);
    expect(store.links).toEqual([]);
    expect(store.attributes).toEqual({
      'db.system.name': 'redis',
      'db.operation.name': 'EVALSHA',
      'slicekeeper.node': 'node-a',
      'slicekeeper.driver': 'gpu.example.com',
      'slicekeeper.outcome': 'stored',
      'slicekeeper.snapshot_generation': 1,
    });
    expect(storedTraceparents()).toEqual([formatTraceparent(receive.spanContext())]);

    expect(publish.parentSpanContext?.spanId).toBe(store.spanContext().spanId);
    expect(publish.kind).toBe(SpanKind.PRODUCER);
    expect(publish.attributes).toEqual({
      'messaging.system': 'bullmq',
      'messaging.destination.name': 'slicekeeper-sync',
      'messaging.operation.type': 'send',
      'slicekeeper.node': 'node-a',
      'slicekeeper.driver': 'gpu.example.com',
    });
    expect(queue.reasons()).toEqual(['first-snapshot']);

    // The store span stays open around the enqueue (spans are recorded as they end), and its
    // log line carries its ids.
    expect(recorded.spans().map((span) => span.name)).toEqual([
      'receive inventory',
      'publish sync',
      'store snapshot',
    ]);
    expect(lines.find((line) => line.msg === 'snapshot stored')).toMatchObject({
      trace_id: store.spanContext().traceId,
      span_id: store.spanContext().spanId,
    });
  });

  it('stores one snapshot for messages merged into one write, linked to all of them', async () => {
    await settle();
    connector.last(A).send(gpus(1), DRIVER);
    // The first store is in flight: these two wait and are merged into one write.
    connector.last(A).send(gpus(2), DRIVER);
    connector.last(A).send(gpus(3), OTHER_DRIVER);
    await settle();

    const receives = recorded.named('receive inventory').map((span) => span.spanContext());
    const stores = recorded.named('store snapshot');
    expect(receives).toHaveLength(3);
    expect(stores).toHaveLength(2);
    const merged = stores[1];
    expect(merged?.parentSpanContext?.spanId).toBe(receives[2]?.spanId);
    expect(merged?.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(merged?.links.map((link) => link.context.spanId)).toEqual([receives[1]?.spanId]);
    expect(writer.inventory()).toEqual(gpus(3));
    expect(storedTraceparents()).toEqual(
      [receives[1], receives[2]].map((context) => (context ? formatTraceparent(context) : '')),
    );
    // One sync asked for both stores, under the newest.
    expect(recorded.named('publish sync').map((s) => s.parentSpanContext?.spanId)).toEqual([
      merged?.spanContext().spanId,
    ]);
  });

  it('asks for the sync a change owes under its store when the same inventory follows before it is asked for', async () => {
    writer.owesSync = true;
    await settle();
    connector.last(A).send(gpus(2), DRIVER);
    // The change's store is in flight: the copy is stored next, before the sync is asked for.
    connector.last(A).send(gpus(2), OTHER_DRIVER);
    await settle();

    const stores = recorded.named('store snapshot');
    expect(stores.map((s) => s.attributes['slicekeeper.outcome']).sort()).toEqual([
      'stored',
      'unsynced',
    ]);
    const change = stores.find((s) => s.attributes['slicekeeper.outcome'] === 'stored');
    const copy = stores.find((s) => s.attributes['slicekeeper.outcome'] === 'unsynced');
    expect(change?.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(copy?.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    // One sync, in the change's trace: the copy added nothing to it.
    expect(recorded.named('publish sync').map((s) => s.parentSpanContext?.spanId)).toEqual([
      change?.spanContext().spanId,
    ]);
    expect(queue.reasons()).toEqual(['first-snapshot']);
  });

  it('ignores a traceparent that is not one: warned once naming the rule, the message stored', async () => {
    connector.last(A).send(gpus(2), '00-not-a-trace-01');
    connector.last(A).send(gpus(3), 'garbage');
    await settle();

    const warnings = lines.filter((line) => line.msg === 'traceparent ignored');
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        traceparent: '00-not-a-trace-01',
        rule: TRACEPARENT_RULE,
      }),
    ]);
    expect(writer.inventory()).toEqual(gpus(3));
    const receives = recorded.named('receive inventory');
    expect(receives).toHaveLength(2);
    for (const span of receives) expect(span.parentSpanContext).toBeUndefined();
    const last = receives[1]?.spanContext();
    expect(storedTraceparents()?.at(-1)).toBe(last && formatTraceparent(last));
  });

  it('ends the span of a rejected message with status error and the problem, and stores it', async () => {
    connector.last(A).send(gpus(2));
    await settle();
    recorded.reset();
    connector.last(A).reject('pools[0].generation: out of range', false, DRIVER);
    await settle();

    const [receive] = recorded.named('receive inventory');
    expect(receive?.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: 'pools[0].generation: out of range',
    });
    expect(receive?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(writer.rejection()).toBe('pools[0].generation: out of range');
    const [store] = recorded.named('store snapshot');
    expect(store?.parentSpanContext?.spanId).toBe(receive?.spanContext().spanId);
    expect(store?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('ends a failed write with status error; its retry has its own span, for the same message', async () => {
    writer.failures = 1;
    connector.last(A).send(gpus(2), DRIVER);
    await settle();
    await clock.advance(1000);

    const [receive] = recorded.named('receive inventory');
    const stores = recorded.named('store snapshot');
    expect(stores.map((s) => s.status)).toEqual([
      { code: SpanStatusCode.ERROR, message: 'connection lost' },
      { code: SpanStatusCode.UNSET },
    ]);
    for (const store of stores) {
      expect(store.parentSpanContext?.spanId).toBe(receive?.spanContext().spanId);
    }
    expect(stores[1]?.attributes['slicekeeper.outcome']).toBe('stored');
    const context = receive?.spanContext();
    expect(storedTraceparents()).toEqual(context === undefined ? [] : [formatTraceparent(context)]);
  });

  it('makes no span and stores no traceparent without tracing, whatever the driver sends', async () => {
    const untraced = new KeyWatch({
      key: { node: 'node-b', driver: 'gpu.example.com' },
      writer,
      queue,
      connector: connector.connect,
      clock,
      wipeDelayMs: 30_000,
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
    untraced.setRegistrations([registration(A, 1, { node: 'node-b', driver: 'gpu.example.com' })]);
    connector.last(A).send(gpus(2), DRIVER);
    await settle();
    await untraced.close('test over');

    expect(writer.snapshots.get('node-b/gpu.example.com')?.traceparents).toEqual([]);
    // Not even through OpenTelemetry's global tracer, which `recorded` is.
    expect(recorded.spans()).toEqual([]);
  });
});
