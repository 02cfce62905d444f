import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { firstWatchEvents } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';

/**
 * The emulator's own contract beyond the recorded transcripts: test hooks, token auth, garbage
 * collection, history expiry, watch bookmarks and lifecycle.
 */

const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const ADMIN = 'admin-token';
const VIEWER = 'viewer-token';

let dir: string;
let running: RunningKubeEmulator;

async function call(
  method: string,
  path: string,
  body?: unknown,
  options: { token?: string; contentType?: string } = {},
): Promise<{ status: number; body: Json; headers: Headers }> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
  if (body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
  const res = await fetch(`${running.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text === '' ? {} : (JSON.parse(text) as Json),
    headers: res.headers,
  };
}

function slice(name: string, node: string, ownerUid?: string): Json {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      name,
      ...(ownerUid === undefined
        ? {}
        : {
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Node', name: node, uid: ownerUid, controller: true },
            ],
          }),
    },
    spec: {
      driver: 'gpu.example.com',
      nodeName: node,
      pool: { name: node, generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
    },
  };
}

/** Reads a watch stream to its end (the server closes it after timeoutSeconds). */
async function watchEvents(query: string, token = ADMIN): Promise<Json[]> {
  const res = await fetch(`${running.url}${SLICES}?watch=true&${query}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Json);
}

/** Reads a watch stream until `count` events arrived, then hangs up. */
function firstEvents(query: string, count: number): Promise<Json[]> {
  return firstWatchEvents(
    `${running.url}${SLICES}?watch=true&timeoutSeconds=20&${query}`,
    { headers: { Authorization: `Bearer ${ADMIN}` } },
    count,
  );
}

function metadataOf(obj: unknown): Json {
  return (obj as { metadata: Json }).metadata;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kube-emulator-'));
  const tokenFile = join(dir, 'tokens.csv');
  writeFileSync(
    tokenFile,
    `# token,user,uid,groups\n${ADMIN},admin,u1,"system:masters"\n${VIEWER},viewer,u2,"team-a,viewers"\n`,
  );
  running = await startKubeEmulator({
    port: 0,
    tokenFile,
    kubeconfigPath: join(dir, 'kubeconfig'),
  });
});

