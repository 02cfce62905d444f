import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';
import { bearer, kubectl, request } from './identity-test.test-helper';

/**
 * RBAC objects, SubjectAccessReview / SelfSubjectAccessReview and RBAC enforced on requests made
 * with ServiceAccount tokens, as kube-apiserver 1.34 does them: pkg/registry/rbac (storage and
 * defaults), pkg/apis/rbac/validation (422s), plugin/pkg/auth/authorizer/rbac (decisions and
 * reasons), pkg/registry/authorization/subjectaccessreview (review shapes),
 * endpoints/handlers/responsewriters/errors.go `Forbidden` (403 texts) and
 * endpoints/filters/impersonation.go (`kubectl --as`).
 */

let dir: string;
let running: RunningKubeEmulator;
let kc: string;
const ns = 'kube-system';
const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

const registrarYaml = (names: string[]) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: slicekeeper-plugin-registrar
rules:
- apiGroups: ["slicekeeper.dev"]
  resources: ["plugins"]
  verbs: ["create", "delete"]
  resourceNames: [${names.map((n) => JSON.stringify(n)).join(', ')}]
`;

async function saToken(name: string): Promise<string> {
  await request(running.url, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    metadata: { name },
  });
  const answer = await request(
    running.url,
    'POST',
    `/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`,
    { spec: {} },
  );
  return (answer.body.status as { token: string }).token;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rbac-'));
  running = await startKubeEmulator({ kubeconfigPath: join(dir, 'kubeconfig') });
  kc = running.kubeconfigPath ?? '';
});

afterEach(async () => {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

describe('kubectl auth can-i against RBAC objects', () => {
  it('answers no, then yes once kubectl create clusterrole and clusterrolebinding grant it', async () => {
    const canI = () =>
      kubectl(
        kc,
        dir,
        'auth',
        'can-i',
        'list',
        'resourceslices.resource.k8s.io',
        '--as=system:serviceaccount:kube-system:driver',
      );
    const before = await canI();
    expect({ code: before.code, stdout: before.stdout }).toEqual({ code: 1, stdout: 'no\n' });
    const role = await kubectl(
      kc,
      dir,
      'create',
      'clusterrole',
      'slice-reader',
      '--verb=list',
      '--resource=resourceslices.resource.k8s.io',
    );
    expect(role.stdout).toBe('clusterrole.rbac.authorization.k8s.io/slice-reader created\n');
    const bound = await kubectl(
      kc,
      dir,
      'create',
      'clusterrolebinding',
      'driver-slice-reader',
      '--clusterrole=slice-reader',
      '--serviceaccount=kube-system:driver',
    );
    expect(bound.stdout).toBe(
      'clusterrolebinding.rbac.authorization.k8s.io/driver-slice-reader created\n',
    );
    const after = await canI();
    expect({ code: after.code, stdout: after.stdout }).toEqual({ code: 0, stdout: 'yes\n' });
    const listed = await kubectl(kc, dir, 'get', 'clusterrolebindings');
    expect(listed.stdout.split('\n')[1]?.split(/\s+/).slice(0, 2)).toEqual([
      'driver-slice-reader',
      'ClusterRole/slice-reader',
    ]);
  });

  it('asks about plugins.slicekeeper.dev in group "" when discovery does not list it (kubectl resourceFor), as against a real server', async () => {
    writeFileSync(join(dir, 'role.yaml'), registrarYaml(['gpu.example.com']));
    expect((await kubectl(kc, dir, 'create', '-f', join(dir, 'role.yaml'))).stdout).toBe(
      'clusterrole.rbac.authorization.k8s.io/slicekeeper-plugin-registrar created\n',
    );
    await kubectl(
      kc,
      dir,
      'create',
      'clusterrolebinding',
      'gpu-driver-registrar',
      '--clusterrole=slicekeeper-plugin-registrar',
      '--serviceaccount=kube-system:driver',
    );
    const canI = await kubectl(
      kc,
      dir,
      'auth',
      'can-i',
      'create',
      'plugins.slicekeeper.dev/gpu.example.com',
      '--as=system:serviceaccount:kube-system:driver',
    );
    expect(canI).toEqual({
      code: 1,
      stdout: 'no\n',
      stderr:
        "Warning: the server doesn't have a resource type 'plugins' in group 'slicekeeper.dev'\n\n",
    });
    // A SubjectAccessReview names the group: the grant is there.
    const review = (driver: string) => `apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: system:serviceaccount:kube-system:driver
  groups: [system:serviceaccounts, system:serviceaccounts:kube-system, system:authenticated]
  resourceAttributes: {verb: create, group: slicekeeper.dev, resource: plugins, name: ${driver}}
