import { Writable } from 'node:stream';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { ClusterCache, KubeSliceClient, KubeTransport } from '@slicekeeper/kube';
import { createLogger } from '@slicekeeper/observability';
import { RegistrationStore, SyncRecords } from '@slicekeeper/state';
import { redisKeys } from '@slicekeeper/state/testing';
import type { RedisKeys } from '@slicekeeper/state/testing';
import { SpanKind, SpanStatusCode } from '@slicekeeper/telemetry';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { Reconciler } from './reconciler';
import { silentLogger } from './testing/fakes';

const key = { node: '', driver: 'gpu.example.com' };
/** Two messages of the driver, coalesced into one snapshot: the stored one last. */
const FIRST = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const SECOND = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function snapshot(generation: number, traceparents?: string[]): string {
  return JSON.stringify({
    generation,
    receivedAt: new Date().toISOString(),
    endpoint: 'unix:///run/driver.sock',
    ...(traceparents === undefined ? {} : { traceparents }),
    inventory: {
      pools: [{ name: 'fabric', scope: { kind: 'all-nodes' }, devices: [{ name: 'a' }] }],
    },
  });
}

/** Log lines as parsed JSON, written by a logger that stamps trace ids (tracing on). */
function capturedLogger() {
  const lines: { msg: string; trace_id?: string; span_id?: string }[] = [];
  const destination = new Writable({
    write: (chunk: Buffer, _encoding, callback) => {
      lines.push(JSON.parse(chunk.toString()) as { msg: string });
      callback();
    },
  });
  const logger = createLogger({ service: 'test', level: 'debug', destination, traceIds: true });
  return { lines, logger };
}