afterEach(async () => {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('kubeconfig and lifecycle', () => {
  it('writes a kubeconfig with the admin token that points at the server', () => {
    const written = parseYaml(readFileSync(join(dir, 'kubeconfig'), 'utf8')) as {
      clusters: { cluster: { server: string } }[];
      users: { user: { token: string } }[];
    };
    expect(running.kubeconfigPath).toBe(join(dir, 'kubeconfig'));
    expect(written.clusters[0]?.cluster.server).toBe(running.url);
    expect(written.users[0]?.user.token).toBe(ADMIN);
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('closes once, however often close() is called, ending open watches', async () => {
    // fetch resolves once the server has sent the headers, i.e. the watch is registered.
    const watch = await fetch(`${running.url}${SLICES}?watch=true&timeoutSeconds=60`, {
      headers: { Authorization: `Bearer ${ADMIN}` },
    });
    expect(running.emulator.watchCount()).toBe(1);
    const first = running.close();
    expect(running.close()).toBe(first);
    await first;
    await expect(watch.text()).resolves.toBe('');
  });
});

describe('token auth', () => {
  it('rejects an unknown token with 401 and lets a viewer read but not write', async () => {
    const unknown = await call('GET', SLICES, undefined, { token: 'nope' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });

    expect((await call('GET', SLICES, undefined, { token: VIEWER })).status).toBe(200);
    const denied = await call('POST', SLICES, slice('s', 'node-a'), { token: VIEWER });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'resourceslices.resource.k8s.io is forbidden: User "viewer" cannot create resource "resourceslices" in API group "resource.k8s.io" at the cluster scope',
      reason: 'Forbidden',
      details: { group: 'resource.k8s.io', kind: 'resourceslices' },
      code: 403,
    });
    const namedDelete = await call('DELETE', '/api/v1/nodes/node-a', undefined, { token: VIEWER });
    expect(namedDelete.body.message).toBe(
      'nodes "node-a" is forbidden: User "viewer" cannot delete resource "nodes" in API group "" at the cluster scope',
    );
  });

  it('serves /version to anonymous users and nothing else', async () => {
    expect((await call('GET', '/version')).status).toBe(200);
    const anonymous = await call('GET', SLICES);
    expect(anonymous.status).toBe(403);
    expect(anonymous.body.message).toContain(
      'User "system:anonymous" cannot list resource "resourceslices"',
    );
  });
});

describe('test hooks', () => {
  it('counts requests by verb, resource and code, and resets the counters', async () => {
    await call('POST', SLICES, slice('a', 'node-a'), { token: ADMIN });
    await call('POST', SLICES, slice('a', 'node-a'), { token: ADMIN });
    await call('GET', `${SLICES}/a`, undefined, { token: ADMIN });
    expect(running.emulator.count({ verb: 'create', resource: 'resourceslices' })).toBe(2);
    expect(running.emulator.count({ verb: 'create', code: 409 })).toBe(1);
    const overHttp = (await (await fetch(`${running.url}/_emulator/counters`)).json()) as {
      total: number;
    };
    expect(overHttp.total).toBe(3);
    expect(running.emulator.requestLog().map((e) => `${e.verb} ${e.code}`)).toEqual([
      'create 201',
      'create 409',
      'get 200',
    ]);

    await fetch(`${running.url}/_emulator/reset?keepObjects=true`, { method: 'POST' });
    expect(running.emulator.counters().total).toBe(0);
    expect((await call('GET', `${SLICES}/a`, undefined, { token: ADMIN })).status).toBe(200);
  });

  it('fails the next N matching requests with the injected status and Retry-After', async () => {
    const injected = await fetch(`${running.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({
        verb: 'create',
        resource: 'resourceslices',
        status: 429,
        times: 2,
        retryAfterSeconds: 3,
      }),
    });
    expect(injected.status).toBe(201);
    for (let i = 0; i < 2; i++) {
      const failed = await call('POST', SLICES, slice('a', 'node-a'), { token: ADMIN });
      expect(failed.status).toBe(429);
      expect(failed.headers.get('retry-after')).toBe('3');
      expect(failed.body).toMatchObject({
        reason: 'TooManyRequests',
        details: { retryAfterSeconds: 3 },
      });
    }
    expect((await call('GET', SLICES, undefined, { token: ADMIN })).status).toBe(200);
    expect((await call('POST', SLICES, slice('a', 'node-a'), { token: ADMIN })).status).toBe(201);
  });

  it('rejects a malformed fault with the reason', async () => {
    const bad = await fetch(`${running.url}/_emulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ status: 'x' }),
    });
    expect(bad.status).toBe(400);
  });

  it('delays matching requests by the configured latency', async () => {
    running.emulator.addLatency({ verb: 'list', ms: 150, times: 1 });
    const started = performance.now();
    await call('GET', SLICES, undefined, { token: ADMIN });
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('reset drops every object and ends watches; resourceVersions keep increasing', async () => {
    const created = await call('POST', SLICES, slice('a', 'node-a'), { token: ADMIN });
    running.emulator.reset();
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    expect(list.body.items).toEqual([]);
    expect(Number(metadataOf(list.body).resourceVersion)).toBeGreaterThan(
      Number(metadataOf(created.body).resourceVersion),
    );
  });
});

describe('history', () => {
  it('answers a watch from before forgetHistory with a 410 Expired ERROR event', async () => {
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    const rv = String(metadataOf(list.body).resourceVersion);
    await call('POST', SLICES, slice('a', 'node-a'), { token: ADMIN });
    await fetch(`${running.url}/_emulator/forget-history`, { method: 'POST' });
    const events = await watchEvents(`resourceVersion=${rv}&timeoutSeconds=5`);
    expect(events).toHaveLength(1);
    expect(events[0]?.type).toBe('ERROR');
    expect(events[0]?.object).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Expired',
      code: 410,
    });
    expect(String((events[0]?.object as Json).message)).toMatch(
      /^too old resource version: \d+ \(\d+\)$/,
    );

    const exact = await call(
      'GET',
      `${SLICES}?resourceVersion=${rv}&resourceVersionMatch=Exact`,
      undefined,
      { token: ADMIN },
    );
    expect(exact.status).toBe(410);
    expect(exact.body.message).toBe('The resourceVersion for the provided list is too old.');
  });

  it('serves an exact-version list as it was, and pages stay consistent while objects change', async () => {
    for (const name of ['a', 'b', 'c'])
      await call('POST', SLICES, slice(name, 'node-a'), { token: ADMIN });
    const first = await call('GET', `${SLICES}?limit=2`, undefined, { token: ADMIN });
    const rv = String(metadataOf(first.body).resourceVersion);
    await call('DELETE', `${SLICES}/c`, undefined, { token: ADMIN });
    await call('POST', SLICES, slice('d', 'node-a'), { token: ADMIN });
    const second = await call(
      'GET',
      `${SLICES}?limit=2&continue=${String(metadataOf(first.body).continue)}`,
      undefined,
      { token: ADMIN },
    );
    expect((second.body.items as Json[]).map((i) => metadataOf(i).name)).toEqual(['c']);
    const exact = await call(
      'GET',
      `${SLICES}?resourceVersion=${rv}&resourceVersionMatch=Exact`,
      undefined,
      { token: ADMIN },
    );
    expect((exact.body.items as Json[]).map((i) => metadataOf(i).name)).toEqual(['a', 'b', 'c']);
  });

  it('serves resourceVersion=0 from the watch cache: limit is ignored, no continue token', async () => {
    for (const name of ['a', 'b', 'c'])
      await call('POST', SLICES, slice(name, 'node-a'), { token: ADMIN });
    const cached = await call('GET', `${SLICES}?resourceVersion=0&limit=2`, undefined, {
      token: ADMIN,
    });
    expect((cached.body.items as Json[]).map((i) => metadataOf(i).name)).toEqual(['a', 'b', 'c']);
    expect(metadataOf(cached.body).continue).toBeUndefined();
    const paged = await call('GET', `${SLICES}?limit=2`, undefined, { token: ADMIN });
    expect(paged.body.items as Json[]).toHaveLength(2);
  });

  it('waits for a resourceVersion ahead of it and then times out with 504', async () => {
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    const ahead = Number(metadataOf(list.body).resourceVersion) + 100;
    const res = await call('GET', `${SLICES}?resourceVersion=${ahead}`, undefined, {
      token: ADMIN,
    });
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({
      reason: 'Timeout',
      details: { causes: [{ reason: 'ResourceVersionTooLarge' }], retryAfterSeconds: 1 },
    });
  }, 10_000);
});

