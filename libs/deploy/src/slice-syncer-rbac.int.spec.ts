import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import {
  ClusterCache,
  EventRecorder,
  KubeEventClient,
  KubeNodeStatusClient,
  KubeSliceClient,
  KubeTransport,
  microTime,
} from '@slicekeeper/kube';
import type { EventWrite, NodeChange, NodeConditionWrite } from '@slicekeeper/kube';
import type { ResourceSlice } from '@slicekeeper/slices';
import { repoRoot, requestJson, waitFor } from '@slicekeeper/testing';
import { renderKustomization } from './kube-object';
import type { KubeObject } from './kube-object';

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** Non-resource URLs every user may GET (the default system:public-info-viewer role). */
const PUBLIC_PATHS = new Set(['/version', '/version/', '/healthz', '/livez', '/readyz']);

const NODE = 'node-a';
const DRIVER = 'gpu.example.com';
const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const NODES = '/api/v1/nodes';
/** Where Events about Nodes go, and the slice-syncer's only namespaced role. */
const EVENTS_NAMESPACE = 'default';
/** The identity the slice-syncer has in the cluster (k8s/base/slice-syncer.yaml). */
const SYNCER_USER = 'system:serviceaccount:slicekeeper:slice-syncer';

function slice(): ResourceSlice {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      generateName: `00000-${DRIVER}-${NODE}-`,
      labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' },
    },
    spec: {
      driver: DRIVER,
      pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
      nodeName: NODE,
      devices: [{ name: 'gpu-0', attributes: { model: { string: 'H100' } } }],
    },
  };
}

/** An Event about the Node as the syncer's recorder writes it. */
function nodeEvent(name = `${NODE}.1879d2c3a0b1c2d3`): EventWrite {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace: EVENTS_NAMESPACE },
    eventTime: microTime(Date.now()),
    reportingController: 'slicekeeper.dev/slice-syncer',
    reportingInstance: 'slice-syncer-0',
    action: 'PublishResourceSlices',
    reason: 'InvalidInventory',
    regarding: { apiVersion: 'v1', kind: 'Node', name: NODE, uid: NODE },
    note: `driver ${DRIVER}: inventory refused`,
    type: 'Warning',
  };
}

function createNode(url: string, name: string): Promise<unknown> {
  return requestJson(url, 'POST', NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name } });
}

/** A warning the cluster cache logged: its message and the error it names. */
interface Warning {
  msg: string;
  err: string;
}

/**
 * The syncer's connection, write client and cluster cache, wired as its main.ts wires them, with
 * what a user would see of them: warnings logged, requests counted (the
 * `slicekeeper_kube_requests_total` metric), changes reported.
 */
function syncerKubeAccess(running: RunningKubeEmulator) {
  const transport = new KubeTransport({ kind: 'yaml', text: running.kubeconfig });
  const warnings: Warning[] = [];
  const requests: [string, string, number | 'error'][] = [];
  const foreignChanges: string[] = [];
  const nodeChanges: NodeChange[] = [];
  const onRequest = (verb: string, resource: string, code: number | 'error') => {
    requests.push([verb, resource, code]);
  };
  const api = new KubeSliceClient({ transport, onRequest });
  const nodeStatus = new KubeNodeStatusClient({ transport, onRequest });
  const events = new KubeEventClient({ transport, onRequest });
  const cache = new ClusterCache({
    transport,
    logger: {
      debug: () => undefined,
      info: () => undefined,
      warn: (...[fields, msg]: unknown[]) => {
        const { err } = fields as { err?: unknown };
        warnings.push({ msg: String(msg), err: String(err) });
      },
    },
    onRequest,
    onForeignChange: (_key, change) => foreignChanges.push(change.name),
    onNode: (change) => nodeChanges.push(change),
    backoff: { initialMs: 5, maxMs: 20 },
  });
  return {
    api,
    nodeStatus,
    events,
    cache,
    warnings,
    requests,
    foreignChanges,
    nodeChanges,
    close: async () => {
      await cache.close();
      await api.close();
      transport.close();
    },
  };
}

/** API group of each resource the emulator serves, from its discovery documents. */
async function discoverGroups(url: string): Promise<Map<string, string>> {
  const get = async <T>(path: string): Promise<T | undefined> => {
    const response = await fetch(`${url}${path}`, { headers: { accept: 'application/json' } });
    // The emulator lists groups it does not serve (as aggregated APIs may be unavailable).
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
    return (await response.json()) as T;
  };
  interface ResourceList {
    resources: { name: string }[];
  }
  const groups = new Map<string, string>();
  for (const { name } of (await get<ResourceList>('/api/v1'))?.resources ?? [])
    groups.set(name, '');
  const apis = await get<{
    groups: { name: string; preferredVersion: { groupVersion: string } }[];
  }>('/apis');
  for (const group of apis?.groups ?? []) {
    const list = await get<ResourceList>(`/apis/${group.preferredVersion.groupVersion}`);
    for (const { name } of list?.resources ?? []) groups.set(name, group.name);
  }
  return groups;
}

