import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SLICEKEEPER_DRIVER,
  ATTR_SLICEKEEPER_NODE,
  ATTR_SLICEKEEPER_OUTCOME,
  ATTR_SLICEKEEPER_SNAPSHOT_GENERATION,
  ATTR_URL_FULL,
} from '@slicekeeper/telemetry';
import { PUBLISH_SYNC_SPAN } from '@slicekeeper/queue';
import { RECEIVE_SPAN, STORE_SPAN } from '@slicekeeper/watcher';
import { OtlpReceiver } from '@slicekeeper/testing';
import { ProductionTree, System, gpuInventory, publishes } from './harness';
import type { ReceivedSpan } from '@slicekeeper/testing';
import type { ExampleDriverProcess, InProcessDriver } from './harness';

const GPU = 'gpu.example.com';

/** The spans of one change, by service, as each part names them. */
const SPANS = {
  /** The example driver's, around each inventory it sends (the root of a change's trace). */
  driverPublish: 'publish inventory',
  /** The watcher's, per message: a child of the driver's span when it sent a traceparent. */
  receive: RECEIVE_SPAN,
  /** The watcher's snapshot write: a child of the last message it stored, linked to the others. */
  store: STORE_SPAN,
  /** The watcher's enqueue of the key's sync: a child of the store that owes it. */
  enqueue: PUBLISH_SYNC_SPAN,
  /** The syncer's, per sync attempt: a child of the snapshot's last message, linked to all. */
  process: 'process sync',
  plan: 'plan',
} as const;
/** The registration API's probe of a plugin (a gRPC CLIENT span, named by its method). */
const PROBE_SPAN = 'pluginregistration.Registration/GetInfo';
/** The attempt of a sync's job (1 for the first run), on `process sync`. */
const ATTR_ATTEMPT = 'slicekeeper.attempt';

/** The default OTLP/HTTP endpoint's port (localhost:4318), where a service tracing by default would send. */
const DEFAULT_OTLP_PORT = 4318;

/** One trace's spans, with their family relations. */
class Trace {
  private readonly byId: Map<string, ReceivedSpan>;

  constructor(
    readonly traceId: string,
    readonly spans: readonly ReceivedSpan[],
  ) {
    this.byId = new Map(spans.map((s) => [s.spanId, s]));
  }

  named(service: string, name: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.service === service && s.name === name);
  }

  one(service: string, name: string): ReceivedSpan {
    const found = this.named(service, name);
    if (found.length !== 1) {
      throw new Error(`${service} "${name}": ${found.length} spans in trace ${this.traceId}`);
    }
    return found[0] as ReceivedSpan;
  }

  /** Whether `span` is `ancestor` or lies below it. */
  descendsFrom(span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
    for (let at: ReceivedSpan | undefined = span; at !== undefined; ) {
      if (at.spanId === ancestor.spanId) return true;
      at = at.parentSpanId === undefined ? undefined : this.byId.get(at.parentSpanId);
    }
    return false;
  }

  /** The syncer's ResourceSlice writes (HTTP CLIENT spans) below `sync`. */
  sliceWrites(sync: ReceivedSpan): ReceivedSpan[] {
    return this.spans.filter(
      (s) =>
        s.service === 'slice-syncer' &&
        s.kind === 'client' &&
        isSliceUrl(s.attributes[ATTR_URL_FULL]) &&
        this.descendsFrom(s, sync),
    );
  }
}

function isSliceUrl(url: unknown): boolean {
  return typeof url === 'string' && new URL(url).pathname.includes('/resourceslices');
}

function statusCode(span: ReceivedSpan): number {
  return Number(span.attributes[ATTR_HTTP_RESPONSE_STATUS_CODE]);
}

function is2xx(span: ReceivedSpan): boolean {
  return statusCode(span) >= 200 && statusCode(span) < 300;
}

/**
 * The trace of an example-driver publish, but none of `excluded`, whose sync wrote the slice
 * (answered 2xx), with the watcher's store and enqueue and the syncer's plan in it.
 */