describe('watch', () => {
  it('sends a BOOKMARK two seconds before the timeout when bookmarks are allowed', async () => {
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    const events = await watchEvents(
      `allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=${String(metadataOf(list.body).resourceVersion)}`,
    );
    expect(events.map((e) => e.type)).toEqual(['BOOKMARK']);
    expect(metadataOf(events[0]?.object).annotations).toBeUndefined();
  }, 10_000);

  it('reports a slice that leaves the selector as DELETED', async () => {
    await call(
      'POST',
      SLICES,
      { ...slice('a', 'node-a'), metadata: { name: 'a', labels: { tier: 'gold' } } },
      { token: ADMIN },
    );
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    await call(
      'PATCH',
      `${SLICES}/a`,
      { metadata: { labels: { tier: 'silver' } } },
      { token: ADMIN, contentType: 'application/merge-patch+json' },
    );
    const events = await firstEvents(
      `labelSelector=tier%3Dgold&resourceVersion=${String(metadataOf(list.body).resourceVersion)}`,
      1,
    );
    expect(events.map((e) => [e.type, metadataOf(e.object).labels])).toEqual([
      ['DELETED', { tier: 'gold' }],
    ]);
  });
});

describe('garbage collection', () => {
  async function nodeWithSlices(): Promise<string> {
    const node = await call(
      'POST',
      '/api/v1/nodes',
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } },
      { token: ADMIN },
    );
    const uid = String(metadataOf(node.body).uid);
    await call('POST', SLICES, slice('owned-1', 'node-a', uid), { token: ADMIN });
    await call('POST', SLICES, slice('owned-2', 'node-a', uid), { token: ADMIN });
    await call('POST', SLICES, slice('other', 'node-b'), { token: ADMIN });
    return uid;
  }

  async function names(): Promise<unknown[]> {
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    return (list.body.items as Json[]).map((i) => metadataOf(i).name);
  }

  it('deletes the slices a deleted Node owned, in the background, with DELETED events', async () => {
    await nodeWithSlices();
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    const deleted = await call('DELETE', '/api/v1/nodes/node-a', undefined, { token: ADMIN });
    expect(deleted.body).toMatchObject({ kind: 'Status', status: 'Success' });
    const events = await firstEvents(
      `resourceVersion=${String(metadataOf(list.body).resourceVersion)}`,
      2,
    );
    expect(events.map((e) => [e.type, metadataOf(e.object).name])).toEqual([
      ['DELETED', 'owned-1'],
      ['DELETED', 'owned-2'],
    ]);
    expect(await names()).toEqual(['other']);
  });

  it('orphans the slices instead when the Node is deleted with propagationPolicy Orphan', async () => {
    await nodeWithSlices();
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    const deleted = await call(
      'DELETE',
      '/api/v1/nodes/node-a',
      { propagationPolicy: 'Orphan' },
      { token: ADMIN },
    );
    expect(metadataOf(deleted.body).finalizers).toEqual(['orphan']);
    const events = await firstEvents(
      `resourceVersion=${String(metadataOf(list.body).resourceVersion)}`,
      2,
    );
    expect(events.map((e) => [e.type, metadataOf(e.object).name])).toEqual([
      ['MODIFIED', 'owned-1'],
      ['MODIFIED', 'owned-2'],
    ]);
    expect(await names()).toEqual(['other', 'owned-1', 'owned-2']);
    const orphan = await call('GET', `${SLICES}/owned-1`, undefined, { token: ADMIN });
    expect(metadataOf(orphan.body).ownerReferences).toBeUndefined();
    expect((await call('GET', '/api/v1/nodes/node-a', undefined, { token: ADMIN })).status).toBe(
      404,
    );
  });

  it('deletes a Node with propagationPolicy Foreground: marked first, then its slices go', async () => {
    await nodeWithSlices();
    const list = await call('GET', SLICES, undefined, { token: ADMIN });
    const deleted = await call(
      'DELETE',
      '/api/v1/nodes/node-a',
      { propagationPolicy: 'Foreground' },
      { token: ADMIN },
    );
    // The answer is the object, marked for deletion, held by the garbage collector's finalizer.
    expect(deleted.status).toBe(200);
    expect(metadataOf(deleted.body).finalizers).toEqual(['foregroundDeletion']);
    expect(metadataOf(deleted.body).deletionTimestamp).toEqual(expect.any(String));
    const events = await firstEvents(
      `resourceVersion=${String(metadataOf(list.body).resourceVersion)}`,
      2,
    );
    expect(events.map((e) => [e.type, metadataOf(e.object).name])).toEqual([
      ['DELETED', 'owned-1'],
      ['DELETED', 'owned-2'],
    ]);
    expect(await names()).toEqual(['other']);
  });
});