`;
    for (const [driver, allowed] of [
      ['gpu.example.com', 'true'],
      ['other.example.com', 'false'],
    ] as const) {
      writeFileSync(join(dir, 'sar.yaml'), review(driver));
      const asked = await kubectl(
        kc,
        dir,
        'create',
        '-f',
        join(dir, 'sar.yaml'),
        // kubectl validates a kind without PATCH against OpenAPI v2, which the emulator lacks.
        '--validate=false',
        '-o',
        'jsonpath={.status.allowed}',
      );
      expect(asked.stdout).toBe(allowed);
    }
  });
});

describe('SubjectAccessReview', () => {
  const review = (spec: Record<string, unknown>) =>
    request(running.url, 'POST', SAR, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec,
    });
  const pluginCreate = {
    user: 'system:serviceaccount:kube-system:driver',
    groups: [
      'system:serviceaccounts',
      'system:serviceaccounts:kube-system',
      'system:authenticated',
    ],
    resourceAttributes: {
      verb: 'create',
      group: 'slicekeeper.dev',
      resource: 'plugins',
      name: 'gpu.example.com',
    },
  };

  it('answers allowed false with no reason, then the binding that allows it', async () => {
    const denied = await review(pluginCreate);
    expect(denied.status).toBe(201);
    expect(denied.body).toEqual({
      kind: 'SubjectAccessReview',
      apiVersion: 'authorization.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec: pluginCreate,
      status: { allowed: false },
    });
    writeFileSync(join(dir, 'role.yaml'), registrarYaml(['gpu.example.com']));
    await kubectl(kc, dir, 'create', '-f', join(dir, 'role.yaml'));
    await kubectl(
      kc,
      dir,
      'create',
      'clusterrolebinding',
      'reg',
      '--clusterrole=slicekeeper-plugin-registrar',
      '--serviceaccount=kube-system:driver',
    );
    const allowed = await review(pluginCreate);
    expect(allowed.body.status).toEqual({
      allowed: true,
      reason:
        'RBAC: allowed by ClusterRoleBinding "reg" of ClusterRole "slicekeeper-plugin-registrar" to ServiceAccount "driver/kube-system"',
    });
  });

  it('names a binding whose role does not exist (RBAC resolution error)', async () => {
    await kubectl(
      kc,
      dir,
      'create',
      'clusterrolebinding',
      'reg',
      '--clusterrole=missing',
      '--serviceaccount=kube-system:driver',
    );
    expect((await review(pluginCreate)).body.status).toEqual({
      allowed: false,
      reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found',
    });
  });

  it.each([
    [
      'ValidateSubjectAccessReviewSpec: neither attributes',
      { user: 'u' },
      'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
    ],
    [
      'ValidateSubjectAccessReviewSpec: no user or group',
      { resourceAttributes: { verb: 'get', resource: 'nodes' } },
      'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified',
    ],
  ])('refuses an invalid review: %s', async (_name, spec, message) => {
    const answer = await review(spec);
    expect({ code: answer.status, message: answer.body.message }).toEqual({ code: 422, message });
  });
});

describe('LocalSubjectAccessReview', () => {
  const path = `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`;

  it.each([
    [
      'ValidateLocalSubjectAccessReview: another namespace',
      { user: 'u', resourceAttributes: { namespace: 'default', verb: 'get', resource: 'pods' } },
      'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "default": must match metadata.namespace',
    ],
    [
      'ValidateLocalSubjectAccessReview: non-resource attributes',
      { user: 'u', nonResourceAttributes: { path: '/healthz', verb: 'get' } },
      'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"Path":"/healthz","Verb":"get"}: disallowed on this kind of request',
    ],
  ])('refuses %s', async (_name, spec, message) => {
    const answer = await request(running.url, 'POST', path, { spec });
    expect({ code: answer.status, message: answer.body.message }).toEqual({ code: 422, message });
  });

  it('answers within its namespace', async () => {
    const answer = await request(running.url, 'POST', path, {
      spec: {
        user: 'u',
        groups: ['system:masters'],
        resourceAttributes: { namespace: ns, verb: 'get', resource: 'pods' },
      },
    });
    expect({ code: answer.status, status: answer.body.status }).toEqual({
      code: 201,
      status: { allowed: true },
    });
  });
});

describe('RBAC on requests bearing a ServiceAccount token', () => {
  it('forbids what no binding grants, with the Forbidden text of responsewriters', async () => {
    const token = await saToken('reader');
    const answer = await request(running.url, 'GET', '/api/v1/nodes', undefined, bearer(token));
    expect(answer).toEqual({
      status: 403,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'nodes is forbidden: User "system:serviceaccount:kube-system:reader" cannot list resource "nodes" in API group "" at the cluster scope',
        reason: 'Forbidden',
        details: { kind: 'nodes' },
        code: 403,
      },
    });
    const named = await request(
      running.url,
      'DELETE',
      `/api/v1/namespaces/${ns}/serviceaccounts/reader`,
      undefined,
      bearer(token),
    );
    expect(named.body.message).toBe(
      'serviceaccounts "reader" is forbidden: User "system:serviceaccount:kube-system:reader" cannot delete resource "serviceaccounts" in API group "" in the namespace "kube-system"',
    );
  });

  it('allows discovery and self reviews to every authenticated identity (bootstrap policy)', async () => {
    const token = await saToken('reader');
    expect((await request(running.url, 'GET', '/apis', undefined, bearer(token))).status).toBe(200);
    const self = await request(
      running.url,
      'POST',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      { spec: { resourceAttributes: { verb: 'list', resource: 'nodes' } } },
      bearer(token),
    );
    expect({ code: self.status, status: self.body.status }).toEqual({
      code: 201,
      status: { allowed: false },
    });
    const whoami = await request(
      running.url,
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      {},
      bearer(token),
    );
    expect((whoami.body.status as { userInfo: { username: string } }).userInfo.username).toBe(
      'system:serviceaccount:kube-system:reader',
    );
  });

  it('allows within the namespace a RoleBinding grants, and nowhere else', async () => {
    const token = await saToken('reader');
    writeFileSync(
      join(dir, 'rb.yaml'),
      `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sa-reader, namespace: kube-system}
