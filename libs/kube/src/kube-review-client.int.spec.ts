import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { kubeErrorCode } from './classify-kube-error';
import { KubeReviewClient } from './kube-review-client';
import { KubeTransport } from './kube-transport';

/**
 * The review client against a stand-in API server that answers each request with a queued
 * status and body, recording what was asked: the request and answer shapes of
 * staging/src/k8s.io/api/authentication/v1/types.go (TokenReview) and
 * staging/src/k8s.io/api/authorization/v1/types.go (SubjectAccessReview).
 */
describe('KubeReviewClient', () => {
  let server: Server;
  let transport: KubeTransport;
  let client: KubeReviewClient;
  let answer: { status: number; body: string };
  let asked: { path: string; body: unknown }[];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        asked.push({ path: req.url ?? '', body: JSON.parse(body) as unknown });
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    transport = new KubeTransport({
      kind: 'yaml',
      text: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: url } }],
        users: [{ name: 'u', user: { token: 'api-token' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    });
    client = new KubeReviewClient({ transport, requestTimeoutMs: 2_000 });
  });

  beforeEach(() => {
    asked = [];
  });

  afterAll(async () => {
    transport.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const user = {
    username: 'system:serviceaccount:gpu:driver',
    uid: 'u-1',
    groups: ['system:serviceaccounts', 'system:authenticated'],
    extra: { 'authentication.kubernetes.io/node-name': ['node-a'] },
  };

  it.each([
    {
      name: 'TokenReviewStatus-authenticated-with-extra',
      status: { authenticated: true, user, audiences: ['slicekeeper'] },
      result: { authenticated: true, user, audiences: ['slicekeeper'] },
    },
    {
      name: 'TokenReviewStatus-not-authenticated-with-error',
      status: { authenticated: false, error: 'token has been invalidated' },
      result: { authenticated: false, error: 'token has been invalidated' },
    },
    {
      name: 'UserInfo-optional-fields-absent',
      status: { authenticated: true, user: { username: 'alice' } },
      result: {
        authenticated: true,
        user: { username: 'alice', uid: '', groups: [], extra: {} },
        audiences: [],
      },
    },
  ])('$name', async ({ status, result }) => {
    answer = { status: 201, body: JSON.stringify({ kind: 'TokenReview', status }) };
    await expect(client.reviewToken('the-token', ['slicekeeper'])).resolves.toEqual(result);
    expect(asked).toEqual([
      {
        path: '/apis/authentication.k8s.io/v1/tokenreviews',
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token: 'the-token', audiences: ['slicekeeper'] },
        },
      },
    ]);
  });

  it.each([
    { name: 'SubjectAccessReviewStatus-allowed', status: { allowed: true }, allowed: true },
    { name: 'no-opinion-is-no', status: { allowed: false }, allowed: false },
    { name: 'denied-wins', status: { allowed: true, denied: true }, allowed: false },
  ])('$name', async ({ status, allowed }) => {
    answer = { status: 201, body: JSON.stringify({ kind: 'SubjectAccessReview', status }) };
    const attributes = {
      verb: 'create',
      group: 'slicekeeper.dev',
      resource: 'plugins',
      name: 'gpu.example.com',
    };
    await expect(client.reviewAccess(user, attributes)).resolves.toEqual({ allowed, reason: '' });
    expect(asked).toEqual([
      {
        path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            resourceAttributes: attributes,
          },
        },
      },
    ]);
  });

  it.each([
    {
      name: 'server-error',
      status: 503,
      body: '{"kind":"Status","code":503}',
      code: 'server-error',
    },
    {
      name: 'forbidden-no-rbac-for-reviews',
      status: 403,
      body: '{"kind":"Status","code":403}',
      code: 'forbidden',
    },
    { name: 'malformed-no-status', status: 201, body: '{"kind":"TokenReview"}', code: 'error' },
    {
      name: 'malformed-authenticated-without-username',
      status: 201,
      body: '{"status":{"authenticated":true,"user":{}}}',
      code: 'error',
    },
  ])(
    'a failed review is a classified error, never an answer: $name',
    async ({ status, body, code }) => {
      answer = { status, body };
      const error: unknown = await client.reviewToken('t', []).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(kubeErrorCode(error)).toBe(code);
    },
  );
});
