import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';
import { bearer, kubectl, request } from './identity-test.test-helper';

/**
 * ServiceAccounts, TokenRequest (`serviceaccounts/token`) and TokenReview as kube-apiserver 1.34
 * serves them: pkg/registry/core/serviceaccount/storage/token.go (defaults, binding, errors),
 * pkg/apis/authentication/validation `ValidateTokenRequest` (10 min .. 2^32 s),
 * pkg/serviceaccount/claims.go (claims and the validator's texts), pkg/serviceaccount/jwt.go
 * (issuer, signature, audiences) and staging/.../authentication/serviceaccount/util.go (groups,
 * `extra`).
 */

const START_MS = Date.parse('2026-01-01T00:00:00Z');
let nowMs = START_MS;
let dir: string;
let running: RunningKubeEmulator;

const ns = 'kube-system';
const saPath = (name: string) => `/api/v1/namespaces/${ns}/serviceaccounts/${name}`;
const REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';

async function createNode(name: string): Promise<string> {
  const created = await request(running.url, 'POST', '/api/v1/nodes', { metadata: { name } });
  return (created.body.metadata as { uid: string }).uid;
}

async function tokenFor(sa: string, spec: Record<string, unknown>): Promise<string> {
  const answer = await request(running.url, 'POST', `${saPath(sa)}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec,
  });
  expect(answer.status).toBe(201);
  return (answer.body.status as { token: string }).token;
}

async function review(token: string, audiences?: string[]) {
  const answer = await request(running.url, 'POST', REVIEWS, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token, ...(audiences === undefined ? {} : { audiences }) },
  });
  expect(answer.status).toBe(201);
  return answer.body.status as Record<string, unknown>;
}

beforeEach(async () => {
  nowMs = START_MS;
  dir = mkdtempSync(join(tmpdir(), 'sa-tokens-'));
  running = await startKubeEmulator({
    kubeconfigPath: join(dir, 'kubeconfig'),
    clock: { now: () => nowMs },
  });
  await request(running.url, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    metadata: { name: 'driver' },
  });
});

afterEach(async () => {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

describe('ServiceAccounts', () => {
  it('are stored, listed and deleted like other namespaced kinds (kubectl create/get/delete sa)', async () => {
    const kc = running.kubeconfigPath ?? '';
    expect((await kubectl(kc, dir, 'create', 'serviceaccount', 'agent', '-n', ns)).stdout).toBe(
      'serviceaccount/agent created\n',
    );
    const listed = await kubectl(kc, dir, 'get', 'sa', '-n', ns, '-o', 'name');
    expect(listed.stdout).toBe('serviceaccount/agent\nserviceaccount/driver\n');
    expect((await kubectl(kc, dir, 'delete', 'sa', 'agent', '-n', ns)).stdout).toBe(
      'serviceaccount "agent" deleted\n',
    );
    const missing = await request(running.url, 'GET', saPath('agent'));
    expect(missing.body.message).toBe('serviceaccounts "agent" not found');
  });
});

describe('TokenRequest (serviceaccounts/token)', () => {
  it('kubectl create token prints a JWT with the claims kube-apiserver sets (claims.go Claims)', async () => {
    const nodeUid = await createNode('node-a');
    const kc = running.kubeconfigPath ?? '';
    const created = await kubectl(
      kc,
      dir,
      'create',
      'token',
      'driver',
      '-n',
      ns,
      '--audience',
      'slicekeeper',
      '--bound-object-kind',
      'Node',
      '--bound-object-name',
      'node-a',
      '--duration',
      '20m',
    );
    expect(created.stderr).toBe('');
    const [header, payload] = created.stdout
      .trim()
      .split('.')
      .slice(0, 2)
      .map(
        (p: string) =>
          JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>,
      );
    expect(header).toEqual({ alg: 'RS256', kid: expect.any(String) as string });
    const sa = await request(running.url, 'GET', saPath('driver'));
    const seconds = START_MS / 1000;
    expect(payload).toEqual({
      aud: ['slicekeeper'],
      exp: seconds + 1200,
      iat: seconds,
      iss: 'https://kubernetes.default.svc.cluster.local',
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/) as string,
      'kubernetes.io': {
        namespace: ns,
        serviceaccount: { name: 'driver', uid: (sa.body.metadata as { uid: string }).uid },
        node: { name: 'node-a', uid: nodeUid },
      },
      nbf: seconds,
      sub: 'system:serviceaccount:kube-system:driver',
    });
  });

  it('answers 201 with the defaulted spec and the expiration (token.go Create)', async () => {
    const answer = await request(running.url, 'POST', `${saPath('driver')}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {},
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name: 'driver', namespace: ns, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: {
        audiences: ['https://kubernetes.default.svc.cluster.local'],
        expirationSeconds: 3600,
      },
      status: { token: expect.any(String) as string, expirationTimestamp: '2026-01-01T01:00:00Z' },
    });
  });

  it.each([
    [
      'ValidateTokenRequest: less than 10 minutes',
      'driver',
      { expirationSeconds: 599 },
      422,
      'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
    ],
    [
      'ValidateTokenRequest: more than 2^32 seconds',
      'driver',
      { expirationSeconds: 2 ** 32 + 1 },
      422,
      'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds',
    ],
    ['missing ServiceAccount', 'nobody', {}, 404, 'serviceaccounts "nobody" not found'],
    [
      'missing bound Node',
      'driver',
      { boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'gone' } },
      404,
      'nodes "gone" not found',
    ],
    [
      'bound object of another kind',
      'driver',
      { boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' } },
      400,
      'cannot bind token to object of type /v1, Kind=ConfigMap',
    ],
    [
      'bound Node uid mismatch',
      'driver',
      { boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'node-a', uid: 'other' } },
      409,
      'Operation cannot be fulfilled on Node "node-a": the UID in the bound object reference (other) does not match the UID in record. The object might have been deleted and then recreated',
    ],
  ])('refuses a request: %s', async (_name, sa, spec, code, message) => {
    await createNode('node-a');
    const answer = await request(running.url, 'POST', `${saPath(sa)}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec,
    });
    expect({ code: answer.status, message: answer.body.message }).toEqual({ code, message });
  });

  it('accepts exactly 10 minutes', async () => {
    expect(await tokenFor('driver', { expirationSeconds: 600 })).toMatch(
      /^[\w-]+\.[\w-]+\.[\w-]+$/,
    );
  });
});

describe('TokenReview', () => {
  it('authenticates a Node-bound token: user, groups, extra with the node claims, audiences', async () => {
    const nodeUid = await createNode('node-a');
    const sa = await request(running.url, 'GET', saPath('driver'));
    const token = await tokenFor('driver', {
      audiences: ['slicekeeper'],
      boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'node-a' },
    });
    const jti = (
      JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
        jti: string;
      }
    ).jti;
    const answer = await request(running.url, 'POST', REVIEWS, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, audiences: ['slicekeeper'] },
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      kind: 'TokenReview',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec: { token, audiences: ['slicekeeper'] },
      status: {
        authenticated: true,
        user: {
          username: 'system:serviceaccount:kube-system:driver',
          uid: (sa.body.metadata as { uid: string }).uid,
          groups: [
            'system:serviceaccounts',
            'system:serviceaccounts:kube-system',
            'system:authenticated',
          ],
          extra: {
            'authentication.kubernetes.io/credential-id': [`JTI=${jti}`],
            'authentication.kubernetes.io/node-name': ['node-a'],
            'authentication.kubernetes.io/node-uid': [nodeUid],
          },
        },
        audiences: ['slicekeeper'],
      },
    });
  });

  it('authenticates a Pod-bound token with the pod and its node in extra (ServiceAccountTokenPodNodeInfo)', async () => {
    const nodeUid = await createNode('node-a');
    const pod = await request(running.url, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'driver-pod' },
      spec: {
        serviceAccountName: 'driver',
        nodeName: 'node-a',
        containers: [{ name: 'driver', image: 'driver:1' }],
      },
    });
    expect(pod.status).toBe(201);
    const podUid = (pod.body.metadata as { uid: string }).uid;
    const token = await tokenFor('driver', {
      audiences: ['slicekeeper'],
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'driver-pod' },
    });
    const status = await review(token, ['slicekeeper']);
    expect((status.user as { extra: Record<string, string[]> }).extra).toEqual({
      'authentication.kubernetes.io/credential-id': [expect.stringMatching(/^JTI=/) as string],
      'authentication.kubernetes.io/node-name': ['node-a'],
      'authentication.kubernetes.io/node-uid': [nodeUid],
      'authentication.kubernetes.io/pod-name': ['driver-pod'],
      'authentication.kubernetes.io/pod-uid': [podUid],
    });
    // A Pod-bound token follows its Pod, not its Node (claims.go: node claims only extracted).
    await request(running.url, 'DELETE', '/api/v1/nodes/node-a');
    expect((await review(token, ['slicekeeper'])).authenticated).toBe(true);
    await request(running.url, 'DELETE', `/api/v1/namespaces/${ns}/pods/driver-pod`);
    expect(await review(token, ['slicekeeper'])).toEqual({
      user: {},
      error: 'service account token has been invalidated',
    });
  });

  it('refuses to bind a token to a Pod running as another ServiceAccount (token.go)', async () => {
    await request(running.url, 'POST', `/api/v1/namespaces/${ns}/pods`, {
      metadata: { name: 'other-pod' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    const answer = await request(running.url, 'POST', `${saPath('driver')}/token`, {
      spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'other-pod' } },
    });
    expect({ code: answer.status, message: answer.body.message }).toEqual({
      code: 400,
      message:
        'cannot bind token for serviceaccount "driver" to pod running with different serviceaccount name.',
    });
  });

  it.each<[string, (token: string) => Promise<Record<string, unknown>>, string]>([
    [
      'jwt.go: audiences not among the requested',
      async (token: string) => review(token, ['other']),
      'token audiences ["slicekeeper"] is invalid for the target audiences ["other"]',
    ],
    [
      'jwt.go: no requested audiences means the API audiences',
      async (token: string) => review(token),
      'token audiences ["slicekeeper"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]',
    ],
    [
      'claims.go: expired (past exp plus the minute of leeway)',
      async (token: string) => {
        nowMs = START_MS + (600 + 61) * 1000;
        return review(token, ['slicekeeper']);
      },
      'service account token has expired',
    ],
    [
      'claims.go: the bound Node is gone',
      async (token: string) => {
        await request(running.url, 'DELETE', '/api/v1/nodes/node-a');
        return review(token, ['slicekeeper']);
      },
      'service account token has been invalidated',
    ],
    [
      'claims.go: the Node was recreated with another uid',
      async (token: string) => {
        await request(running.url, 'DELETE', '/api/v1/nodes/node-a');
        const uid = await createNode('node-a');
        const status = await review(token, ['slicekeeper']);
        return { ...status, error: String(status.error).replace(uid, '<new>') };
      },
      expect.stringMatching(
        /^node UID \(<new>\) does not match service account node ref claim \([0-9a-f-]{36}\)$/,
      ),
    ],
    [
      'claims.go: the ServiceAccount is gone',
      async (token: string) => {
        await request(running.url, 'DELETE', saPath('driver'));
        return review(token, ['slicekeeper']);
      },
      'serviceaccounts "driver" not found',
    ],
    [
      'jwt.go: a payload signed by nobody (go-jose)',
      async (token: string) => {
        const [h, p, s] = token.split('.');
        const claims = JSON.parse(Buffer.from(p ?? '', 'base64url').toString('utf8')) as {
          'kubernetes.io': { namespace: string };
        };
        claims['kubernetes.io'].namespace = 'default';
        const forged = `${h ?? ''}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s ?? ''}`;
        return review(forged, ['slicekeeper']);
      },
      'go-jose/go-jose: error in cryptographic primitive',
    ],
    [
      'bearertoken: a token no authenticator knows',
      async () => review('not-a-token', ['slicekeeper']),
      'invalid bearer token',
    ],
  ])('does not authenticate: %s', async (_name, act, error) => {
    await createNode('node-a');
    const token = await tokenFor('driver', {
      audiences: ['slicekeeper'],
      expirationSeconds: 600,
      boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'node-a' },
    });
    const status = await act(token);
    // TokenReviewStatus: `authenticated` is omitempty, `user` an empty struct.
    expect(status).toEqual({ user: {}, error });
  });

  it('a fault injected on tokenreviews fails the review (the hooks count it as create tokenreviews)', async () => {
    running.emulator.injectFault({
      verb: 'create',
      resource: 'tokenreviews',
      status: 503,
      times: 1,
    });
    const failed = await request(running.url, 'POST', REVIEWS, { spec: { token: 'x' } });
    expect({ code: failed.status, reason: failed.body.reason }).toEqual({
      code: 503,
      reason: 'ServiceUnavailable',
    });
    expect((await request(running.url, 'POST', REVIEWS, { spec: { token: 'x' } })).status).toBe(
      201,
    );
    expect(
      running.emulator
        .counters()
        .counts.filter((c) => c.resource === 'tokenreviews')
        .map((c) => [c.verb, c.code, c.count]),
    ).toEqual([
      ['create', 201, 1],
      ['create', 503, 1],
    ]);
  });

  it('a token without spec.token is a 400 (tokenreview storage)', async () => {
    const answer = await request(running.url, 'POST', REVIEWS, { spec: {} });
    expect({ code: answer.status, message: answer.body.message }).toEqual({
      code: 400,
      message: 'token is required for TokenReview in authentication',
    });
  });

  it('a request bearing an invalid ServiceAccount token is 401', async () => {
    await createNode('node-a');
    const token = await tokenFor('driver', {});
    await request(running.url, 'DELETE', saPath('driver'));
    const answer = await request(running.url, 'GET', '/api/v1/nodes', undefined, bearer(token));
    expect({ code: answer.status, reason: answer.body.reason }).toEqual({
      code: 401,
      reason: 'Unauthorized',
    });
  });
});

describe('tokens across processes', () => {
  it('a token outlives a restart with the same signing key file and data file (--service-account-signing-key-file)', async () => {
    const keyFile = join(dir, 'sa.key');
    const dataFile = join(dir, 'data.json');
    const first = await startKubeEmulator({ serviceAccountSigningKeyFile: keyFile, dataFile });
    await request(first.url, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
      metadata: { name: 'agent' },
    });
    const issued = await request(
      first.url,
      'POST',
      `/api/v1/namespaces/${ns}/serviceaccounts/agent/token`,
      {
        spec: {},
      },
    );
    const token = (issued.body.status as { token: string }).token;
    await first.close();
    const second = await startKubeEmulator({ serviceAccountSigningKeyFile: keyFile, dataFile });
    try {
      const reviewed = await request(second.url, 'POST', REVIEWS, { spec: { token } });
      expect((reviewed.body.status as { authenticated?: boolean }).authenticated).toBe(true);
    } finally {
      await second.close();
    }
    // Without the key file, another process's tokens fail the signature.
    const third = await startKubeEmulator({ dataFile });
    try {
      const reviewed = await request(third.url, 'POST', REVIEWS, { spec: { token } });
      expect(reviewed.body.status).toEqual({
        user: {},
        error: 'go-jose/go-jose: error in cryptographic primitive',
      });
    } finally {
      await third.close();
    }
  });

  it('TokenReview authenticates a static token of the token file for the API audiences only', async () => {
    const tokenFile = join(dir, 'tokens.csv');
    writeFileSync(
      tokenFile,
      'admin-token,admin,uid-admin,"system:masters"\nnode-token,node-a,uid-a,"nodes"\n',
    );
    const withFile = await startKubeEmulator({ tokenFile });
    const admin = { Authorization: 'Bearer admin-token' };
    try {
      const reviewed = await request(
        withFile.url,
        'POST',
        REVIEWS,
        { spec: { token: 'node-token' } },
        admin,
      );
      expect(reviewed.body.status).toEqual({
        authenticated: true,
        user: { username: 'node-a', uid: 'uid-a', groups: ['nodes', 'system:authenticated'] },
        audiences: ['https://kubernetes.default.svc.cluster.local'],
      });
      const other = await request(
        withFile.url,
        'POST',
        REVIEWS,
        { spec: { token: 'node-token', audiences: ['slicekeeper'] } },
        admin,
      );
      expect(other.body.status).toEqual({ user: {}, error: 'invalid bearer token' });
      // A static user that is not in system:masters may not review tokens (view role).
      const byNode = await request(
        withFile.url,
        'POST',
        REVIEWS,
        { spec: { token: 'x' } },
        {
          Authorization: 'Bearer node-token',
        },
      );
      expect({ code: byNode.status, message: byNode.body.message }).toEqual({
        code: 403,
        message:
          'tokenreviews.authentication.k8s.io is forbidden: User "node-a" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope',
      });
    } finally {
      await withFile.close();
    }
  });
});
