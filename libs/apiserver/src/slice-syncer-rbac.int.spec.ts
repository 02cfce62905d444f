import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';
import { kubectl, request } from './identity-test.test-helper';

/**
 * The slice-syncer's least-privilege RBAC (k8s/base/slice-syncer.yaml, read as shipped) evaluated
 * by the emulator's RBAC authorizer for the syncer's ServiceAccount: every verb the syncer uses is
 * allowed, anything else is forbidden as a real server forbids it. The ServiceAccount lives in the
 * `slicekeeper` namespace, which the emulator cannot create (no Namespace objects), so requests
 * act as it by impersonation (`kubectl --as`, `Impersonate-User`), which RBAC evaluates the same
 * way as its token.
 */

const MANIFEST = join(__dirname, '..', '..', '..', 'k8s', 'base', 'slice-syncer.yaml');
const SYNCER = 'system:serviceaccount:slicekeeper:slice-syncer';
const RBAC_KINDS: Readonly<Record<string, string>> = {
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  Role: 'roles',
  RoleBinding: 'rolebindings',
};

let dir: string;
let running: RunningKubeEmulator;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'syncer-rbac-'));
  running = await startKubeEmulator({ kubeconfigPath: join(dir, 'kubeconfig') });
  for (const doc of parseAllDocuments(readFileSync(MANIFEST, 'utf8'))) {
    const obj = doc.toJS() as {
      kind?: string;
      metadata: { namespace?: string };
    } | null;
    const resource = RBAC_KINDS[obj?.kind ?? ''];
    if (obj === null || resource === undefined) continue;
    const namespace = obj.metadata.namespace;
    const path =
      namespace === undefined
        ? `/apis/rbac.authorization.k8s.io/v1/${resource}`
        : `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/${resource}`;
    const created = await request(running.url, 'POST', path, obj);
    expect(created.status).toBe(201);
  }
});

afterAll(async () => {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(60_000);

describe('the slice-syncer ServiceAccount under its shipped RBAC', () => {
  it.each([
    ['list resourceslices', ['list', 'resourceslices.resource.k8s.io'], 'yes'],
    ['watch resourceslices', ['watch', 'resourceslices.resource.k8s.io'], 'yes'],
    ['create resourceslices', ['create', 'resourceslices.resource.k8s.io'], 'yes'],
    ['update resourceslices', ['update', 'resourceslices.resource.k8s.io'], 'yes'],
    ['delete resourceslices', ['delete', 'resourceslices.resource.k8s.io'], 'yes'],
    ['list nodes', ['list', 'nodes'], 'yes'],
    ['watch nodes', ['watch', 'nodes'], 'yes'],
    ['patch nodes/status', ['patch', 'nodes', '--subresource=status'], 'yes'],
    ['create events in default', ['create', 'events.events.k8s.io', '-n', 'default'], 'yes'],
    ['patch events in default', ['patch', 'events.events.k8s.io', '-n', 'default'], 'yes'],
    ['not granted: patch resourceslices', ['patch', 'resourceslices.resource.k8s.io'], 'no'],
    ['not granted: update nodes', ['update', 'nodes'], 'no'],
    ['not granted: patch nodes (only nodes/status)', ['patch', 'nodes'], 'no'],
    [
      'not granted: create events in kube-system',
      ['create', 'events.events.k8s.io', '-n', 'kube-system'],
      'no',
    ],
    ['not granted: create core/v1 events', ['create', 'events', '-n', 'default'], 'no'],
  ])('kubectl auth can-i %s', async (_name, args, answer) => {
    const asked = await kubectl(
      running.kubeconfigPath ?? '',
      dir,
      'auth',
      'can-i',
      ...args,
      `--as=${SYNCER}`,
    );
    expect(asked.stdout).toBe(`${answer}\n`);
  });

  it('creates a slice and is refused a patch of it, with the real server’s 403', async () => {
    const as = { 'Impersonate-User': SYNCER };
    const slice = {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: 'node-a-gpu' },
      spec: {
        driver: 'gpu.example.com',
        nodeName: 'node-a',
        pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
        devices: [{ name: 'gpu-0' }],
      },
    };
    const created = await request(
      running.url,
      'POST',
      '/apis/resource.k8s.io/v1/resourceslices',
      slice,
      as,
    );
    expect(created.status).toBe(201);
    const patched = await request(
      running.url,
      'PATCH',
      '/apis/resource.k8s.io/v1/resourceslices/node-a-gpu',
      { metadata: { labels: { a: 'b' } } },
      { ...as, 'Content-Type': 'application/merge-patch+json' },
    );
    expect(patched).toEqual({
      status: 403,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `resourceslices.resource.k8s.io "node-a-gpu" is forbidden: User "${SYNCER}" cannot patch resource "resourceslices" in API group "resource.k8s.io" at the cluster scope`,
        reason: 'Forbidden',
        details: { name: 'node-a-gpu', group: 'resource.k8s.io', kind: 'resourceslices' },
        code: 403,
      },
    });
  });
});