/** The DRAResourcesPublished condition as the syncer writes it. */
function publishedCondition(): NodeConditionWrite {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    type: 'DRAResourcesPublished',
    status: 'True',
    reason: 'Published',
    message: `published: ${DRIVER}`,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
}

/**
 * Every request the syncer can make to Kubernetes, as `group/resource/verb`: drives each public
 * member of KubeSliceClient, KubeNodeStatusClient and ClusterCache (the types below fail to
 * compile when one is added and not driven here) against the kube emulator and reads the
 * emulator's request log.
 */
async function verbsTheSyncerUses(running: RunningKubeEmulator): Promise<{
  resources: string[];
  nonResourcePaths: string[];
}> {
  await createNode(running.url, NODE);
  running.emulator.reset({ keepObjects: true });

  const { api, nodeStatus, events, cache, close } = syncerKubeAccess(running);
  const key = { node: NODE, driver: DRIVER };
  try {
    let stored = await api.createSlice(slice());
    const driveClient = {
      createSlice: async () => {
        stored = await api.createSlice(slice());
      },
      // Only after a conflict: the cache's view of the key was stale.
      listSlices: async () => {
        expect(await api.listSlices(key)).toHaveLength(2);
      },
      // Another served version: the same resource, so the same rules.
      useApiVersion: async () => {
        api.useApiVersion('v1beta2');
        expect(await api.listSlices(key)).toHaveLength(2);
        api.useApiVersion('v1');
      },
      updateSlice: async () => {
        stored = await api.updateSlice({
          ...stored,
          spec: { ...stored.spec, pool: { ...stored.spec.pool, generation: 2 } },
        });
      },
      deleteSlice: async () => {
        const { name, uid, resourceVersion } = stored.metadata;
        await api.deleteSlice({ name, uid, resourceVersion });
      },
      ping: () => api.ping(),
      // The transport is shared with the cache: closing the client leaves it open.
      close: () => api.close(),
    } satisfies Record<keyof KubeSliceClient, () => Promise<unknown>>;
    for (const step of Object.values(driveClient)) await step();

    const driveNodeStatus = {
      // The DRAResourcesPublished condition, on its transitions.
      patchCondition: async () => {
        expect(await nodeStatus.patchCondition(NODE, publishedCondition())).toBeDefined();
      },
    } satisfies Record<keyof KubeNodeStatusClient, () => Promise<unknown>>;
    for (const step of Object.values(driveNodeStatus)) await step();

    const driveEvents = {
      // An Event about a Node, in the default namespace.
      create: () => events.create(nodeEvent()),
      // Its series, for a repeat.
      patchSeries: async () => {
        const series = { count: 2, lastObservedTime: microTime(Date.now()) };
        expect(await events.patchSeries(nodeEvent(), series)).toBe(true);
      },
    } satisfies Record<keyof KubeEventClient, () => Promise<unknown>>;
    for (const step of Object.values(driveEvents)) await step();

    const [left] = await api.listSlices(key);
    if (left === undefined) throw new Error('the first slice is gone');
    const driveCache = {
      // Lists and then watches the managed slices and the Nodes (metadata only).
      start: async () => {
        await cache.start();
        await waitFor(() => running.emulator.watchCount() === 2, {
          description: 'the slice and Node watches',
        });
      },
      synced: () => {
        expect(cache.synced).toBe(true);
      },
      slicesOf: () => {
        expect(cache.slicesOf(key)).toHaveLength(1);
      },
      slicesOfPool: () => {
        expect(cache.slicesOfPool(DRIVER, NODE)).toHaveLength(1);
      },
      keys: () => {
        expect(cache.keys()).toEqual([key]);
      },
      keysOfNode: () => {
        expect(cache.keysOfNode(NODE)).toEqual([key]);
      },
      nodeUid: () => {
        expect(cache.nodeUid(NODE)).toEqual(expect.any(String));
      },
      publishedCondition: () => {
        expect(cache.publishedCondition(NODE)).toEqual({
          kind: 'set',
          status: 'True',
          reason: 'Published',
        });
      },
      recordNodeCondition: () => {
        cache.recordNodeCondition(NODE, '1', undefined);
      },
      recordWrite: () => {
        cache.recordWrite(left);
      },
      recordDelete: () => {
        cache.recordDelete(left.metadata);
      },
      forgetDelete: () => {
        cache.forgetDelete(left.metadata.name);
      },
      // Lists and watches the slices again in another served version.
      useApiVersion: () => cache.useApiVersion('v1beta2'),
      // Anti-entropy: lists both again.
      relist: () => cache.relist(),
      close: () => cache.close(),
    } satisfies Record<keyof ClusterCache, () => unknown>;
    for (const step of Object.values(driveCache)) await step();
  } finally {
    await close();
  }

  const log = running.emulator.requestLog();
  expect(log.every((entry) => entry.code < 400)).toBe(true);
  const groups = await discoverGroups(running.url);
  const resources = log
    .filter((entry) => !entry.resource.startsWith('/'))
    .map((entry) => {
      const resource = entry.resource.split('/')[0] ?? '';
      const group = groups.get(resource);
      if (group === undefined) throw new Error(`no API group serves ${entry.resource}`);
      return `${group}/${entry.resource}/${entry.verb}`;
    });
  const nonResourcePaths = log
    .filter((entry) => entry.resource.startsWith('/'))
    .map((entry) => entry.resource);
  return { resources: [...new Set(resources)].sort(), nonResourcePaths };
}

