import {
  KubernetesAuthenticator,
  KubernetesAuthorizer,
  NODE_NAME_CLAIM,
} from '@slicekeeper/admission';
import type { AccessReviewer, KubernetesUser, TokenReviewer } from '@slicekeeper/admission';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ManualClock } from '@slicekeeper/time/testing';
import { ApiHarness, SOCKET_DIR, admin, auth } from './testing/api-harness';

const GPU = `unix://${SOCKET_DIR}/gpu.sock`;
const DRIVER = 'gpu.example.com';

const serviceAccount = (name: string, node: string | undefined): KubernetesUser => ({
  username: `system:serviceaccount:gpu:${name}`,
  uid: `uid-${name}`,
  groups: ['system:serviceaccounts', 'system:serviceaccounts:gpu', 'system:authenticated'],
  extra: node === undefined ? {} : { [NODE_NAME_CLAIM]: [node] },
});

/** The cluster as TokenReview and SubjectAccessReview see it, for the doubles. */
class FakeCluster implements TokenReviewer, AccessReviewer {
  readonly tokens = new Map<string, KubernetesUser>();
  /** `<username> <verb> <driver>` triples RBAC allows. */
  readonly grants = new Set<string>();
  readonly accessReviews: string[] = [];
  tokenReviewDown = false;
  accessReviewDown = false;

  reviewToken(token: string) {
    if (this.tokenReviewDown) return Promise.reject(new Error('create TokenReview: timeout'));
    const user = this.tokens.get(token);
    return Promise.resolve(
      user === undefined
        ? { authenticated: false as const, error: 'invalid bearer token' }
        : { authenticated: true as const, user, audiences: ['slicekeeper'] },
    );
  }

  reviewAccess(user: KubernetesUser, attributes: { verb: string; name?: string }) {
    if (this.accessReviewDown) return Promise.reject(new Error('create SubjectAccessReview: 503'));
    const asked = `${user.username} ${attributes.verb} ${attributes.name ?? '*'}`;
    this.accessReviews.push(asked);
    return Promise.resolve({ allowed: this.grants.has(asked), reason: '' });
  }
}

const NODE_A_SA = 'node-a-projected-token';
const NO_NODE_SA = 'deployment-token';
const DRIVER_A = serviceAccount('driver', 'node-a');

