import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';
import { startKubeEmulator } from './start-kube-emulator';

/**
 * Events as a controller's event recorder (client-go tools/events) and kubectl use them: one
 * stored Event behind core/v1 and events.k8s.io/v1 (pkg/apis/events/v1 conversion), namespaces,
 * the series patch and its 404-then-create fallback, validation per API version, field
 * selectors with both APIs' labels, watches, the 1 h TTL on an injected clock, and
 * `kubectl describe node` / `kubectl get events` against it all.
 */

const run = promisify(execFile);
const KUBECTL = '/usr/bin/kubectl';
const V1_EVENTS = '/apis/events.k8s.io/v1/namespaces/default/events';
const CORE_EVENTS = '/api/v1/namespaces/default/events';
const HOUR_MS = 60 * 60 * 1000;

let dir: string;
const kube = new EmulatorUnderTest();
const call = kube.call.bind(kube);
/** The emulator's clock, ms since the epoch; tests move it forward. */
let nowMs: number;

async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(
      KUBECTL,
      ['--kubeconfig', kube.kubeconfigPath ?? '', '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 20_000 },
    );
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** MicroTime of the emulator's clock, shifted by `offsetMs`. */
function microTime(offsetMs = 0): string {
  return new Date(nowMs + offsetMs).toISOString().replace('Z', '000Z');
}

/** An events.k8s.io/v1 Event about a Node, as the event recorder writes it. */
function nodeEvent(node: string, uid: string, name = `${node}.17a0c0ffee000001`): Json {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace: 'default' },
    eventTime: microTime(),
    reportingController: 'slicekeeper.dev/slice-syncer',
    reportingInstance: 'slice-syncer-7d4b9',
    action: 'PublishSlices',
    reason: 'SlicesPublished',
    note: 'published 2 ResourceSlices',
    type: 'Normal',
    regarding: { apiVersion: 'v1', kind: 'Node', name: node, uid },
  };
}

async function createNode(name: string): Promise<string> {
  const created = await call('POST', '/api/v1/nodes', { metadata: { name } });
  return String((created.body.metadata as Json).uid);
}

function causesOf(body: Json): { field?: string; message?: string }[] {
  return ((body.details as Json | undefined)?.causes ?? []) as { field?: string }[];
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kube-events-'));
  nowMs = Date.now();
  await kube.start({
    kubeconfigPath: join(dir, 'kubeconfig'),
    clock: { now: () => nowMs },
  });
});