type SyncerKubeAccess = ReturnType<typeof syncerKubeAccess>;

/**
 * kube-apiserver's message when no RBAC rule grants the syncer `verb` on `group/resource` (in
 * `namespace`, for a namespaced resource).
 */
function forbiddenMessage(
  group: string,
  resource: string,
  verb: string,
  namespace?: string,
): string {
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const scope =
    namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  return `${qualified} is forbidden: User "${SYNCER_USER}" cannot ${verb} resource "${resource}" in API group "${group}" ${scope}`;
}

/** Namespaced resources the syncer writes, with the namespace it writes them in. */
const NAMESPACED: Record<string, string> = { 'events.k8s.io/events': EVENTS_NAMESPACE };

/** How many times the cache logged `msg`. */
function warned(access: SyncerKubeAccess, msg: string): number {
  return access.warnings.filter((warning) => warning.msg === msg).length;
}

/**
 * Without list, the first list never comes in: the cache retries with backoff and logs each
 * failure, start() does not resolve, and `synced` (the syncer's readiness) stays false.
 */
async function expectNeverSynced(
  access: SyncerKubeAccess,
  kind: string,
  forbidden: string,
): Promise<void> {
  const started = access.cache.start().then(
    () => 'synced',
    (error: unknown) => (error as Error).message,
  );
  await waitFor(() => warned(access, 'list failed') >= 3, { description: 'retried lists' });
  expect(access.warnings).toContainEqual({
    msg: 'list failed',
    err: `list ${kind}: forbidden: ${forbidden}`,
  });
  expect(access.cache.synced).toBe(false);
  await access.cache.close();
  expect(await started).toBe(`${kind}: closed`);
}

/**
 * Without watch, the first list comes in (the syncer turns ready) but every watch fails: logged
 * and counted with its 403, retried with backoff, and a change is seen only by the next
 * anti-entropy relist.
 */
async function expectWatchFailing(
  access: SyncerKubeAccess,
  kind: string,
  resource: string,
  forbidden: string,
  change: () => Promise<unknown>,
  reported: () => unknown[],
): Promise<void> {
  await access.cache.start();
  expect(access.cache.synced).toBe(true);
  await waitFor(() => warned(access, 'watch failed, resuming') >= 1, { description: 'a watch' });
  expect(access.warnings).toContainEqual({
    msg: 'watch failed, resuming',
    err: `watch ${kind}: forbidden: ${forbidden}`,
  });
  expect(access.requests).toContainEqual(['watch', resource, 403]);

  await change();
  const failed = warned(access, 'watch failed, resuming');
  await waitFor(() => warned(access, 'watch failed, resuming') >= failed + 2, {
    description: 'two more watches after the change',
  });
  expect(reported()).toEqual([]);
  await access.cache.relist();
  expect(reported()).toHaveLength(1);
}

/**
 * What the syncer does without each verb its role grants, one row per `group/resource/verb`:
 * the proof that each is needed (a row per verb the code uses is checked below).
 */
const withoutGrant: Record<
  string,
  (access: SyncerKubeAccess, running: RunningKubeEmulator, forbidden: string) => Promise<void>