describe('Kubernetes identities in the API (TokenReview, node claim, SubjectAccessReview)', () => {
  let server: RedisServer;
  let h: ApiHarness;
  let cluster: FakeCluster;

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server.stop());
  beforeEach(async () => {
    cluster = new FakeCluster();
    cluster.tokens.set(NODE_A_SA, DRIVER_A);
    cluster.tokens.set(NO_NODE_SA, serviceAccount('controller', undefined));
    cluster.grants.add(`${DRIVER_A.username} create ${DRIVER}`);
    cluster.grants.add(`${DRIVER_A.username} delete ${DRIVER}`);
    cluster.grants.add(`${DRIVER_A.username} get ${DRIVER}`);
    const clock = new ManualClock();
    h = await new ApiHarness({
      redisUrl: server.url,
      prefix: uniquePrefix('api-kube'),
      kubernetes: {
        authenticator: new KubernetesAuthenticator({ reviewer: cluster, clock }),
        authorizer: new KubernetesAuthorizer({ reviewer: cluster, clock }),
      },
    }).ready();
  });
  afterEach(() => h.close());

  const register = (token: string, body: Record<string, unknown>) =>
    h.app.inject({ method: 'POST', url: '/v1/plugins', headers: auth(token), payload: body });

  it.each([
    {
      name: 'own-node-201',
      token: NODE_A_SA,
      body: { node: 'node-a', endpoint: GPU },
      status: 201,
      code: undefined,
      message: undefined,
      dialled: true,
    },
    {
      name: 'other-node-403-names-the-node-claim',
      token: NODE_A_SA,
      body: { node: 'node-b', endpoint: GPU },
      status: 403,
      code: 'forbidden',
      message: `the token of ${DRIVER_A.username} is bound to node "node-a" by its ${NODE_NAME_CLAIM} claim; it may not act on node "node-b"`,
      dialled: false,
    },
    {
      name: 'no-node-claim-403-on-a-node',
      token: NO_NODE_SA,
      body: { node: 'node-a', endpoint: GPU },
      status: 403,
      code: 'forbidden',
      message: `the token of system:serviceaccount:gpu:controller has no ${NODE_NAME_CLAIM} claim; it may act on cluster-scoped plugins (empty node) only, not on node "node-a"`,
      dialled: false,
    },
    {
      name: 'declared-driver-without-grant-403-before-any-dial',
      token: NODE_A_SA,
      body: { node: 'node-a', endpoint: GPU, driver: 'nic.example.com' },
      status: 403,
      code: 'forbidden',
      message: `${DRIVER_A.username} may not create plugins.slicekeeper.dev "nic.example.com"`,
      dialled: false,
    },
    {
      name: 'unknown-token-401',
      token: 'forged-token-0123456789abcdef0123456789',
      body: { node: 'node-a', endpoint: GPU },
      status: 401,
      code: 'unauthorized',
      message: 'a valid bearer token is required',
      dialled: false,
    },
  ])('$name', async ({ token, body, status, code, message, dialled }) => {
    const res = await register(token, body);
    expect(res.statusCode).toBe(status);
    if (code !== undefined) expect(res.json()).toMatchObject({ code, message });
    expect(h.prober.connects).toEqual(dialled ? [GPU] : []);
  });

  it('a driver only GetInfo names is authorized before it is stored; the plugin is told why not', async () => {
    h.prober.plugins.set(GPU, gpuInfoOf('nic.example.com'));
    const res = await register(NODE_A_SA, { node: 'node-a', endpoint: GPU });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      message: `${DRIVER_A.username} may not create plugins.slicekeeper.dev "nic.example.com"`,
    });
    expect(h.prober.told).toEqual([
      {
        endpoint: GPU,
        outcome: {
          registered: false,
          error: `${DRIVER_A.username} may not create plugins.slicekeeper.dev "nic.example.com"`,
        },
      },
    ]);
    expect(await h.store.get({ node: 'node-a', driver: 'nic.example.com' })).toEqual([]);
  });

  it.each([
    { name: 'tokenreview-outage-503', down: 'token', code: 'authentication-unavailable' },
    { name: 'subjectaccessreview-outage-503', down: 'access', code: 'authorization-unavailable' },
  ] as const)('$name, never an accept', async ({ down, code }) => {
    if (down === 'token') cluster.tokenReviewDown = true;
    else cluster.accessReviewDown = true;
    const res = await register(NODE_A_SA, { node: 'node-a', endpoint: GPU, driver: DRIVER });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code });
    expect(res.headers['retry-after']).toBe(down === 'token' ? '1' : undefined);
    expect(h.prober.connects).toEqual([]);
    expect(await h.store.get({ node: 'node-a', driver: DRIVER })).toEqual([]);
  });

  it('asks create, get and delete on the driver for POST, GET and DELETE', async () => {
    expect((await register(NODE_A_SA, { node: 'node-a', endpoint: GPU })).statusCode).toBe(201);
    const read = await h.app.inject({
      method: 'GET',
      url: `/v1/plugins/node-a/${DRIVER}`,
      headers: auth(NODE_A_SA),
    });
    expect(read.statusCode).toBe(200);
    const removed = await h.app.inject({
      method: 'DELETE',
      url: `/v1/plugins/node-a/${DRIVER}`,
      headers: auth(NODE_A_SA),
    });
    expect(removed.statusCode).toBe(200);
    expect(cluster.accessReviews).toEqual([
      `${DRIVER_A.username} create ${DRIVER}`,
      `${DRIVER_A.username} get ${DRIVER}`,
      `${DRIVER_A.username} delete ${DRIVER}`,
    ]);
  });

  it('a list without a driver asks get on every plugin, and sees its own node only', async () => {
    expect((await register(NODE_A_SA, { node: 'node-a', endpoint: GPU })).statusCode).toBe(201);
    const denied = await h.app.inject({
      method: 'GET',
      url: '/v1/plugins',
      headers: auth(NODE_A_SA),
    });
    expect(denied.statusCode).toBe(403);
    expect(denied.json()).toMatchObject({
      message: `${DRIVER_A.username} may not get plugins.slicekeeper.dev (all)`,
    });
    const own = await h.app.inject({
      method: 'GET',
      url: `/v1/plugins?driver=${DRIVER}`,
      headers: auth(NODE_A_SA),
    });
    expect(own.json()).toMatchObject({ items: [{ node: 'node-a', driver: DRIVER }] });
  });

  it('static tokens keep working next to Kubernetes identities (AUTH_MODE=both)', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: 'node-b', endpoint: GPU },
    });
    expect(res.statusCode).toBe(201);
    expect(cluster.accessReviews).toEqual([]);
  });
});

function gpuInfoOf(driver: string) {
  return {
    type: 'DRAPlugin',
    name: driver,
    endpoint: '',
    supportedVersions: ['v1.ResourcePublisher'],
  };
}