afterEach(async () => {
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

describe('one Event, two APIs', () => {
  it('reads an events.k8s.io/v1 Event back through core/v1 with the fields renamed', async () => {
    const uid = await createNode('node-a');
    const created = await call('POST', V1_EVENTS, nodeEvent('node-a', uid));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      kind: 'Event',
      apiVersion: 'events.k8s.io/v1',
      metadata: { name: 'node-a.17a0c0ffee000001', namespace: 'default' },
      note: 'published 2 ResourceSlices',
      deprecatedSource: {},
      deprecatedFirstTimestamp: null,
      deprecatedLastTimestamp: null,
    });

    const core = await call('GET', `${CORE_EVENTS}/node-a.17a0c0ffee000001`);
    expect(core.status).toBe(200);
    expect(core.body).toMatchObject({
      kind: 'Event',
      apiVersion: 'v1',
      involvedObject: { kind: 'Node', name: 'node-a', uid, apiVersion: 'v1' },
      reason: 'SlicesPublished',
      message: 'published 2 ResourceSlices',
      source: {},
      firstTimestamp: null,
      lastTimestamp: null,
      type: 'Normal',
      eventTime: microTime(),
      action: 'PublishSlices',
      reportingComponent: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'slice-syncer-7d4b9',
    });
    expect((core.body.metadata as Json).resourceVersion).toBe(
      (created.body.metadata as Json).resourceVersion,
    );
    // Tracked against the empty Event, as the field manager does on create: the null times and
    // the empty deprecatedSource are nobody's; regarding is atomic.
    const [managed] = (created.body.metadata as { managedFields: Json[] }).managedFields;
    expect(managed).toMatchObject({ operation: 'Update', apiVersion: 'events.k8s.io/v1' });
    expect(managed?.fieldsV1).toEqual({
      'f:action': {},
      'f:eventTime': {},
      'f:note': {},
      'f:reason': {},
      'f:regarding': {},
      'f:reportingController': {},
      'f:reportingInstance': {},
      'f:type': {},
    });
    expect(kube.emulator.events('default')).toEqual([core.body]);
    expect(kube.emulator.events('kube-system')).toEqual([]);
  });

  it('reads a legacy core/v1 Event through events.k8s.io/v1 with the deprecated fields', async () => {
    const created = await call('POST', CORE_EVENTS, {
      metadata: { name: 'legacy' },
      involvedObject: { kind: 'Node', name: 'node-a', uid: 'node-a' },
      reason: 'NodeReady',
      message: 'Node node-a status is now: NodeReady',
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: '2026-01-01T10:00:00Z',
      lastTimestamp: '2026-01-01T10:05:00Z',
      count: 4,
      type: 'Normal',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ eventTime: null, reportingComponent: '' });
    const [managed] = (created.body.metadata as { managedFields: Json[] }).managedFields;
    expect(managed?.fieldsV1).toEqual({
      'f:count': {},
      'f:firstTimestamp': {},
      'f:involvedObject': {},
      'f:lastTimestamp': {},
      'f:message': {},
      'f:reason': {},
      'f:source': { 'f:component': {}, 'f:host': {} },
      'f:type': {},
    });

    const v1 = await call('GET', `${V1_EVENTS}/legacy`);
    expect(v1.body).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      eventTime: null,
      regarding: { kind: 'Node', name: 'node-a', uid: 'node-a' },
      note: 'Node node-a status is now: NodeReady',
      deprecatedSource: { component: 'kubelet', host: 'node-a' },
      deprecatedFirstTimestamp: '2026-01-01T10:00:00Z',
      deprecatedLastTimestamp: '2026-01-01T10:05:00Z',
      deprecatedCount: 4,
    });
  });

  it('keeps eventTime to the microsecond and refuses one without six fractional digits', async () => {
    const event = { ...nodeEvent('node-a', 'u1'), eventTime: '2026-11-24T18:55:37Z' };
    const refused = await call('POST', V1_EVENTS, event);
    expect(refused.status).toBe(400);
    expect(String(refused.body.message)).toContain(
      'parsing time "2026-11-24T18:55:37Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
    );
    const offset = { ...event, eventTime: '2026-11-24T20:55:37.123456+02:00' };
    expect((await call('POST', V1_EVENTS, offset)).body.eventTime).toBe(
      '2026-11-24T18:55:37.123456Z',
    );
  });
});

describe('the event recorder’s writes', () => {
  it('patches a series with a strategic merge patch, seen by both APIs', async () => {
    const uid = await createNode('node-a');
    const name = 'node-a.17a0c0ffee000001';
    await call('POST', V1_EVENTS, nodeEvent('node-a', uid));
    nowMs += 30_000;
    const patched = await call(
      'PATCH',
      `${V1_EVENTS}/${name}`,
      { series: { count: 2, lastObservedTime: microTime() } },
      'application/strategic-merge-patch+json',
    );
    expect(patched.status).toBe(200);
    expect(patched.body.series).toEqual({ count: 2, lastObservedTime: microTime() });

    const merged = await call(
      'PATCH',
      `${V1_EVENTS}/${name}`,
      { series: { count: 3 } },
      'application/merge-patch+json',
    );
    expect(merged.body.series).toEqual({ count: 3, lastObservedTime: microTime() });

    const jsonPatched = await call(
      'PATCH',
      `${CORE_EVENTS}/${name}`,
      [{ op: 'replace', path: '/series/count', value: 4 }],
      'application/json-patch+json',
    );
    expect(jsonPatched.body.series).toEqual({ count: 4, lastObservedTime: microTime() });
    expect((await call('GET', `${V1_EVENTS}/${name}`)).body.series).toEqual({
      count: 4,
      lastObservedTime: microTime(),
    });
  });

  it('answers a patch of a missing Event with 404, after which a create succeeds', async () => {
    const missing = await call(
      'PATCH',
      `${V1_EVENTS}/node-a.17a0c0ffee000009`,
      { series: { count: 2, lastObservedTime: microTime() } },
      'application/strategic-merge-patch+json',
    );
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      reason: 'NotFound',
      message: 'events.events.k8s.io "node-a.17a0c0ffee000009" not found',
      details: { name: 'node-a.17a0c0ffee000009', group: 'events.k8s.io', kind: 'events' },
    });
    const created = await call(
      'POST',
      V1_EVENTS,
      nodeEvent('node-a', 'u1', 'node-a.17a0c0ffee000009'),
    );
    expect(created.status).toBe(201);
  });

  it('creates a missing Event on PUT (AllowCreateOnUpdate) and deletes with a Status', async () => {
    const put = await call('PUT', `${V1_EVENTS}/by-put`, nodeEvent('node-a', 'u1', 'by-put'));
    expect(put.status).toBe(201);
    const deleted = await call('DELETE', `${V1_EVENTS}/by-put`);
    expect(deleted.body).toMatchObject({
      kind: 'Status',
      status: 'Success',
      details: { name: 'by-put', group: 'events.k8s.io', kind: 'events' },
    });
    expect((await call('GET', `${CORE_EVENTS}/by-put`)).status).toBe(404);
  });
});

