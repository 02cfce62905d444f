import { join } from 'node:path';
import { KubernetesAuthenticator, KubernetesAuthorizer } from '@slicekeeper/admission';
import type { KubeAuthentication, KubeAuthorization } from '@slicekeeper/admission';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { KubeReviewClient, KubeTransport } from '@slicekeeper/kube';
import { repoRoot, requestJson } from '@slicekeeper/testing';
import { systemClock } from '@slicekeeper/time';
import { renderKustomization } from './kube-object';
import type { KubeObject } from './kube-object';

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const NODE = 'node-a';
const DRIVER = 'gpu.example.com';
/** A namespace the emulator has (it models the system ones only). */
const NAMESPACE = 'kube-system';
/**
 * The registration API's ServiceAccount (k8s/base/registration-api.yaml), held in NAMESPACE
 * instead of slicekeeper's, which the emulator cannot hold.
 */
const API_USER = `system:serviceaccount:${NAMESPACE}:registration-api`;

/**
 * The registration API's Kubernetes access wired as its main.ts wires it: one transport, the
 * review client, and the authenticator and authorizer that answer its requests (their outcome
 * is its answer: `unavailable` is a 503 to the driver, `denied` a 403, `unauthenticated` a 401).
 */
function apiKubeAccess(running: RunningKubeEmulator, asToken?: string) {
  const transport = new KubeTransport(
    asToken === undefined
      ? { kind: 'yaml', text: running.kubeconfig }
      : {
          kind: 'yaml',
          text: JSON.stringify({
            apiVersion: 'v1',
            kind: 'Config',
            clusters: [{ name: 'emulator', cluster: { server: running.url } }],
            users: [{ name: 'registration-api', user: { token: asToken } }],
            contexts: [{ name: 'api', context: { cluster: 'emulator', user: 'registration-api' } }],
            'current-context': 'api',
          }),
        },
  );
  const requests: [string, string, number | 'error'][] = [];
  const reviews = new KubeReviewClient({
    transport,
    onRequest: (verb, resource, code) => requests.push([verb, resource, code]),
  });
  return {
    requests,
    authenticator: new KubernetesAuthenticator({ reviewer: reviews, clock: systemClock }),
    authorizer: new KubernetesAuthorizer({ reviewer: reviews, clock: systemClock }),
    close: () => {
      transport.close();
    },
  };
}
type ApiKubeAccess = ReturnType<typeof apiKubeAccess>;

/** A driver's pod on NODE and a token for it with audience slicekeeper, as kubelet projects it. */
async function driverToken(url: string): Promise<string> {
  await requestJson(url, 'POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE },
  });
  await requestJson(url, 'POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'gpu-driver' },
  });
  const pod = (await requestJson(url, 'POST', `/api/v1/namespaces/${NAMESPACE}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'gpu-driver' },
    spec: {
      serviceAccountName: 'gpu-driver',
      nodeName: NODE,
      containers: [{ name: 'driver', image: 'example.com/gpu-driver:1.0' }],
    },
  })) as { metadata: { uid: string } };
  const review = (await requestJson(
    url,
    'POST',
    `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/gpu-driver/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: ['slicekeeper'],
        expirationSeconds: 3600,
        boundObjectRef: {
          apiVersion: 'v1',
          kind: 'Pod',
          name: 'gpu-driver',
          uid: pod.metadata.uid,
        },
      },
    },
  )) as { status: { token: string } };
  return review.status.token;
}

/**
 * Every request the API makes to Kubernetes, as `group/resource/verb`: one registration of a
 * Kubernetes identity (a TokenReview, then a SubjectAccessReview) against the emulator, read
 * from the emulator's request log.
 */
async function verbsTheApiUses(running: RunningKubeEmulator): Promise<string[]> {
  const token = await driverToken(running.url);
  running.emulator.reset({ keepObjects: true });
  const access = apiKubeAccess(running);
  try {
    const authenticated = await access.authenticator.authenticate(token);
    if (authenticated.kind !== 'authenticated') throw new Error(JSON.stringify(authenticated));
    const user = authenticated.principal.user;
    if (user === undefined) throw new Error('no Kubernetes user');
    await access.authorizer.authorize(user, 'create', DRIVER);
  } finally {
    access.close();
  }
  const log = running.emulator.requestLog();
  const groups: Record<string, string> = {
    tokenreviews: 'authentication.k8s.io',
    subjectaccessreviews: 'authorization.k8s.io',
  };
  return [
    ...new Set(
      log.map((entry) => {
        const group = groups[entry.resource];
        if (group === undefined) throw new Error(`unexpected request for ${entry.resource}`);
        return `${group}/${entry.resource}/${entry.verb}`;
      }),
    ),
  ].sort();
}

/** kube-apiserver's message when no RBAC rule grants the API `verb` on `group/resource`. */
function forbiddenMessage(group: string, resource: string, verb: string): string {
  return `${resource}.${group} is forbidden: User "${API_USER}" cannot ${verb} resource "${resource}" in API group "${group}" at the cluster scope`;
}

/**
 * What a driver and the operator see without each verb the API's role grants, one row per
 * `group/resource/verb`: the proof that each is needed.
 */
const withoutGrant: Record<
  string,
  (access: ApiKubeAccess, token: string, forbidden: string) => Promise<void>
