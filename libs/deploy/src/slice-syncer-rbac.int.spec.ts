import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { KubeSliceClient } from '@slicekeeper/kube';
import type { ResourceSlice } from '@slicekeeper/slices';
import { repoRoot } from '@slicekeeper/testing';
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

/**
 * Every request the syncer's Kubernetes client can make, as `group/resource/verb`: drives each
 * public method of KubeSliceClient (the type below fails to compile when a method is added and
 * not driven here) against the kube emulator and reads the emulator's request log.
 */
async function verbsTheSyncerUses(running: RunningKubeEmulator): Promise<{
  resources: string[];
  nonResourcePaths: string[];
}> {
  const created = await fetch(`${running.url}/api/v1/nodes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }),
  });
  expect(created.status).toBe(201);
  running.emulator.reset({ keepObjects: true });

  const api = new KubeSliceClient({ kubeconfig: { kind: 'yaml', text: running.kubeconfig } });
  let stored = await api.createSlice(slice());
  const drive = {
    createSlice: async () => {
      stored = await api.createSlice(slice());
    },
    listSlices: async () => {
      expect(await api.listSlices({ node: NODE, driver: DRIVER })).toHaveLength(2);
    },
    listManagedSlices: async () => {
      for await (const page of api.listManagedSlices()) expect(page.length).toBeGreaterThan(0);
    },
    getNodeUid: async () => {
      // Cold cache: every Node's metadata in one list; with maxAgeMs: a fresh read of one Node.
      const uid = await api.getNodeUid(NODE);
      expect(uid).toEqual(expect.any(String));
      expect(await api.getNodeUid(NODE, { maxAgeMs: 0 })).toBe(uid);
    },
    forgetNode: () => {
      api.forgetNode(NODE);
      return Promise.resolve();
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
    close: () => api.close(),
  } satisfies Record<keyof KubeSliceClient, () => Promise<unknown>>;
  for (const step of Object.values(drive)) await step();

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
  it('is derived from what the client really calls: ResourceSlices and Nodes only', () => {
    expect(used.resources.length).toBeGreaterThan(0);
    // Its readiness check reads /version, which every user may read without a rule.
    expect(used.nonResourcePaths).toContain('/version');
    expect(used.nonResourcePaths.filter((path) => !PUBLIC_PATHS.has(path))).toEqual([]);
  });

  it.each(['dev', 'prod'])(
    '%s: the ClusterRole bound to the syncer grants exactly the verbs it uses',
    async (overlay) => {
      const objects = await renderKustomization(join(repoRoot, 'k8s/overlays', overlay));
      const bindings = objects.filter(
        (o) =>
          o.kind === 'ClusterRoleBinding' &&
          (o['subjects'] as { kind: string; name: string }[]).some(
            (s) => s.kind === 'ServiceAccount' && s.name === 'slice-syncer',
          ),
      );
      expect(bindings).toHaveLength(1);
      const roleName = (bindings[0]?.['roleRef'] as { kind: string; name: string }).name;
      const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === roleName);
      if (role === undefined) throw new Error(`ClusterRole ${roleName} is not rendered`);
      const rules = role['rules'] as PolicyRule[];
      for (const rule of rules) {
        expect(rule.resourceNames).toBeUndefined();
        expect(rule.nonResourceURLs).toBeUndefined();
      }
      expect(grants(role)).toEqual(used.resources);
    },
  );

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