function writtenTrace(
  spans: readonly ReceivedSpan[],
  excluded: ReadonlySet<string>,
): Trace | undefined {
  const traceIds = spans
    .filter((s) => s.service === 'example-driver' && s.name === SPANS.driverPublish)
    .map((s) => s.traceId)
    .filter((id) => !excluded.has(id));
  for (const traceId of traceIds) {
    const candidate = new Trace(
      traceId,
      spans.filter((s) => s.traceId === traceId),
    );
    const syncs = candidate.named('slice-syncer', SPANS.process);
    const wrote = syncs.some((sync) => candidate.sliceWrites(sync).some(is2xx));
    const complete =
      candidate.named('plugin-watcher', SPANS.store).length > 0 &&
      candidate.named('plugin-watcher', SPANS.enqueue).length > 0 &&
      candidate.named('slice-syncer', SPANS.plan).length > 0;
    if (wrote && complete) return candidate;
  }
  return undefined;
}

function ofKey(span: ReceivedSpan, node: string): boolean {
  return span.attributes[ATTR_SLICEKEEPER_NODE] === node;
}

/**
 * Acceptance of issue 30: every service a process (compiled, as the images run them), the kube
 * emulator, and an OTLP/HTTP receiver that every service and the example driver export to.
 */
describe('tracing one change across the services (compiled, as the images run)', () => {
  let tree: ProductionTree | undefined;
  let receiver: OtlpReceiver;
  let system: System;
  let exampleDriver: ExampleDriverProcess;
  let inProcess: InProcessDriver;
  /** The trace of scenario (a)'s change, for the logs and the status in (d). */
  let changeTrace: Trace | undefined;

  beforeAll(async () => {
    tree = await ProductionTree.prepare((line) => process.stdout.write(`tracing: ${line}\n`));
    receiver = await OtlpReceiver.start();
    system = await System.start({
      name: 'tracing',
      nodes: ['node-a', 'node-b'],
      production: tree,
      commonEnv: receiver.otelEnv(),
      // Only the changes sync: no periodic resync records another trace id meanwhile. At debug
      // level, every sync logs (its outcome).
      syncerEnv: { RESYNC_INTERVAL: '1h', LOG_LEVEL: 'debug' },
    });
    exampleDriver = await system.exampleDriver({
      node: 'node-a',
      driver: GPU,
      inventory: gpuInventory({ rev: 0 }),
    });
    // The test's own process traces nothing: its messages carry no traceparent.
    inProcess = await system.inProcessDriver({
      node: 'node-b',
      driver: GPU,
      inventory: gpuInventory({ rev: 0 }),
    });
    await system.until('both drivers published', async () => {
      const slices = await system.emulator.slices();
      return (
        publishes(
          slices.filter((s) => s.spec.nodeName === 'node-a'),
          gpuInventory({ rev: 0 }),
        ) &&
        publishes(
          slices.filter((s) => s.spec.nodeName === 'node-b'),
          gpuInventory({ rev: 0 }),
        )
      );
    });
  }, 20 * 60_000);

  afterAll(async () => {
    // Undefined when the build or the tree failed.
    await (system as System | undefined)?.close();
    await (receiver as OtlpReceiver | undefined)?.close();
    await tree?.close();
  });

  it('(a) one inventory change is one trace: driver → watcher (receive, store, enqueue) → syncer (process, plan) → the API write', async () => {
    // The first publish's spans may still sit in the services' export batches: until its trace
    // has arrived, it would pass for the change's (its sync wrote too, a create).
    await receiver.waitFor(
      'the trace of the first publish, from the driver to the write',
      (spans) => writtenTrace(spans, new Set()),
    );
    const before = new Set(
      receiver
        .spans()
        .filter((s) => s.name === SPANS.driverPublish)
        .map((s) => s.traceId),
    );
    const changed = gpuInventory({ rev: 1 });
    await exampleDriver.publish(changed);
    await system.until('the change published', async () =>
      publishes(await system.emulator.slices({ node: 'node-a' }), changed),
    );
    // The example driver may send the same file twice (its file watch and SIGHUP): the change is
    // the trace whose sync wrote.
    const trace = await receiver.waitFor(
      'the trace of the change, from the driver to the write',
      (spans) => writtenTrace(spans, before),
    );
    changeTrace = trace;

    // The driver started the trace.
    const root = trace.one('example-driver', SPANS.driverPublish);
    expect(root.parentSpanId).toBeUndefined();
    expect(root.attributes).toMatchObject({
      [ATTR_SLICEKEEPER_NODE]: 'node-a',
      [ATTR_SLICEKEEPER_DRIVER]: GPU,
    });
    // The watcher took the driver's traceparent.
    const receive = trace.one('plugin-watcher', SPANS.receive);
    expect(receive).toMatchObject({
      kind: 'consumer',
      parentSpanId: root.spanId,
      attributes: { [ATTR_SLICEKEEPER_NODE]: 'node-a', [ATTR_SLICEKEEPER_DRIVER]: GPU },
    });
    const store = trace.one('plugin-watcher', SPANS.store);
    // The snapshot write: a child of the message it stored.
    expect(store).toMatchObject({ parentSpanId: receive.spanId, status: { code: 'unset' } });
    const generation = store.attributes[ATTR_SLICEKEEPER_SNAPSHOT_GENERATION];
    expect(typeof generation).toBe('number');
    // The sync asked for by the store that owes it.
    const enqueue = trace.one('plugin-watcher', SPANS.enqueue);
    expect(enqueue).toMatchObject({
      kind: 'producer',
      parentSpanId: store.spanId,
      attributes: { [ATTR_SLICEKEEPER_NODE]: 'node-a', 'messaging.operation.type': 'send' },
    });

    // The syncer's sync: a child of the message it published, linked to it.
    const sync = trace
      .named('slice-syncer', SPANS.process)
      .find((s) => trace.sliceWrites(s).some(is2xx));
    expect(sync).toMatchObject({
      kind: 'consumer',
      parentSpanId: receive.spanId,
      status: { code: 'unset' },
      attributes: {
        [ATTR_SLICEKEEPER_NODE]: 'node-a',
        [ATTR_SLICEKEEPER_DRIVER]: GPU,
        [ATTR_SLICEKEEPER_SNAPSHOT_GENERATION]: generation,
        [ATTR_ATTEMPT]: 1,
        [ATTR_SLICEKEEPER_OUTCOME]: 'synced',
      },
    });
    if (sync === undefined) return;
    expect(sync.links.map((l) => l.spanId)).toContain(receive.spanId);
    expect(
      trace.named('slice-syncer', SPANS.plan).some((p) => p.parentSpanId === sync.spanId),
    ).toBe(true);
    // The API write: one update of the pool's one slice, answered 200.
    const writes = trace.sliceWrites(sync);
    expect(
      writes.map((w) => [w.name, w.attributes[ATTR_HTTP_REQUEST_METHOD], statusCode(w)]),
    ).toEqual([['PUT', 'PUT', 200]]);
    expect(writes[0]?.status.code).toBe('unset');
    // Every service of the chain is in the one trace, and nothing in it failed.
    expect(new Set(trace.spans.map((s) => s.service))).toEqual(
      new Set(['example-driver', 'plugin-watcher', 'slice-syncer']),
    );
    expect(trace.spans.filter((s) => s.status.code === 'error')).toEqual([]);
    // No other trace holds a sync of this snapshot.
    const elsewhere = receiver
      .spans()
      .filter(
        (s) =>
          s.name === SPANS.process &&
          ofKey(s, 'node-a') &&
          s.attributes[ATTR_SLICEKEEPER_SNAPSHOT_GENERATION] === generation &&
          s.traceId !== trace.traceId,
      );
    expect(elsewhere).toEqual([]);
  }, 60_000);

  it('a driver’s registration is a SERVER span of the registration API, its probe of the driver a CLIENT span below it', async () => {
    const registrations = await receiver.waitFor('the registrations’ spans', (spans) => {
      const found = spans
        .filter((s) => s.service === 'registration-api' && s.name === 'POST /v1/plugins')
        .map(
          (server) =>
            new Trace(
              server.traceId,
              spans.filter((s) => s.traceId === server.traceId),
            ),
        )
        .filter((t) => t.named('registration-api', PROBE_SPAN).length > 0);
      return found.length >= 2 ? found : undefined;
    });
    for (const trace of registrations) {
      const server = trace.one('registration-api', 'POST /v1/plugins');
      expect(server).toMatchObject({
        kind: 'server',
        status: { code: 'unset' },
        attributes: { [ATTR_HTTP_REQUEST_METHOD]: 'POST', [ATTR_HTTP_RESPONSE_STATUS_CODE]: 201 },
      });
      const probe = trace.one('registration-api', PROBE_SPAN);
      expect(trace.descendsFrom(probe, server)).toBe(true);
      expect(probe).toMatchObject({
        kind: 'client',
        status: { code: 'unset' },
        attributes: {
          'rpc.system.name': 'grpc',
          'rpc.method': PROBE_SPAN,
          [ATTR_SLICEKEEPER_DRIVER]: GPU,
        },
      });
    }
  }, 30_000);

  it('(d) the log lines of that sync carry its trace id, and the key status shows it', async () => {
    const trace = changeTrace;
    if (trace === undefined) throw new Error('scenario (a) found no trace');
    const lines = (await system.logEntries('slice-syncer-1')).filter(
      (e) => e.trace_id === trace.traceId,
    );
    const sync = trace
      .named('slice-syncer', SPANS.process)
      .find((s) => trace.sliceWrites(s).some(is2xx));
    const synced = lines.filter((e) => e.msg === 'synced');
    // The sync that wrote logged it, with its span.
    expect(synced.filter((e) => Number(e.writes) > 0).map((e) => e.span_id)).toEqual([
      sync?.spanId,
    ]);
    // Any other is a sync of the same snapshot that wrote nothing, in the same trace: the
    // driver's second copy of the file (SIGHUP, then its 500 ms poll) arrived before the first
    // sync was recorded, and a snapshot that still owes a sync asks for it again.
    const others = synced.filter((e) => e.span_id !== sync?.spanId);
    expect(others.map((e) => e.writes)).toEqual(others.map(() => 0));
    const otherSyncs = await receiver.waitFor('the spans of the other syncs logged', (spans) => {
      const found = spans.filter((s) => others.some((e) => e.span_id === s.spanId));
      return found.length === others.length ? found : undefined;
    });
    for (const other of otherSyncs) {
      expect(other).toMatchObject({
        traceId: trace.traceId,
        name: SPANS.process,
        attributes: {
          [ATTR_SLICEKEEPER_SNAPSHOT_GENERATION]:
            sync?.attributes[ATTR_SLICEKEEPER_SNAPSHOT_GENERATION],
          [ATTR_SLICEKEEPER_OUTCOME]: 'synced',
        },
      });
    }
    // Each names a span of the syncer in that trace.
    const syncerSpans = new Set(
      receiver
        .spans()
        .filter((s) => s.traceId === trace.traceId && s.service === 'slice-syncer')
        .map((s) => s.spanId),
    );
    for (const line of lines) expect(syncerSpans).toContain(line.span_id);
    // The status of the key records the trace of its last sync: the change's, or that of the
    // same file sent a second time, if that one synced after it.
    const lastSync = receiver
      .spans()
      .filter((s) => s.name === SPANS.process && ofKey(s, 'node-a'))
      .reduce((a, b) => (b.endTimeUnixNano > a.endTimeUnixNano ? b : a));
    const status = await system.status('node-a', GPU);
    expect(status?.sync?.traceId).toBe(lastSync.traceId);
    const driverTraces = new Set(
      receiver
        .spans()
        .filter((s) => s.service === 'example-driver')
        .map((s) => s.traceId),
    );
    expect(driverTraces).toContain(status?.sync?.traceId);
  }, 30_000);

  it('(b) two messages coalesced into one sync are both linked', async () => {
    const receivesOfB = (spans: readonly ReceivedSpan[]): ReceivedSpan[] =>
      spans.filter(
        (s) => s.service === 'plugin-watcher' && s.name === SPANS.receive && ofKey(s, 'node-b'),
      );
    /** The next message of node-b, once the watcher stored it. */
    const storedAfter = async (previous: number): Promise<ReceivedSpan> =>
      receiver.waitFor('the message received and stored', (spans) => {
        const received = receivesOfB(spans);
        const latest = received.at(-1);
        if (received.length <= previous || latest === undefined) return undefined;
        // The store of a message is its child, or links to it when it merged several.
        const stored = spans.some(
          (s) =>
            s.name === SPANS.store &&
            (s.parentSpanId === latest.spanId || s.links.some((l) => l.spanId === latest.spanId)),
        );
        return stored ? latest : undefined;
      });

    await system.stopService('slice-syncer-1');
    const first = receivesOfB(receiver.spans()).length;
    inProcess.publish(gpuInventory({ rev: 2 }));
    const second = await storedAfter(first);
    inProcess.publish(gpuInventory({ rev: 3 }));
    const third = await storedAfter(first + 1);
    // Without a traceparent from the driver, each message starts a trace of its own.
    expect(second.parentSpanId).toBeUndefined();
    expect(third.traceId).not.toBe(second.traceId);

    await system.startService('slice-syncer-1');
    await system.until('the last inventory published', async () =>
      publishes(await system.emulator.slices({ node: 'node-b' }), gpuInventory({ rev: 3 })),
    );
    const syncs = await receiver.waitFor('the sync of both messages', (spans) => {
      const found = spans.filter(
        (s) =>
          s.name === SPANS.process &&
          s.links.some((l) => l.spanId === second.spanId || l.spanId === third.spanId),
      );
      return found.length > 0 ? found : undefined;
    });
    // One sync for both: linked to each message's receive span, a child of the last.
    expect(syncs).toHaveLength(1);
    const [sync] = syncs;
    expect(sync?.links.map((l) => l.spanId)).toEqual(
      expect.arrayContaining([second.spanId, third.spanId]),
    );
    expect(sync).toMatchObject({
      traceId: third.traceId,
      parentSpanId: third.spanId,
      status: { code: 'unset' },
      attributes: { [ATTR_SLICEKEEPER_NODE]: 'node-b', [ATTR_SLICEKEEPER_OUTCOME]: 'synced' },
    });
  }, 90_000);

  it('(c) a failed write and its retry are spans of the same trace, with their status', async () => {
    const [slice] = await system.emulator.slices({ node: 'node-b' });
    if (slice === undefined) throw new Error('node-b has no slice');
    await system.emulator.injectFault({
      verb: 'update',
      resource: 'resourceslices',
      name: slice.metadata.name,
      status: 500,
      times: 1,
    });
    const seen = new Set(receiver.spans().map((s) => s.traceId));
    const changed = gpuInventory({ rev: 4 });
    inProcess.publish(changed);
    await system.until('the change published despite the failed write', async () =>
      publishes(await system.emulator.slices({ node: 'node-b' }), changed),
    );
    const trace = await receiver.waitFor('the failed sync and its retry', (spans) => {
      const receive = spans.find(
        (s) => s.name === SPANS.receive && ofKey(s, 'node-b') && !seen.has(s.traceId),
      );
      if (receive === undefined) return undefined;
      const candidate = new Trace(
        receive.traceId,
        spans.filter((s) => s.traceId === receive.traceId),
      );
      return candidate.named('slice-syncer', SPANS.process).length >= 2 ? candidate : undefined;
    });

    const syncs = trace
      .named('slice-syncer', SPANS.process)
      .sort((a, b) => Number(a.startTimeUnixNano - b.startTimeUnixNano));
    expect(syncs).toHaveLength(2);
    const [failed, retry] = syncs as [ReceivedSpan, ReceivedSpan];
    expect(failed).toMatchObject({
      status: { code: 'error' },
      attributes: { [ATTR_ATTEMPT]: 1, [ATTR_SLICEKEEPER_OUTCOME]: 'retrying' },
    });
    expect(retry).toMatchObject({
      status: { code: 'unset' },
      attributes: { [ATTR_ATTEMPT]: 2, [ATTR_SLICEKEEPER_OUTCOME]: 'synced' },
    });
    expect(retry.startTimeUnixNano).toBeGreaterThanOrEqual(failed.endTimeUnixNano);
    // Both are children of the one message.
    const receive = trace.one('plugin-watcher', SPANS.receive);
    expect([failed.parentSpanId, retry.parentSpanId]).toEqual([receive.spanId, receive.spanId]);
    // The write the API refused, then the one it took.
    const failedWrites = trace.sliceWrites(failed);
    expect(failedWrites.map((w) => [w.name, statusCode(w), w.status.code])).toEqual([
      ['PUT', 500, 'error'],
    ]);
    expect(failedWrites[0]?.attributes['error.type']).toBe('500');
    expect(trace.sliceWrites(retry).map((w) => [w.name, statusCode(w), w.status.code])).toEqual([
      ['PUT', 200, 'unset'],
    ]);
    // The failed sync's log line names it.
    const logged = (await system.logEntries('slice-syncer-1')).filter(
      (e) => e.trace_id === trace.traceId,
    );
    expect(logged.filter((e) => e.msg === 'sync failed, will retry')).toEqual([
      expect.objectContaining({ span_id: failed.spanId, node: 'node-b', attempt: 1 }),
    ]);
  }, 60_000);
});