rules:
- {apiGroups: [""], resources: ["serviceaccounts"], verbs: ["get", "list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sa-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sa-reader}
subjects:
- {kind: ServiceAccount, name: reader}
`,
    );
    expect((await kubectl(kc, dir, 'create', '-f', join(dir, 'rb.yaml'))).code).toBe(0);
    const inNamespace = await request(
      running.url,
      'GET',
      `/api/v1/namespaces/${ns}/serviceaccounts`,
      undefined,
      bearer(token),
    );
    expect(inNamespace.status).toBe(200);
    const elsewhere = await request(
      running.url,
      'GET',
      '/api/v1/namespaces/default/serviceaccounts',
      undefined,
      bearer(token),
    );
    expect(elsewhere.status).toBe(403);
  });

  it('refuses impersonation to a ServiceAccount without the impersonate verb', async () => {
    const token = await saToken('reader');
    const answer = await request(running.url, 'GET', '/api/v1/nodes', undefined, {
      ...bearer(token),
      'Impersonate-User': 'system:serviceaccount:kube-system:driver',
    });
    expect({ code: answer.status, message: answer.body.message }).toEqual({
      code: 403,
      message:
        'serviceaccounts "driver" is forbidden: User "system:serviceaccount:kube-system:reader" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"',
    });
  });
});

describe('RBAC objects', () => {
  it.each([
    [
      'ValidatePolicyRule: verbs required',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      { metadata: { name: 'r' }, rules: [{ apiGroups: [''], resources: ['nodes'] }] },
      'ClusterRole.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least one value',
    ],
    [
      'ValidatePolicyRule: namespaced rules cannot name URLs',
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
      { metadata: { name: 'r' }, rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }] },
      'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs',
    ],
    [
      'ValidateRoleBindingSubject: a ClusterRoleBinding ServiceAccount needs a namespace',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      {
        metadata: { name: 'b' },
        roleRef: { kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name: 'driver' }],
      },
      'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].namespace: Required value',
    ],
    [
      'ValidateRoleBinding: roleRef kind',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      { metadata: { name: 'b' }, roleRef: { kind: 'Role', name: 'x' } },
      'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
    ],
  ])('refuses %s', async (_name, path, body, message) => {
    const answer = await request(running.url, 'POST', path, body);
    expect({ code: answer.status, message: answer.body.message }).toEqual({ code: 422, message });
  });

  it('defaults roleRef.apiGroup and User subjects’ apiGroup (SetDefaults_RoleBinding, SetDefaults_Subject)', async () => {
    const created = await request(
      running.url,
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      {
        metadata: { name: 'b' },
        roleRef: { kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'User', name: 'alice' }],
      },
    );
    expect(created.status).toBe(201);
    expect({ roleRef: created.body.roleRef, subjects: created.body.subjects }).toEqual({
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
    });
  });

  it('refuses to change a binding’s roleRef', async () => {
    const path = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';
    await request(running.url, 'POST', path, {
      metadata: { name: 'b' },
      roleRef: { kind: 'ClusterRole', name: 'view' },
    });
    const answer = await request(
      running.url,
      'PATCH',
      `${path}/b`,
      { roleRef: { name: 'edit' } },
      { 'Content-Type': 'application/merge-patch+json' },
    );
    expect({ code: answer.status, message: answer.body.message }).toEqual({
      code: 422,
      message:
        'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: cannot change roleRef',
    });
  });
});