> = {
  'resource.k8s.io/resourceslices/create': async (access, _running, forbidden) => {
    await expect(access.api.createSlice(slice())).rejects.toMatchObject({
      code: 'forbidden',
      message: `create ResourceSlice "${slice().metadata.generateName ?? ''}": forbidden: ${forbidden}`,
    });
  },
  'resource.k8s.io/resourceslices/delete': async (access, _running, forbidden) => {
    const { name, uid, resourceVersion } = (await access.api.createSlice(slice())).metadata;
    await expect(access.api.deleteSlice({ name, uid, resourceVersion })).rejects.toMatchObject({
      code: 'forbidden',
      message: `delete ResourceSlice "${name}": forbidden: ${forbidden}`,
    });
  },
  'resource.k8s.io/resourceslices/list': async (access, _running, forbidden) => {
    await expect(access.api.listSlices({ node: NODE, driver: DRIVER })).rejects.toMatchObject({
      code: 'forbidden',
      message: `list ResourceSlices of "${NODE}/${DRIVER}": forbidden: ${forbidden}`,
    });
    await expectNeverSynced(access, 'ResourceSlices', forbidden);
  },
  'resource.k8s.io/resourceslices/update': async (access, _running, forbidden) => {
    const created = await access.api.createSlice(slice());
    await expect(
      access.api.updateSlice({
        ...created,
        spec: { ...created.spec, pool: { ...created.spec.pool, generation: 2 } },
      }),
    ).rejects.toMatchObject({
      code: 'forbidden',
      message: `update ResourceSlice "${created.metadata.name}": forbidden: ${forbidden}`,
    });
  },
  'resource.k8s.io/resourceslices/watch': (access, running, forbidden) =>
    expectWatchFailing(
      access,
      'ResourceSlices',
      'resourceslices',
      forbidden,
      () => requestJson(running.url, 'POST', SLICES, slice()),
      () => access.foreignChanges,
    ),
  '/nodes/list': (access, _running, forbidden) => expectNeverSynced(access, 'Nodes', forbidden),
  '/nodes/status/patch': async (access, running, forbidden) => {
    await createNode(running.url, NODE);
    await expect(
      access.nodeStatus.patchCondition(NODE, publishedCondition()),
    ).rejects.toMatchObject({
      code: 'forbidden',
      message: `patch status of Node "${NODE}": forbidden: ${forbidden}`,
    });
  },
  'events.k8s.io/events/create': async (access, _running, forbidden) => {
    const event = nodeEvent();
    await expect(access.events.create(event)).rejects.toMatchObject({
      code: 'forbidden',
      message: `create Event "${EVENTS_NAMESPACE}/${event.metadata.name}": forbidden: ${forbidden}`,
    });
    // What the syncer does of it: Events are best effort, and a missing grant is said once.
    const logged: string[] = [];
    const recorder = new EventRecorder({
      sink: access.events,
      reportingController: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'slice-syncer-0',
      logger: {
        warn: (...[, msg]: unknown[]) => {
          logged.push(String(msg));
        },
      },
    });
    const occurrence = {
      regarding: event.regarding,
      type: event.type,
      action: event.action,
      note: event.note,
    };
    recorder.record({ ...occurrence, reason: 'InvalidInventory' });
    recorder.record({ ...occurrence, reason: 'NodeMissing' });
    await recorder.close();
    expect(logged).toEqual(['events not recorded: no RBAC to create or patch events']);
  },
  'events.k8s.io/events/patch': async (access, _running, forbidden) => {
    const event = nodeEvent();
    await access.events.create(event);
    await expect(
      access.events.patchSeries(event, { count: 2, lastObservedTime: microTime(Date.now()) }),
    ).rejects.toMatchObject({
      code: 'forbidden',
      message: `patch Event "${EVENTS_NAMESPACE}/${event.metadata.name}": forbidden: ${forbidden}`,
    });
  },
  '/nodes/watch': (access, running, forbidden) =>
    expectWatchFailing(
      access,
      'Nodes',
      'nodes',
      forbidden,
      () => createNode(running.url, NODE),
      () => access.nodeChanges,
    ),
};

function grants(role: KubeObject): string[] {
  const rules = role['rules'] as PolicyRule[];
  return rules
    .flatMap((rule) =>
      (rule.apiGroups ?? []).flatMap((group) =>
        (rule.resources ?? []).flatMap((resource) =>
          rule.verbs.map((verb) => `${group}/${resource}/${verb}`),
        ),
      ),
    )
    .sort();
}

let running: RunningKubeEmulator;
let used: { resources: string[]; nonResourcePaths: string[] };

beforeAll(async () => {
  running = await startKubeEmulator({ port: 0 });
  used = await verbsTheSyncerUses(running);
});