describe('validation', () => {
  it('applies the strict rules to events.k8s.io/v1 creates, naming the core fields', async () => {
    const bad = {
      ...nodeEvent('node-a', 'u1'),
      reportingController: '',
      type: 'Info',
      note: 'x'.repeat(1025),
      series: { count: 1, lastObservedTime: microTime() },
      deprecatedCount: 2,
    };
    const refused = await call('POST', V1_EVENTS, bad);
    expect(refused.status).toBe(422);
    expect(refused.body.reason).toBe('Invalid');
    expect(causesOf(refused.body).map((c) => c.field)).toEqual([
      'reportingController',
      // IsQualifiedName(""): empty, and not matching the pattern.
      'reportingController',
      'reportingController',
      'message',
      'series.count',
      'type',
      'count',
    ]);
    expect(causesOf(refused.body).slice(3)).toEqual([
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "": can have at most 1024 characters',
        field: 'message',
      },
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "": should be at least 2',
        field: 'series.count',
      },
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "": has invalid value: Info',
        field: 'type',
      },
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "": needs to be unset',
        field: 'count',
      },
    ]);
  });

  it('requires eventTime, reportingInstance, action and reason through events.k8s.io/v1', async () => {
    const bare = {
      metadata: { name: 'bare' },
      type: 'Normal',
      regarding: { kind: 'Node', name: 'node-a' },
    };
    const refused = await call('POST', V1_EVENTS, bare);
    expect(causesOf(refused.body).map((c) => c.field)).toEqual(['eventTime']);

    const noInstance = { ...nodeEvent('node-a', 'u1'), reportingInstance: '', action: '' };
    expect(causesOf((await call('POST', V1_EVENTS, noInstance)).body)).toEqual([
      { reason: 'FieldValueRequired', message: 'Required value', field: 'reportingInstance' },
      { reason: 'FieldValueRequired', message: 'Required value', field: 'action' },
    ]);
  });

  it('keeps the legacy rules for core/v1 creates', async () => {
    const loose = await call('POST', CORE_EVENTS, {
      metadata: { name: 'loose' },
      involvedObject: { kind: 'Node', name: 'node-a' },
      reason: 'Anything',
      type: 'Info',
    });
    expect(loose.status).toBe(201);
    const elsewhere = await call('POST', '/api/v1/namespaces/kube-public/events', {
      metadata: { name: 'elsewhere' },
      involvedObject: { kind: 'Node', name: 'node-a' },
    });
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.message).toBe(
      'Event "elsewhere" is invalid: involvedObject.namespace: Invalid value: "": does not match event.namespace',
    );
  });

  it('holds everything but the series immutable on an events.k8s.io/v1 update', async () => {
    await call('POST', V1_EVENTS, nodeEvent('node-a', 'u1', 'fixed'));
    const noteChanged = await call(
      'PATCH',
      `${V1_EVENTS}/fixed`,
      { note: 'something else' },
      'application/merge-patch+json',
    );
    expect(noteChanged.status).toBe(422);
    expect(noteChanged.body.message).toBe(
      'Event "fixed" is invalid: message: Invalid value: "something else": field is immutable',
    );
    const badSeries = await call(
      'PATCH',
      `${V1_EVENTS}/fixed`,
      { series: { count: 1, lastObservedTime: microTime() } },
      'application/merge-patch+json',
    );
    expect(causesOf(badSeries.body).map((c) => c.field)).toEqual(['series.count']);
    // Through core/v1 the same change is allowed (legacy rules only).
    const viaCore = await call(
      'PATCH',
      `${CORE_EVENTS}/fixed`,
      { message: 'something else' },
      'application/merge-patch+json',
    );
    expect(viaCore.status).toBe(200);
  });
});

