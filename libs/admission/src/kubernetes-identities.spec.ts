import { ManualClock } from '@slicekeeper/time/testing';
import { ExpiringCache } from './expiring-cache';
import {
  KubernetesAuthenticator,
  KubernetesAuthorizer,
  NODE_NAME_CLAIM,
  expiryOf,
} from './kubernetes-identities';
import type { AccessReviewer, TokenReviewer } from './kubernetes-identities';
import type { KubernetesUser } from './token-authority';

const USER: KubernetesUser = {
  username: 'system:serviceaccount:gpu:gpu-driver',
  uid: 'uid-1',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:gpu', 'system:authenticated'],
  extra: { [NODE_NAME_CLAIM]: ['node-a'] },
};

/** A JWT-shaped token (unsigned: the reviewer double is what accepts it) with `exp` in seconds. */
function jwt(exp: number | undefined, id = 'a'): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'RS256' })}.${part({ sub: id, ...(exp === undefined ? {} : { exp }) })}.sig`;
}

type Answer = Awaited<ReturnType<TokenReviewer['reviewToken']>> | Error;

/** A TokenReview double answering from a queue (the last answer repeats) and counting calls. */
function reviewer(...answers: Answer[]) {
  const calls: { token: string; audiences: readonly string[] }[] = [];
  const double: TokenReviewer = {
    reviewToken: (token, audiences) => {
      calls.push({ token, audiences });
      const answer = answers.length > 1 ? answers.shift() : answers[0];
      if (answer === undefined) throw new Error('no answer queued');
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
  return { double, calls };
}

const accepted = (user: KubernetesUser = USER, audiences = ['slicekeeper']): Answer => ({
  authenticated: true,
  user,
  audiences,
});

describe('ExpiringCache', () => {
  it.each([
    {
      name: 'lru-evicts-least-recently-used',
      steps: (cache: ExpiringCache<number>) => {
        cache.set('a', 1, 10_000);
        cache.set('b', 2, 10_000);
        cache.get('a');
        cache.set('c', 3, 10_000);
      },
      held: { a: 1, b: undefined, c: 3 },
    },
    {
      name: 'expired-on-the-dot',
      steps: async (cache: ExpiringCache<number>, clock: ManualClock) => {
        cache.set('a', 1, clock.now() + 100);
        cache.set('b', 2, clock.now() + 101);
        await clock.advance(100);
      },
      held: { a: undefined, b: 2 },
    },
    {
      name: 'already-expired-not-kept',
      steps: (cache: ExpiringCache<number>, clock: ManualClock) => {
        cache.set('a', 1, clock.now());
      },
      held: { a: undefined },
    },
  ])('$name', async ({ steps, held }) => {
    const clock = new ManualClock(0);
    const cache = new ExpiringCache<number>({ maxEntries: 2, clock });
    await steps(cache, clock);
    expect(Object.fromEntries(Object.keys(held).map((k) => [k, cache.get(k)]))).toEqual(held);
  });

  it('never holds more than maxEntries', () => {
    const cache = new ExpiringCache<number>({ maxEntries: 3, clock: new ManualClock(0) });
    for (let i = 0; i < 100; i++) cache.set(`k${i}`, i, 1_000);
    expect(cache.size).toBe(3);
  });
});

describe('expiryOf', () => {
  it.each([
    { name: 'jwt-exp-seconds-to-ms', token: jwt(1_800_000_000), expiry: 1_800_000_000_000 },
    { name: 'jwt-without-exp', token: jwt(undefined), expiry: undefined },
    { name: 'opaque-token', token: 'abcdef0123456789', expiry: undefined },
    { name: 'payload-not-json', token: 'a.b.c', expiry: undefined },
  ])('$name', ({ token, expiry }) => {
    expect(expiryOf(token)).toBe(expiry);
  });
});

describe('KubernetesAuthenticator', () => {
  it.each<{ name: string; answer: Answer; outcome: object }>([
    {
      name: 'node-claim-binds-to-node',
      answer: accepted(),
      outcome: {
        kind: 'authenticated',
        principal: { name: USER.username, scope: { kind: 'node', node: 'node-a' }, user: USER },
      },
    },
    {
      name: 'no-node-claim-cluster-scope',
      answer: accepted({ ...USER, extra: {} }),
      outcome: {
        kind: 'authenticated',
        principal: {
          name: USER.username,
          scope: { kind: 'cluster' },
          user: { ...USER, extra: {} },
        },
      },
    },
    {
      name: 'two-node-claims-refused',
      answer: accepted({ ...USER, extra: { [NODE_NAME_CLAIM]: ['node-a', 'node-b'] } }),
      outcome: {
        kind: 'unauthenticated',
        reason: `the token's ${NODE_NAME_CLAIM} claim names 2 nodes`,
      },
    },
    {
      name: 'other-audience-refused',
      answer: accepted(USER, ['https://kubernetes.default.svc']),
      outcome: { kind: 'unauthenticated', reason: 'the token is not for audience "slicekeeper"' },
    },
    {
      name: 'tokenreview-says-no',
      answer: { authenticated: false, error: 'service account gpu/gpu-driver has been deleted' },
      outcome: {
        kind: 'unauthenticated',
        reason: 'service account gpu/gpu-driver has been deleted',
      },
    },
    {
      name: 'fails-closed-on-outage',
      answer: new Error('create TokenReview: server-error: 503 Service Unavailable'),
      outcome: {
        kind: 'unavailable',
        reason: 'TokenReview failed: create TokenReview: server-error: 503 Service Unavailable',
      },
    },
  ])('$name', async ({ answer, outcome }) => {
    const { double, calls } = reviewer(answer);
    const authenticator = new KubernetesAuthenticator({
      reviewer: double,
      clock: new ManualClock(0),
    });
    await expect(authenticator.authenticate(jwt(undefined))).resolves.toEqual(outcome);
    expect(calls).toEqual([{ token: jwt(undefined), audiences: ['slicekeeper'] }]);
  });

  // How many TokenReviews two requests with the same token cost, `advance` ms apart.
  it.each([
    {
      name: 'cached-within-ttl',
      exp: undefined,
      answers: [accepted()],
      advance: 29_999,
      reviews: 1,
    },
    {
      name: 'reviewed-again-after-ttl',
      exp: undefined,
      answers: [accepted()],
      advance: 30_000,
      reviews: 2,
    },
    // The clock starts at 1000 s; a token expiring at 1010 s is not trusted past it.
    {
      name: 'never-beyond-exp-claim',
      exp: 1_010,
      answers: [accepted()],
      advance: 10_000,
      reviews: 2,
    },
    {
      name: 'refusal-cached-briefly',
      exp: undefined,
      answers: [{ authenticated: false, error: '' }],
      advance: 4_999,
      reviews: 1,
    },
    {
      name: 'refusal-expires',
      exp: undefined,
      answers: [{ authenticated: false, error: '' }],
      advance: 5_000,
      reviews: 2,
    },
    {
      name: 'outage-not-cached',
      exp: undefined,
      answers: [new Error('timeout'), accepted()],
      advance: 0,
      reviews: 2,
    },
  ] satisfies {
    name: string;
    exp: number | undefined;
    answers: Answer[];
    advance: number;
    reviews: number;
  }[])('$name', async ({ exp, answers, advance, reviews }) => {
    const clock = new ManualClock(1_000_000);
    const { double, calls } = reviewer(...answers);
    const authenticator = new KubernetesAuthenticator({ reviewer: double, clock });
    await authenticator.authenticate(jwt(exp));
    await clock.advance(advance);
    await authenticator.authenticate(jwt(exp));
    expect(calls).toHaveLength(reviews);
  });

  it('an outage after a cached answer expired is unavailable, never the old accept', async () => {
    const clock = new ManualClock(0);
    const { double } = reviewer(accepted(), new Error('connect ECONNREFUSED'));
    const authenticator = new KubernetesAuthenticator({ reviewer: double, clock, ttlMs: 1_000 });
    await expect(authenticator.authenticate('t'.repeat(40))).resolves.toMatchObject({
      kind: 'authenticated',
    });
    await clock.advance(1_000);
    await expect(authenticator.authenticate('t'.repeat(40))).resolves.toMatchObject({
      kind: 'unavailable',
    });
  });

  it('holds at most maxEntries tokens', async () => {
    const { double } = reviewer(accepted());
    const authenticator = new KubernetesAuthenticator({
      reviewer: double,
      clock: new ManualClock(0),
      maxEntries: 5,
    });
    for (let i = 0; i < 50; i++) await authenticator.authenticate(jwt(undefined, `t${i}`));
    expect(authenticator.cachedTokens).toBe(5);
  });
});

