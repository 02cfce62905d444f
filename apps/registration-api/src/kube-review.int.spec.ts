import { KubernetesAuthenticator, KubernetesAuthorizer } from '@slicekeeper/admission';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { KubeReviewClient, KubeTransport } from '@slicekeeper/kube';
import { RedisServer, requestJson, uniquePrefix } from '@slicekeeper/testing';
import { ApiHarness, SOCKET_DIR, auth } from './testing/api-harness';

const GPU = `unix://${SOCKET_DIR}/gpu.sock`;
const NAMESPACE = 'kube-system';

/**
 * The API's Kubernetes identities against the kube emulator's real TokenReview and RBAC, with
 * one clock the emulator and the API share, moved by the test: what a token's lifetime and its
 * bound objects do to a registration. (Every-process scenarios: kube-identities.e2e.spec.ts.)
 */
describe('registrations with tokens the cluster reviews', () => {
  let redis: RedisServer;
  let cluster: RunningKubeEmulator;
  let transport: KubeTransport;
  let h: ApiHarness;
  let skewMs: number;
  const clock = { now: () => Date.now() + skewMs };

  const kube = (method: string, path: string, body?: unknown) =>
    requestJson(cluster.url, method, path, body);

  /** A driver pod on node-a allowed to register gpu.example.com, and its projected token. */
  async function driverToken(): Promise<string> {
    await kube('POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'gpu-driver' },
    });
    const pod = (await kube('POST', `/api/v1/namespaces/${NAMESPACE}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'gpu-driver' },
      spec: {
        serviceAccountName: 'gpu-driver',
        nodeName: 'node-a',
        containers: [{ name: 'driver', image: 'example.com/gpu-driver:1.0' }],
      },
    })) as { metadata: { uid: string } };
    const requested = (await kube(
      'POST',
      `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/gpu-driver/token`,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: ['slicekeeper'],
          expirationSeconds: 600,
          boundObjectRef: {
            apiVersion: 'v1',
            kind: 'Pod',
            name: 'gpu-driver',
            uid: pod.metadata.uid,
          },
        },
      },
    )) as { status: { token: string } };
    return requested.status.token;
  }

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(() => redis.stop());

  beforeEach(async () => {
    skewMs = 0;
    cluster = await startKubeEmulator({ port: 0, clock });
    await kube('POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a' },
    });
    await kube('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'gpu-registrar' },
      rules: [
        {
          apiGroups: ['slicekeeper.dev'],
          resources: ['plugins'],
          resourceNames: ['gpu.example.com'],
          verbs: ['create'],
        },
      ],
    });
    await kube('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'gpu-registrar' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'gpu-registrar',
      },
      subjects: [{ kind: 'ServiceAccount', name: 'gpu-driver', namespace: NAMESPACE }],
    });
    transport = new KubeTransport({ kind: 'yaml', text: cluster.kubeconfig });
    const reviews = new KubeReviewClient({ transport });
    h = await new ApiHarness({
      redisUrl: redis.url,
      prefix: uniquePrefix('api-review'),
      kubernetes: {
        authenticator: new KubernetesAuthenticator({ reviewer: reviews, clock }),
        authorizer: new KubernetesAuthorizer({ reviewer: reviews, clock }),
      },
    }).ready();
  });

  afterEach(async () => {
    await h.close();
    transport.close();
    await cluster.close();
  });

  const register = (token: string) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: auth(token),
      payload: { node: 'node-a', endpoint: GPU },
    });

  it.each([
    { name: 'valid-for-its-lifetime', after: () => Promise.resolve(), again: 200 },
    {
      name: 'expired-token-401',
      // Past exp (600 s) and the authenticators' leeway; the cached answer ends at exp too.
      after: () => {
        skewMs = 3_600_000;
        return Promise.resolve();
      },
      again: 401,
    },
    {
      name: 'bound-pod-deleted-401',
      after: async () => {
        await kube('DELETE', `/api/v1/namespaces/${NAMESPACE}/pods/gpu-driver`);
        // Past the API's TokenReview cache (30 s), not the token's exp.
        skewMs = 31_000;
      },
      again: 401,
    },
    {
      name: 'serviceaccount-deleted-401',
      after: async () => {
        await kube('DELETE', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/gpu-driver`);
        skewMs = 31_000;
      },
      again: 401,
    },
  ])('$name', async ({ after, again: expected }) => {
    const token = await driverToken();
    expect((await register(token)).statusCode).toBe(201);
    await after();
    const again = await register(token);
    expect(again.statusCode).toBe(expected);
    if (expected === 401) expect(again.json()).toMatchObject({ code: 'unauthorized' });
  });
});