describe('namespaces', () => {
  it('takes the namespace from the URL and refuses a different one in the body', async () => {
    const noNamespace = { ...nodeEvent('node-a', 'u1', 'a'), metadata: { name: 'a' } };
    const created = await call('POST', '/apis/events.k8s.io/v1/namespaces/kube-system/events', {
      ...noNamespace,
    });
    expect(created.status).toBe(201);
    expect((created.body.metadata as Json).namespace).toBe('kube-system');

    const mismatch = await call('POST', V1_EVENTS, {
      ...noNamespace,
      metadata: { name: 'b', namespace: 'kube-system' },
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.message).toBe(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  });

  it('refuses creates in a namespace that does not exist, as NamespaceLifecycle does', async () => {
    const refused = await call('POST', '/apis/events.k8s.io/v1/namespaces/nope/events', {
      ...nodeEvent('node-a', 'u1'),
      metadata: { name: 'n1' },
    });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({
      reason: 'NotFound',
      message: 'namespaces "nope" not found',
      details: { name: 'nope', kind: 'namespaces' },
    });
  });

  it('lists per namespace and across namespaces, the same name in two namespaces', async () => {
    const event = nodeEvent('node-a', 'u1', 'same');
    await call('POST', V1_EVENTS, event);
    await call('POST', '/apis/events.k8s.io/v1/namespaces/kube-system/events', {
      ...event,
      metadata: { name: 'same' },
    });
    const all = await call('GET', '/api/v1/events');
    expect((all.body.items as Json[]).map((e) => (e.metadata as Json).namespace as string)).toEqual(
      ['default', 'kube-system'],
    );
    const inDefault = await call('GET', V1_EVENTS);
    expect((inDefault.body.items as Json[]).length).toBe(1);
    expect(inDefault.body.kind).toBe('EventList');
    expect((await call('POST', '/api/v1/events', event)).status).toBe(405);
  });

  it('pages a namespaced list with continue tokens', async () => {
    for (const name of ['e1', 'e2', 'e3'])
      await call('POST', V1_EVENTS, nodeEvent('node-a', 'u1', name));
    await call('POST', '/apis/events.k8s.io/v1/namespaces/kube-system/events', {
      ...nodeEvent('node-a', 'u1', 'e0'),
      metadata: { name: 'e0' },
    });
    const first = await call('GET', `${CORE_EVENTS}?limit=2`);
    const names = (first.body.items as Json[]).map((e) => (e.metadata as Json).name);
    const token = String((first.body.metadata as Json).continue);
    const second = await call('GET', `${CORE_EVENTS}?limit=2&continue=${token}`);
    names.push(...(second.body.items as Json[]).map((e) => (e.metadata as Json).name));
    expect(names).toEqual(['e1', 'e2', 'e3']);
    expect((second.body.metadata as Json).continue).toBeUndefined();
  });
});

describe('field selectors and watch', () => {
  it('selects by the core labels and by the events.k8s.io labels', async () => {
    const uidA = await createNode('node-a');
    const uidB = await createNode('node-b');
    await call('POST', V1_EVENTS, nodeEvent('node-a', uidA, 'a1'));
    await call('POST', V1_EVENTS, nodeEvent('node-b', uidB, 'b1'));
    const selector = encodeURIComponent(
      `involvedObject.kind=Node,involvedObject.name=node-a,involvedObject.namespace=,involvedObject.uid=${uidA}`,
    );
    const core = await call('GET', `/api/v1/events?fieldSelector=${selector}&limit=500`);
    expect((core.body.items as Json[]).map((e) => (e.metadata as Json).name)).toEqual(['a1']);

    const v1 = await call(
      'GET',
      `/apis/events.k8s.io/v1/events?fieldSelector=${encodeURIComponent('regarding.name=node-b,reportingController=slicekeeper.dev/slice-syncer,source=slicekeeper.dev/slice-syncer')}`,
    );
    expect((v1.body.items as Json[]).map((e) => (e.metadata as Json).name)).toEqual(['b1']);

    const unsupported = await call('GET', `${V1_EVENTS}?fieldSelector=involvedObject.name%3Dx`);
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.message).toBe('field label not supported: involvedObject.name');
  });

  it('streams an Event’s life to watchers of both APIs, in each one’s shape', async () => {
    const start = await call('GET', '/api/v1/events');
    const rv = String((start.body.metadata as Json).resourceVersion);
    await call('POST', V1_EVENTS, nodeEvent('node-a', 'u1', 'w1'));
    await call(
      'PATCH',
      `${V1_EVENTS}/w1`,
      { series: { count: 2, lastObservedTime: microTime() } },
      'application/strategic-merge-patch+json',
    );
    await call('POST', '/apis/events.k8s.io/v1/namespaces/kube-system/events', {
      ...nodeEvent('node-a', 'u1', 'w2'),
      metadata: { name: 'w2' },
    });
    const core = await kube.firstWatchEvents(`/api/v1/events?watch=true&resourceVersion=${rv}`, 3);
    expect(core.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'ADDED']);
    expect((core[1]?.object as Json).message).toBe('published 2 ResourceSlices');

    const v1 = await kube.firstWatchEvents(`${V1_EVENTS}?watch=true&resourceVersion=${rv}`, 2);
    expect(v1.map((e) => [e.type, (e.object as Json).apiVersion])).toEqual([
      ['ADDED', 'events.k8s.io/v1'],
      ['MODIFIED', 'events.k8s.io/v1'],
    ]);
    expect((v1[1]?.object as Json).series).toEqual({ count: 2, lastObservedTime: microTime() });
  });
});