afterAll(async () => {
  await running.close();
});

describe("the slice-syncer's RBAC", () => {
  it('is derived from what the clients and the cache really call: ResourceSlices, Nodes and Events', () => {
    expect(used.resources.length).toBeGreaterThan(0);
    // Reads come from lists and watches only: no rule for reading one object by name.
    expect(used.resources.filter((grant) => grant.endsWith('/get'))).toEqual([]);
    // Its readiness check reads /version, which every user may read without a rule.
    expect(used.nonResourcePaths).toContain('/version');
    expect(used.nonResourcePaths.filter((path) => !PUBLIC_PATHS.has(path))).toEqual([]);
  });

  it.each(['dev', 'prod'])(
    '%s: the roles bound to the syncer grant exactly the verbs it uses, each where it uses it',
    async (overlay) => {
      const objects = await renderKustomization(join(repoRoot, 'k8s/overlays', overlay));
      const boundRoles = objects
        .filter(
          (o) =>
            (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') &&
            (o['subjects'] as { kind: string; name: string }[]).some(
              (s) => s.kind === 'ServiceAccount' && s.name === 'slice-syncer',
            ),
        )
        .map((binding) => {
          const ref = binding['roleRef'] as { kind: string; name: string };
          const role = objects.find(
            (o) =>
              o.kind === ref.kind &&
              o.metadata.name === ref.name &&
              o.metadata.namespace === binding.metadata.namespace,
          );
          if (role === undefined) throw new Error(`${ref.kind} ${ref.name} is not rendered`);
          return role;
        });
      for (const role of boundRoles) {
        for (const rule of role['rules'] as PolicyRule[]) {
          expect(rule.resourceNames).toBeUndefined();
          expect(rule.nonResourceURLs).toBeUndefined();
        }
      }
      // Cluster-wide what is not namespaced; what is, by a Role in its namespace only.
      const expected = used.resources.map((grant) => {
        const namespace = NAMESPACED[grant.slice(0, grant.lastIndexOf('/'))];
        return namespace === undefined ? grant : `${grant} in ${namespace}`;
      });
      const granted = boundRoles.flatMap((role) =>
        role.kind === 'ClusterRole'
          ? grants(role)
          : grants(role).map((grant) => `${grant} in ${role.metadata.namespace ?? ''}`),
      );
      expect(granted.sort()).toEqual(expected);
    },
  );

  it('has a least-privilege check below for every verb the syncer uses', () => {
    expect(Object.keys(withoutGrant).sort()).toEqual(used.resources);
  });

  it('covers all Kubernetes access: only libs/kube uses the Kubernetes client', () => {
    const importers: string[] = [];
    for (const group of ['apps', 'libs']) {
      for (const project of readdirSync(join(repoRoot, group))) {
        const src = join(repoRoot, group, project, 'src');
        let files: string[];
        try {
          files = readdirSync(src, { recursive: true, encoding: 'utf8' });
        } catch {
          continue;
        }
        for (const file of files) {
          if (!file.endsWith('.ts') || file.endsWith('.spec.ts')) continue;
          const text = readFileSync(join(src, file), 'utf8');
          if (/from '@kubernetes\/client-node'|require\('@kubernetes\/client-node'\)/.test(text)) {
            importers.push(`${group}/${project}`);
          }
        }
      }
    }
    expect([...new Set(importers)].filter((p) => p !== 'libs/deploy')).toEqual(['libs/kube']);
  });
});

describe('the slice-syncer without one of the verbs its role grants', () => {
  let denied: RunningKubeEmulator;
  let access: SyncerKubeAccess;

  beforeEach(async () => {
    denied = await startKubeEmulator({ port: 0 });
    access = syncerKubeAccess(denied);
  });

  afterEach(async () => {
    await access.close();
    await denied.close();
  });

  // The emulator models no RBAC rules (only admin and read-only tokens), so the missing rule is
  // a 403 injected for that verb, worded as kube-apiserver's RBAC authorizer words it.
  it.each(Object.entries(withoutGrant))('%s', async (grant, check) => {
    // `group/resource/verb`, where a subresource's resource is `resource/subresource`.
    const [group = '', ...path] = grant.split('/');
    const verb = path.pop() ?? '';
    const resource = path.join('/');
    const forbidden = forbiddenMessage(group, resource, verb, NAMESPACED[`${group}/${resource}`]);
    // With a duration, the fault answers every matching request until it expires.
    denied.emulator.injectFault({
      verb,
      resource,
      status: 403,
      durationMs: 3_600_000,
      message: forbidden,
    });
    await check(access, denied, forbidden);
  });
});
