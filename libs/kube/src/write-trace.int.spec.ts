import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import type { ResourceSlice } from '@slicekeeper/slices';
import { SpanKind, SpanStatusCode, formatTraceparent } from '@slicekeeper/telemetry';
import { recordedTracing } from '@slicekeeper/telemetry/testing';
import { waitFor } from '@slicekeeper/testing';
import { ClusterCache } from './cluster-cache';
import { EventRecorder } from './event-recorder';
import { KubeEventClient } from './kube-event-client';
import { KubeNodeStatusClient } from './kube-node-status-client';
import { KubeSliceClient } from './kube-slice-client';
import { KubeTransport } from './kube-transport';

const recorded = recordedTracing('kube-spec');
afterAll(() => recorded.shutdown());

/** A managed slice on all nodes, as the planner would build it. */
function slice(): ResourceSlice {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      generateName: '00000-gpu.example.com--',
      labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' },
    },
    spec: {
      driver: 'gpu.example.com',
      pool: { name: 'fabric', generation: 1, resourceSliceCount: 1 },
      allNodes: true,
      devices: [{ name: 'gpu-0' }],
    },
  };
}

describe('API writes with tracing on (kube emulator)', () => {
  let running: RunningKubeEmulator;
  let transport: KubeTransport;
  let api: KubeSliceClient;
  let cluster: ClusterCache;

  beforeEach(async () => {
    running = await startKubeEmulator({ port: 0 });
    transport = new KubeTransport(
      { kind: 'yaml', text: running.kubeconfig },
      { tracing: recorded.tracing },
    );
    api = new KubeSliceClient({ transport });
    cluster = new ClusterCache({
      transport,
      logger: { debug: () => undefined, info: () => undefined, warn: () => undefined },
    });
    await cluster.start();
    recorded.reset();
  });
  afterEach(async () => {
    await cluster.close();
    transport.close();
    await running.close();
  });

  it('makes each write a client span, a child of the active span, with its answer', async () => {
    const created = await recorded.tracing.inSpan('process sync', {}, () =>
      api.createSlice(slice()),
    );
    await api.listSlices({ node: '', driver: 'gpu.example.com' });
    await api.deleteSlice(created.metadata);

    const [sync] = recorded.named('process sync');
    const [post] = recorded.named('POST');
    const [del] = recorded.named('DELETE');
    const url = new URL(running.url);
    expect(post?.kind).toBe(SpanKind.CLIENT);
    expect(post?.parentSpanContext?.spanId).toBe(sync?.spanContext().spanId);
    expect(post?.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.full': `${running.url.replace(/\/$/, '')}/apis/resource.k8s.io/v1/resourceslices?fieldManager=slicekeeper`,
      'server.address': url.hostname,
      'server.port': Number(url.port),
      'http.response.status_code': 201,
      'slicekeeper.kube.verb': 'create',
      'slicekeeper.kube.resource': 'resourceslices',
      'slicekeeper.kube.name': created.metadata.name,
      'slicekeeper.kube.resource_version': created.metadata.resourceVersion,
    });
    expect(post?.status.code).toBe(SpanStatusCode.UNSET);
    // Outside any span: a root.
    expect(del?.parentSpanContext).toBeUndefined();
    expect(del?.attributes['http.response.status_code']).toBe(200);
    // Lists and watches are not traced.
    expect(recorded.spans().map((s) => s.name)).not.toContain('GET');
  });

  it('ends a refused write with status error and the HTTP status as error.type', async () => {
    running.emulator.injectFault({ verb: 'create', resource: 'resourceslices', status: 500 });
    await expect(api.createSlice(slice())).rejects.toThrow(/create ResourceSlice/);
    const [post] = recorded.named('POST');
    expect(post?.status.code).toBe(SpanStatusCode.ERROR);
    expect(post?.attributes).toMatchObject({
      'http.response.status_code': 500,
      'error.type': '500',
    });
  });

  it('records the watch echo of a recorded write as a child of its span', async () => {
    const created = await api.createSlice(slice());
    cluster.recordWrite(created);
    await waitFor(() => recorded.named('watch echo').length === 1, { description: 'echo' });
    const [post] = recorded.named('POST');
    const [echo] = recorded.named('watch echo');
    expect(echo?.parentSpanContext?.spanId).toBe(post?.spanContext().spanId);
    expect(echo?.spanContext().traceId).toBe(post?.spanContext().traceId);
    expect(echo?.attributes['slicekeeper.echo']).toMatch(/^(received|early)$/);
    expect(echo?.attributes['slicekeeper.kube.resource_version']).toBe(
      created.metadata.resourceVersion,
    );
  });

  it('ends an awaited echo when the cache closes', async () => {
    const created = await api.createSlice(slice());
    // A cache that never watches: the echo never comes.
    const idle = new ClusterCache({
      transport,
      logger: { debug: () => undefined, info: () => undefined, warn: () => undefined },
    });
    idle.recordWrite(created);
    expect(recorded.named('watch echo')).toEqual([]);
    await idle.close();
    expect(recorded.named('watch echo').map((s) => s.attributes['slicekeeper.echo'])).toEqual([
      'closed',
    ]);
  });

  it('patches a Node condition outside any sync as a root span', async () => {
    await fetch(`${running.url}/api/v1/nodes`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } }),
    });
    await new KubeNodeStatusClient({ transport }).patchCondition('node-a', {
      type: 'DRAResourcesPublished',
      status: 'True',
      reason: 'Published',
      message: 'every driver published',
      lastHeartbeatTime: '2026-01-01T00:00:00Z',
    });
    const [patch] = recorded.named('PATCH');
    expect(patch?.parentSpanContext).toBeUndefined();
    expect(patch?.attributes).toMatchObject({
      'http.response.status_code': 200,
      'slicekeeper.kube.verb': 'patch',
      'slicekeeper.kube.resource': 'nodes/status',
      'slicekeeper.kube.name': 'node-a',
    });
  });

  it('writes Events as children of the span they are recorded in, roots otherwise', async () => {
    const recorder = new EventRecorder({
      sink: new KubeEventClient({ transport }),
      reportingController: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'spec',
      logger: { warn: () => undefined },
    });
    const regarding = { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-a' };
    const event = { type: 'Warning', reason: 'Failed', action: 'Publish' } as const;
    await recorded.tracing.inSpan('process sync', {}, () => {
      recorder.record({ ...event, regarding, note: 'during a sync' });
      return Promise.resolve();
    });
    recorder.record({ ...event, regarding, note: 'outside one' });
    await recorder.close();
    const [sync] = recorded.named('process sync');
    const posts = recorded.named('POST');
    expect(posts.map((s) => s.attributes['slicekeeper.kube.resource'])).toEqual([
      'events',
      'events',
    ]);
    const parents = posts.map((s) => s.parentSpanContext?.spanId);
    expect(parents.sort()).toEqual([sync?.spanContext().spanId, undefined].sort());
  });
});

describe('the traceparent header of a write', () => {
  it('carries the write span to the server, and only on writes', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify(
          req.method === 'POST'
            ? { metadata: { name: 'e', namespace: 'default' } }
            : { kind: 'ResourceSliceList', metadata: { resourceVersion: '1' }, items: [] },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}"}}]`,
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n');
    const transport = new KubeTransport(
      { kind: 'yaml', text: kubeconfig },
      { tracing: recorded.tracing },
    );
    try {
      recorded.reset();
      const events = new KubeEventClient({ transport });
      const regarding = { apiVersion: 'v1', kind: 'Node', name: 'n', uid: 'n' };
      await events.create({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: 'e', namespace: 'default' },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'slicekeeper.dev/slice-syncer',
        reportingInstance: 'spec',
        action: 'Publish',
        reason: 'Failed',
        regarding,
        note: 'n',
        type: 'Warning',
      });
      await new KubeSliceClient({ transport }).listSlices({ node: 'n', driver: 'd' });
      const [post] = recorded.named('POST');
      expect(seen.map((h) => h.traceparent)).toEqual([
        post === undefined ? 'no span' : formatTraceparent(post.spanContext()),
        undefined,
      ]);
    } finally {
      transport.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