describe('tracing off (the default)', () => {
  let receiver: OtlpReceiver;
  let system: System;

  beforeAll(async () => {
    // Where the services would send spans if tracing were on by default (OTLP's default endpoint).
    receiver = await OtlpReceiver.start({ port: DEFAULT_OTLP_PORT });
    system = await System.start({
      name: 'tracing-off',
      nodes: ['node-a'],
      // Every OTEL_* setting the tracing scenarios use but the endpoint.
      commonEnv: { OTEL_TRACES_SAMPLER: 'always_on', OTEL_BSP_SCHEDULE_DELAY: '100ms' },
    });
  }, 90_000);

  afterAll(async () => {
    await (system as System | undefined)?.close();
    await (receiver as OtlpReceiver | undefined)?.close();
  });

  it('(e) sends no span anywhere, and no log line carries a trace id', async () => {
    const driver = await system.exampleDriver({
      node: 'node-a',
      driver: GPU,
      inventory: gpuInventory({ rev: 0 }),
    });
    const changed = gpuInventory({ rev: 1 });
    await driver.publish(changed);
    await system.until('the change published', async () =>
      publishes(await system.emulator.slices({ node: 'node-a' }), changed),
    );
    const status = await system.status('node-a', GPU);
    expect(status?.sync?.outcome).toBe('synced');
    expect(status?.sync?.traceId).toBeUndefined();
    // Stopping flushes whatever a service would have buffered for export.
    await driver.close();
    await Promise.all(
      (['registration-api', 'plugin-watcher', ...system.syncers] as const).map((name) =>
        system.stopService(name),
      ),
    );
    expect(receiver.requests).toEqual({ accepted: 0, rejected: 0 });
    for (const name of [
      'registration-api',
      'plugin-watcher',
      'slice-syncer-1',
      `example-driver-node-a-${GPU}`,
    ]) {
      const entries = await system.logEntries(name);
      expect(entries.length).toBeGreaterThan(0);
      expect(entries.filter((e) => 'trace_id' in e || 'span_id' in e)).toEqual([]);
      expect(entries.filter((e) => e.msg === 'tracing to an OTLP/HTTP endpoint')).toEqual([]);
    }
  }, 60_000);
});