describe('KubernetesAuthorizer', () => {
  function accessReviewer(...answers: ({ allowed: boolean; reason: string } | Error)[]) {
    const calls: Parameters<AccessReviewer['reviewAccess']>[1][] = [];
    const double: AccessReviewer = {
      reviewAccess: (_user, attributes) => {
        calls.push(attributes);
        const answer = answers.length > 1 ? answers.shift() : answers[0];
        if (answer === undefined) throw new Error('no answer queued');
        return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
      },
    };
    return { double, calls };
  }

  it.each([
    {
      name: 'allowed',
      answer: { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding' },
      driver: 'gpu.example.com',
      outcome: { kind: 'allowed' },
    },
    {
      name: 'denied-names-verb-and-driver',
      answer: { allowed: false, reason: '' },
      driver: 'gpu.example.com',
      outcome: {
        kind: 'denied',
        reason: `${USER.username} may not create plugins.slicekeeper.dev "gpu.example.com"`,
      },
    },
    {
      name: 'denied-with-authorizer-reason',
      answer: { allowed: false, reason: 'no RBAC policy matched' },
      driver: undefined,
      outcome: {
        kind: 'denied',
        reason: `${USER.username} may not create plugins.slicekeeper.dev (all): no RBAC policy matched`,
      },
    },
    {
      name: 'fails-closed-on-outage',
      answer: new Error('timeout'),
      driver: 'gpu.example.com',
      outcome: {
        kind: 'unavailable',
        reason: 'SubjectAccessReview for create on plugin "gpu.example.com" failed: timeout',
      },
    },
  ])('$name', async ({ answer, driver, outcome }) => {
    const { double, calls } = accessReviewer(answer);
    const authorizer = new KubernetesAuthorizer({ reviewer: double, clock: new ManualClock(0) });
    await expect(authorizer.authorize(USER, 'create', driver)).resolves.toEqual(outcome);
    expect(calls).toEqual([
      {
        verb: 'create',
        group: 'slicekeeper.dev',
        resource: 'plugins',
        ...(driver === undefined ? {} : { name: driver }),
      },
    ]);
  });

  it.each([
    {
      name: 'same-question-cached',
      second: ['create', 'a.example.com'],
      advance: 4_999,
      reviews: 1,
    },
    { name: 'expires-after-ttl', second: ['create', 'a.example.com'], advance: 5_000, reviews: 2 },
    { name: 'other-verb-asked', second: ['delete', 'a.example.com'], advance: 0, reviews: 2 },
    { name: 'other-driver-asked', second: ['create', 'b.example.com'], advance: 0, reviews: 2 },
  ] as const)('$name', async ({ second, advance, reviews }) => {
    const clock = new ManualClock(0);
    const { double, calls } = accessReviewer({ allowed: false, reason: '' });
    const authorizer = new KubernetesAuthorizer({ reviewer: double, clock });
    await authorizer.authorize(USER, 'create', 'a.example.com');
    await clock.advance(advance);
    await authorizer.authorize(USER, second[0], second[1]);
    expect(calls).toHaveLength(reviews);
  });

  it('an outage is not cached', async () => {
    const { double, calls } = accessReviewer(new Error('timeout'), { allowed: true, reason: '' });
    const authorizer = new KubernetesAuthorizer({ reviewer: double, clock: new ManualClock(0) });
    await authorizer.authorize(USER, 'get', 'a.example.com');
    await expect(authorizer.authorize(USER, 'get', 'a.example.com')).resolves.toEqual({
      kind: 'allowed',
    });
    expect(calls).toHaveLength(2);
  });
});