> = {
  'authentication.k8s.io/tokenreviews/create': async (access, token, forbidden) => {
    // Every Kubernetes identity gets 503 authentication-unavailable; the API logs why.
    await expect(access.authenticator.authenticate(token)).resolves.toEqual<KubeAuthentication>({
      kind: 'unavailable',
      reason: `TokenReview failed: create TokenReview: forbidden: ${forbidden}`,
    });
  },
  'authorization.k8s.io/subjectaccessreviews/create': async (access, token, forbidden) => {
    // Tokens are accepted, but every action is 503 authorization-unavailable, never allowed.
    const authenticated = await access.authenticator.authenticate(token);
    if (authenticated.kind !== 'authenticated') throw new Error(JSON.stringify(authenticated));
    const user = authenticated.principal.user;
    if (user === undefined) throw new Error('no Kubernetes user');
    await expect(
      access.authorizer.authorize(user, 'create', DRIVER),
    ).resolves.toEqual<KubeAuthorization>({
      kind: 'unavailable',
      reason: `SubjectAccessReview for create on plugin "${DRIVER}" failed: create SubjectAccessReview (create plugins.slicekeeper.dev): forbidden: ${forbidden}`,
    });
  },
};

function grants(role: KubeObject): string[] {
  return (role['rules'] as PolicyRule[])
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
let used: string[];

beforeAll(async () => {
  running = await startKubeEmulator({ port: 0 });
  used = await verbsTheApiUses(running);
});

afterAll(async () => {
  await running.close();
});

describe("the registration API's RBAC", () => {
  it('is derived from what it really calls: TokenReview and SubjectAccessReview, nothing else', () => {
    expect(used).toEqual([
      'authentication.k8s.io/tokenreviews/create',
      'authorization.k8s.io/subjectaccessreviews/create',
    ]);
  });

  it.each(['dev', 'prod'])(
    '%s: the roles bound to the API grant exactly the verbs it uses, cluster-wide',
    async (overlay) => {
      const objects = await renderKustomization(join(repoRoot, 'k8s/overlays', overlay));
      const boundRoles = objects
        .filter(
          (o) =>
            (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') &&
            (o['subjects'] as { kind: string; name: string }[]).some(
              (s) => s.kind === 'ServiceAccount' && s.name === 'registration-api',
            ),
        )
        .map((binding) => {
          const ref = binding['roleRef'] as { kind: string; name: string };
          const role = objects.find((o) => o.kind === ref.kind && o.metadata.name === ref.name);
          if (role === undefined) throw new Error(`${ref.kind} ${ref.name} is not rendered`);
          return role;
        });
      expect(boundRoles.map((r) => r.kind)).toEqual(['ClusterRole']);
      for (const rule of boundRoles.flatMap((role) => role['rules'] as PolicyRule[])) {
        expect(rule.resourceNames).toBeUndefined();
        expect(rule.nonResourceURLs).toBeUndefined();
      }
      expect(boundRoles.flatMap(grants).sort()).toEqual(used);
    },
  );

  it('has a least-privilege check below for every verb the API uses', () => {
    expect(Object.keys(withoutGrant).sort()).toEqual(used);
  });
});

/**
 * The API's ClusterRole as the prod overlay renders it, less the grants `without`, bound to the
 * API's ServiceAccount in the emulator; resolves with a token of that ServiceAccount, which the
 * emulator authorizes with RBAC as kube-apiserver does.
 */
async function apiIdentity(running: RunningKubeEmulator, without: string | undefined) {
  const objects = await renderKustomization(join(repoRoot, 'k8s/overlays/prod'));
  const role = objects.find(
    (o) => o.kind === 'ClusterRole' && o.metadata.name === 'slicekeeper-registration-api',
  );
  if (role === undefined) throw new Error('no ClusterRole slicekeeper-registration-api');
  const rules = (role['rules'] as PolicyRule[])
    .map((rule) => ({
      ...rule,
      verbs: rule.verbs.filter(
        (verb) => `${rule.apiGroups?.[0] ?? ''}/${rule.resources?.[0] ?? ''}/${verb}` !== without,
      ),
    }))
    .filter((rule) => rule.verbs.length > 0);
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await requestJson(running.url, 'POST', `${rbac}/clusterroles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: role.metadata.name },
    rules,
  });
  await requestJson(running.url, 'POST', `${rbac}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: role.metadata.name },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: role.metadata.name,
    },
    subjects: [{ kind: 'ServiceAccount', name: 'registration-api', namespace: NAMESPACE }],
  });
  await requestJson(running.url, 'POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'registration-api' },
  });
  const review = (await requestJson(
    running.url,
    'POST',
    `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/registration-api/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} },
  )) as { status: { token: string } };
  return review.status.token;
}

describe('the registration API as its own ServiceAccount, its role less one verb at a time', () => {
  let cluster: RunningKubeEmulator;
  let access: ApiKubeAccess | undefined;
  let token: string;

  beforeEach(async () => {
    cluster = await startKubeEmulator({ port: 0 });
    token = await driverToken(cluster.url);
  });

  afterEach(async () => {
    access?.close();
    await cluster.close();
  });

  it('with the role as rendered, it reviews tokens and access', async () => {
    access = apiKubeAccess(cluster, await apiIdentity(cluster, undefined));
    const authenticated = await access.authenticator.authenticate(token);
    expect(authenticated).toMatchObject({
      kind: 'authenticated',
      principal: { scope: { kind: 'node', node: NODE } },
    });
    const user = authenticated.kind === 'authenticated' ? authenticated.principal.user : undefined;
    if (user === undefined) throw new Error('no Kubernetes user');
    // No grant for the driver's ServiceAccount yet: an answer, not a failure.
    await expect(access.authorizer.authorize(user, 'create', DRIVER)).resolves.toMatchObject({
      kind: 'denied',
    });
  });

  it.each(Object.entries(withoutGrant))('%s', async (grant, check) => {
    const [group = '', resource = '', verb = ''] = grant.split('/');
    access = apiKubeAccess(cluster, await apiIdentity(cluster, grant));
    await check(access, token, forbiddenMessage(group, resource, verb));
  });
});