describe('event TTL', () => {
  it('deletes an Event an hour after its last write, on the emulator’s clock', async () => {
    await call('POST', V1_EVENTS, nodeEvent('node-a', 'u1', 'ttl'));
    nowMs += HOUR_MS - 60_000;
    await call(
      'PATCH',
      `${V1_EVENTS}/ttl`,
      { series: { count: 2, lastObservedTime: microTime() } },
      'application/strategic-merge-patch+json',
    );
    const beforeExpiry = await call('GET', '/api/v1/events');
    const rv = String((beforeExpiry.body.metadata as Json).resourceVersion);
    nowMs += HOUR_MS - 60_000;
    expect((await call('GET', `${V1_EVENTS}/ttl`)).status).toBe(200);
    nowMs += 60_000;
    expect((await call('GET', `${V1_EVENTS}/ttl`)).status).toBe(404);
    const watched = await kube.firstWatchEvents(
      `/api/v1/events?watch=true&resourceVersion=${rv}`,
      1,
    );
    expect(watched.map((e) => [e.type, ((e.object as Json).metadata as Json).name])).toEqual([
      ['DELETED', 'ttl'],
    ]);
  });
});

describe('data file', () => {
  it('keeps Events across a restart, under their namespaces', async () => {
    const dataFile = join(dir, 'data.json');
    const first = await startKubeEmulator({ dataFile, clock: { now: () => nowMs } });
    const event = nodeEvent('node-a', 'u1', 'kept');
    await fetch(`${first.url}${V1_EVENTS}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(event),
    });
    await first.close();
    const second = await startKubeEmulator({ dataFile, clock: { now: () => nowMs } });
    try {
      const res = await fetch(`${second.url}/api/v1/namespaces/default/events/kept`);
      expect(res.status).toBe(200);
      expect(second.emulator.events().map((e) => (e.metadata as Json).namespace)).toEqual([
        'default',
      ]);
    } finally {
      await second.close();
    }
  });
});

describe('what kubectl describe node reads besides', () => {
  it('answers an empty PodList for the node’s pods and 404 for its Lease', async () => {
    const pods = await call(
      'GET',
      `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName=node-a,status.phase!=Succeeded,status.phase!=Failed')}&limit=500`,
    );
    expect(pods.status).toBe(200);
    expect(pods.body).toEqual({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: expect.any(String) as string },
      items: [],
    });
    const lease = await call(
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a',
    );
    expect(lease.status).toBe(404);
    expect(lease.body).toMatchObject({
      message: 'leases.coordination.k8s.io "node-a" not found',
      details: { name: 'node-a', group: 'coordination.k8s.io', kind: 'leases' },
    });
    const leaseWrite = await call(
      'POST',
      '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
      {
        metadata: { name: 'node-a' },
      },
    );
    expect(leaseWrite.status).toBe(405);
  });

  it('lists events.k8s.io/v1 in discovery', async () => {
    const list = await call('GET', '/apis/events.k8s.io/v1');
    expect(list.body).toEqual({
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: 'events.k8s.io/v1',
      resources: [
        {
          name: 'events',
          singularName: 'event',
          namespaced: true,
          kind: 'Event',
          verbs: [
            'create',
            'delete',
            'deletecollection',
            'get',
            'list',
            'patch',
            'update',
            'watch',
          ],
          shortNames: ['ev'],
          storageVersionHash: 'r2yiGXH7wu8=',
        },
      ],
    });
  });
});