/** The reconciler's spans with its real parts: Redis records, the emulator, a watch-fed cache. */
describe('Reconciler tracing (Redis, kube emulator)', () => {
  const db = useRedisServer();
  const recorded = recordedTracing('slice-syncer');
  let kube: RunningKubeEmulator;
  let transport: KubeTransport;
  let cluster: ClusterCache;
  let api: KubeSliceClient;
  let keys: RedisKeys;
  let records: SyncRecords;

  beforeAll(async () => {
    kube = await startKubeEmulator({ port: 0 });
    transport = new KubeTransport(
      { kind: 'yaml', text: kube.kubeconfig },
      { tracing: recorded.tracing },
    );
    api = new KubeSliceClient({ transport });
    cluster = new ClusterCache({ transport, logger: silentLogger });
    await cluster.start();
  });
  afterAll(async () => {
    await cluster.close();
    await api.close();
    transport.close();
    await kube.close();
    await recorded.shutdown();
  });
  beforeEach(async () => {
    const prefix = uniquePrefix('reconciler-tracing');
    keys = redisKeys(prefix);
    records = new SyncRecords({ redis: db.redis, prefix });
    for (const slice of cluster.slicesOf(key)) await api.deleteSlice(slice.metadata);
    await new RegistrationStore({ redis: db.redis, prefix }).add({
      ...key,
      endpoint: 'unix:///run/driver.sock',
      version: 'v1.ResourcePublisher',
    });
    recorded.reset();
  });

  function reconciler(logger = silentLogger, tracing = true): Reconciler {
    return new Reconciler({
      records,
      cluster,
      api,
      logger,
      ...(tracing ? { tracing: recorded.tracing } : {}),
    });
  }

  it('makes one sync of two coalesced messages a child of the last, linked to both', async () => {
    const { lines, logger } = capturedLogger();
    await db.redis.set(keys.snapshot(key), snapshot(3, [FIRST, SECOND]));
    const { status } = await reconciler(logger).reconcile(key, {
      jobId: 'job-7',
      attempt: 1,
      reason: 'snapshot',
    });

    const [sync] = recorded.named('process sync');
    expect(sync?.kind).toBe(SpanKind.CONSUMER);
    expect(sync?.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(sync?.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(sync?.links.map((l) => l.context.spanId)).toEqual([
      '00f067aa0ba902b7',
      'b7ad6b7169203331',
    ]);
    expect(sync?.attributes).toEqual({
      'messaging.system': 'bullmq',
      'messaging.destination.name': 'slicekeeper-sync',
      'messaging.operation.type': 'process',
      'messaging.message.id': 'job-7',
      'slicekeeper.node': '',
      'slicekeeper.driver': 'gpu.example.com',
      'slicekeeper.attempt': 1,
      'slicekeeper.reason': 'snapshot',
      'slicekeeper.outcome': 'synced',
      'slicekeeper.snapshot_generation': 3,
      'slicekeeper.writes': 1,
    });
    expect(sync?.status.code).toBe(SpanStatusCode.UNSET);

    // The plan and the write are its children.
    const [plan] = recorded.named('plan');
    const [post] = recorded.named('POST');
    expect(plan?.parentSpanContext?.spanId).toBe(sync?.spanContext().spanId);
    expect(plan?.attributes).toMatchObject({ 'slicekeeper.plan.creates': 1 });
    expect(post?.kind).toBe(SpanKind.CLIENT);
    expect(post?.parentSpanContext?.spanId).toBe(sync?.spanContext().spanId);
    expect(post?.attributes['http.response.status_code']).toBe(201);

    // The status shows the trace; the sync's log lines carry it.
    expect(status?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(JSON.parse((await db.redis.get(keys.syncStatus(key))) ?? '{}')).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
    });
    const synced = lines.find((line) => line.msg === 'synced');
    expect(synced).toMatchObject({
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      span_id: sync?.spanContext().spanId,
    });
  });

  it('fails the span of a failed write, and its retry is another sync of the same trace', async () => {
    const { lines, logger } = capturedLogger();
    const syncer = reconciler(logger);
    await db.redis.set(keys.snapshot(key), snapshot(4, [FIRST, SECOND]));
    kube.emulator.injectFault({ verb: 'create', resource: 'resourceslices', status: 500 });
    const first = await syncer.reconcile(key, { jobId: 'job-8', attempt: 1, reason: 'snapshot' });
    expect(first.outcome).toBe('retrying');
    const second = await syncer.reconcile(key, { jobId: 'job-8', attempt: 2, reason: 'snapshot' });
    expect(second.outcome).toBe('synced');

    const syncs = recorded.named('process sync');
    expect(syncs.map((s) => [s.attributes['slicekeeper.attempt'], s.status.code])).toEqual([
      [1, SpanStatusCode.ERROR],
      [2, SpanStatusCode.UNSET],
    ]);
    expect(syncs[0]?.status.message).toContain('create ResourceSlice');
    expect(syncs[0]?.attributes['slicekeeper.outcome']).toBe('retrying');
    expect(new Set(syncs.map((s) => s.spanContext().traceId))).toEqual(
      new Set(['0af7651916cd43dd8448eb211c80319c']),
    );
    expect(syncs.map((s) => s.parentSpanContext?.spanId)).toEqual([
      'b7ad6b7169203331',
      'b7ad6b7169203331',
    ]);
    const posts = recorded.named('POST');
    expect(posts.map((s) => [s.attributes['http.response.status_code'], s.status.code])).toEqual([
      [500, SpanStatusCode.ERROR],
      [201, SpanStatusCode.UNSET],
    ]);
    expect(posts.map((s) => s.parentSpanContext?.spanId)).toEqual(
      syncs.map((s) => s.spanContext().spanId),
    );
    expect(posts[0]?.attributes['error.type']).toBe('500');
    expect(first.status?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(lines.find((line) => line.msg === 'sync failed, will retry')?.trace_id).toBe(
      '0af7651916cd43dd8448eb211c80319c',
    );
  });

  it('makes a sync of a snapshot without traceparents (a resync) a root span', async () => {
    await db.redis.set(keys.snapshot(key), snapshot(1));
    const { status } = await reconciler().reconcile(key, {
      jobId: 'job-9',
      attempt: 1,
      reason: 'resync',
    });
    const [sync] = recorded.named('process sync');
    expect(sync?.parentSpanContext).toBeUndefined();
    expect(sync?.links).toEqual([]);
    expect(status?.traceId).toBe(sync?.spanContext().traceId);
  });

  it('makes no sync span and records no trace id with tracing off', async () => {
    await db.redis.set(keys.snapshot(key), snapshot(1, [FIRST]));
    const { status } = await reconciler(silentLogger, false).reconcile(key, {
      jobId: 'job-10',
      attempt: 1,
      reason: 'snapshot',
    });
    expect(status?.outcome).toBe('synced');
    expect(status?.traceId).toBeUndefined();
    expect(recorded.named('process sync')).toEqual([]);
  });
});