describe('kubectl', () => {
  it('shows a Node’s Events with their series in describe, and lists them', async () => {
    // kubectl measures ages with the wall clock: the Event happened 10 minutes ago.
    const uid = await createNode('node-a');
    const event = { ...nodeEvent('node-a', uid), eventTime: microTime(-10 * 60_000) };
    await call('POST', V1_EVENTS, event);
    await call(
      'PATCH',
      `${V1_EVENTS}/node-a.17a0c0ffee000001`,
      { series: { count: 3, lastObservedTime: microTime() } },
      'application/strategic-merge-patch+json',
    );
    await call('POST', '/apis/events.k8s.io/v1/namespaces/kube-system/events', {
      ...nodeEvent('node-b', 'uid-b', 'node-b.1'),
      metadata: { name: 'node-b.1' },
      type: 'Warning',
      reason: 'PublishFailed',
      note: 'driver unreachable',
    });

    const described = await kubectl('describe', 'node', 'node-a');
    expect(described.stderr).toBe('');
    const events = described.stdout.slice(described.stdout.indexOf('Events:'));
    expect(events).toMatch(
      /Normal\s+SlicesPublished\s+\d+s \(x3 over 10m\)\s+slicekeeper\.dev\/slice-syncer\s+published 2 ResourceSlices/,
    );
    expect(events).not.toContain('PublishFailed');
    expect(described.stdout).toContain(
      'Lease:              Failed to get lease: leases.coordination.k8s.io "node-a" not found',
    );
    expect(described.stdout).toContain('Non-terminated Pods:          (0 in total)');

    const listed = (await kubectl('get', 'events', '-A')).stdout.trim().split('\n');
    expect(listed[0]?.split(/\s{2,}/)).toEqual([
      'NAMESPACE',
      'LAST SEEN',
      'TYPE',
      'REASON',
      'OBJECT',
      'MESSAGE',
    ]);
    expect(listed.slice(1).map((line) => line.split(/\s{2,}/))).toEqual([
      [
        'default',
        expect.stringMatching(/^\d+s$/) as string,
        'Normal',
        'SlicesPublished',
        'node/node-a',
        'published 2 ResourceSlices',
      ],
      [
        'kube-system',
        expect.stringMatching(/^\d+s$/) as string,
        'Warning',
        'PublishFailed',
        'node/node-b',
        'driver unreachable',
      ],
    ]);
  });
});
