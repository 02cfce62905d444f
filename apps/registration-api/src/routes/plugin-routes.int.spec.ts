import {
  KubernetesAuthenticator,
  KubernetesAuthorizer,
  NODE_NAME_CLAIM,
} from '@slicekeeper/admission';
import type { AccessReviewer, KubernetesUser, TokenReviewer } from '@slicekeeper/admission';
import { redisKeys } from '@slicekeeper/state/testing';
import type { InventorySnapshot, StreamState, SyncStatus } from '@slicekeeper/contracts';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ManualClock } from '@slicekeeper/time/testing';
import type { FakePlugin } from '../testing/api-harness';
import {
  ApiHarness,
  NODE_B_TOKEN,
  SOCKET_DIR,
  admin,
  auth,
  gpuInfo,
  nodeA,
} from '../testing/api-harness';

const socket = (name: string) => `unix://${SOCKET_DIR}/${name}.sock`;
const GPU = socket('gpu');

describe('plugin routes', () => {
  let server: RedisServer;
  let h: ApiHarness;

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server.stop());
  beforeEach(async () => {
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('api') }).ready();
  });
  afterEach(() => h.close());

  const register = (body: Record<string, unknown>, headers = admin) =>
    h.app.inject({ method: 'POST', url: '/v1/plugins', headers, payload: body });

  describe('POST /v1/plugins', () => {
    it('probes, stores and answers 201 with the registration, then tells the plugin', async () => {
      const res = await register({ node: 'node-a', endpoint: GPU });
      expect(res.statusCode).toBe(201);
      expect(res.headers.location).toBe('/v1/plugins/node-a/gpu.example.com');
      expect(res.json()).toMatchObject({
        node: 'node-a',
        driver: 'gpu.example.com',
        endpoint: GPU,
        version: 'v1.ResourcePublisher',
        sequence: 1,
      });
      expect(h.prober.connects).toEqual([GPU]);
      expect(h.prober.told).toEqual([{ endpoint: GPU, outcome: { registered: true } }]);
      expect(await h.store.get({ node: 'node-a', driver: 'gpu.example.com' })).toEqual([
        res.json(),
      ]);
    });

    it('answers 200 to the same registration again, and allows a second endpoint', async () => {
      expect((await register({ node: 'node-a', endpoint: GPU })).statusCode).toBe(201);
      const again = await register({ node: 'node-a', endpoint: GPU }, nodeA);
      expect(again.statusCode).toBe(200);
      expect(again.json()).toMatchObject({ endpoint: GPU, sequence: 2 });
      const second = await register({ node: 'node-a', endpoint: socket('gpu-v2') });
      expect(second.statusCode).toBe(201);
      const stored = await h.store.get({ node: 'node-a', driver: 'gpu.example.com' });
      expect(stored.map((r) => r.endpoint)).toEqual([socket('gpu-v2'), GPU]);
    });

    it('registers a plugin without the registration service from the declared driver', async () => {
      h.prober.plugins.set(GPU, 'unimplemented');
      const res = await register({
        node: 'node-a',
        endpoint: GPU,
        driver: 'gpu.example.com',
        supportedVersions: ['v1.ResourcePublisher'],
      });
      expect(res.statusCode).toBe(201);
      const bare = await register({ node: 'node-b', endpoint: GPU });
      expect(bare.statusCode).toBe(422);
      expect(bare.json()).toMatchObject({ code: 'missing-plugin-info' });
    });

    const refusals: [string, FakePlugin, number, string, RegExp][] = [
      [
        'a plugin of another type',
        { ...gpuInfo, type: 'CSIPlugin' },
        422,
        'wrong-plugin-type',
        /"CSIPlugin", not a "DRAPlugin"/,
      ],
      [
        'an invalid driver name',
        { ...gpuInfo, name: 'GPU_Driver' },
        422,
        'invalid-driver-name',
        /driver name "GPU_Driver"/,
      ],
      [
        'no common version',
        { ...gpuInfo, supportedVersions: ['v0.Legacy', 'v9.Future'] },
        422,
        'unsupported-versions',
        /\["v0.Legacy", "v9.Future"\] is supported by slicekeeper \["v1.ResourcePublisher", "1.0.0"\]/,
      ],
      ['a GetInfo timeout', 'timeout', 502, 'plugin-timeout', /no answer within/],
      ['an unreachable plugin', 'unreachable', 502, 'plugin-unreachable', /refused/],
    ];
    it.each(refusals)(
      'refuses %s and stores nothing',
      async (_name, plugin, status, code, message) => {
        h.prober.plugins.set(GPU, plugin);
        const before = await h.redisState();
        const res = await register({ node: 'node-a', endpoint: GPU });
        expect(res.statusCode).toBe(status);
        expect(res.json()).toEqual({
          code,
          message: expect.stringMatching(message) as unknown,
          details: [],
        });
        expect(await h.redisState()).toEqual(before);
        if (plugin !== 'unreachable') {
          expect(h.prober.told).toEqual([
            {
              endpoint: GPU,
              outcome: { registered: false, error: res.json<{ message: string }>().message },
            },
          ]);
        }
      },
    );

    it('refuses a driver name that differs from what the plugin reports', async () => {
      const res = await register({ node: 'node-a', endpoint: GPU, driver: 'nic.example.com' });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ code: 'driver-mismatch' });
    });

    it('answers 409 for an endpoint another driver has on the node', async () => {
      await register({ node: 'node-a', endpoint: GPU });
      h.prober.plugins.set(GPU, { ...gpuInfo, name: 'nic.example.com' });
      const res = await register({ node: 'node-a', endpoint: GPU });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({
        code: 'endpoint-in-use',
        message: expect.stringContaining('registered for driver gpu.example.com') as unknown,
      });
      expect(h.prober.told.at(-1)?.outcome.registered).toBe(false);
      // The same socket path on another node is another socket.
      expect((await register({ node: 'node-b', endpoint: GPU })).statusCode).toBe(201);
    });

    it('answers 409 beyond the endpoints one driver may have on a node', async () => {
      for (let i = 0; i < 4; i++) {
        expect((await register({ node: 'node-a', endpoint: socket(`gpu-${i}`) })).statusCode).toBe(
          201,
        );
      }
      const res = await register({ node: 'node-a', endpoint: socket('gpu-4') });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ code: 'too-many-endpoints' });
      expect((await register({ node: 'node-a', endpoint: socket('gpu-0') })).statusCode).toBe(200);
    });

    it('answers 409 beyond the drivers one node may have, however many arrive at once', async () => {
      await h.close();
      h = await new ApiHarness({
        redisUrl: server.url,
        prefix: uniquePrefix('api'),
        maxDriversPerNode: 3,
      }).ready();
      const drivers = Array.from({ length: 8 }, (_, i) => `d${i}.example.com`);
      for (const driver of drivers)
        h.prober.plugins.set(socket(driver), { ...gpuInfo, name: driver });
      const answers = await Promise.all(
        drivers.map((driver) => register({ node: 'node-a', endpoint: socket(driver) }, nodeA)),
      );
      expect(answers.filter((res) => res.statusCode === 201)).toHaveLength(3);
      const refused = answers.filter((res) => res.statusCode === 409);
      expect(refused).toHaveLength(5);
      expect(refused[0]?.json()).toMatchObject({
        code: 'too-many-drivers',
        message: expect.stringContaining('node node-a already has 3 drivers') as unknown,
      });
      // Another node has a budget of its own.
      expect((await register({ node: 'node-b', endpoint: GPU })).statusCode).toBe(201);
    });

    it('asks for a sync of every registration, so that a restarted driver is published at once', async () => {
      await register({ node: 'node-a', endpoint: GPU });
      const jobs = await h.queue.queue.getJobs(['waiting', 'prioritized']);
      expect(jobs.map((job) => job.data)).toEqual([
        { node: 'node-a', driver: 'gpu.example.com', reason: 'registered' },
      ]);
    });
  });

  describe('POST /v1/plugins with probedOnNode (the node-mode watcher dialled the socket)', () => {
    const probed = {
      node: 'node-a',
      endpoint: GPU,
      driver: 'gpu.example.com',
      supportedVersions: ['1.0.0', 'v1.ResourcePublisher'],
      probedOnNode: true,
    };

    it('own-node-token-201: stores with the negotiated version, dials nothing, tells nothing', async () => {
      const res = await register(probed, nodeA);
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({
        node: 'node-a',
        driver: 'gpu.example.com',
        endpoint: GPU,
        version: 'v1.ResourcePublisher',
      });
      expect(h.prober.connects).toEqual([]);
      expect(h.prober.told).toEqual([]);
      expect(await h.store.get({ node: 'node-a', driver: 'gpu.example.com' })).toEqual([
        res.json(),
      ]);
      const again = await register(probed, nodeA);
      expect(again.statusCode).toBe(200);
    });

    it.each([
      {
        name: 'another-node-403',
        body: { ...probed, node: 'node-b' },
        headers: nodeA,
        status: 403,
        code: 'forbidden',
        message: /token "node-a" may only act on its own node/,
      },
      {
        name: 'admin-403-says-why',
        body: probed,
        headers: admin,
        status: 403,
        code: 'forbidden',
        message:
          /^probedOnNode is accepted only from a token bound to node "node-a", whose agent dialled the socket there; an admin token \("ops"\) may not vouch for a socket it cannot see/,
      },
      {
        name: 'missing-driver-400',
        body: { ...probed, driver: undefined },
        headers: nodeA,
        status: 400,
        code: 'invalid-request',
        message: /^invalid body: body.driver$/,
        details: [{ field: 'body.driver', message: 'Required value when probedOnNode is true' }],
      },
      {
        name: 'missing-supported-versions-400',
        body: { ...probed, supportedVersions: undefined },
        headers: nodeA,
        status: 400,
        code: 'invalid-request',
        message: /^invalid body: body.supportedVersions$/,
        details: [
          { field: 'body.supportedVersions', message: 'Required value when probedOnNode is true' },
        ],
      },
      {
        name: 'endpoint-outside-the-socket-dirs-403-without-a-dial',
        body: { ...probed, endpoint: 'unix:///run/evil/gpu.sock' },
        headers: nodeA,
        status: 403,
        code: 'endpoint-forbidden',
        message: /sockets must be inside an allowed directory \(\/var\/lib\/kubelet\/plugins\)/,
      },
      {
        name: 'tcp-endpoint-403',
        body: { ...probed, endpoint: '10.0.0.5:9000' },
        headers: nodeA,
        status: 403,
        code: 'endpoint-forbidden',
        message: /must be a unix socket/,
      },
      {
        name: 'no-common-version-422',
        body: { ...probed, supportedVersions: ['v0.Legacy'] },
        headers: nodeA,
        status: 422,
        code: 'unsupported-versions',
        message: /v0.Legacy/,
      },
    ])(
      '$name, nothing stored or dialled',
      async ({ body, headers, status, code, message, details }) => {
        const before = await h.redisState();
        const res = await register(body, headers);
        expect(res.statusCode).toBe(status);
        expect(res.json()).toMatchObject({
          code,
          message: expect.stringMatching(message) as unknown,
          details: details ?? [],
        });
        expect(h.prober.connects).toEqual([]);
        expect(h.prober.told).toEqual([]);
        expect(await h.redisState()).toEqual(before);
      },
    );

    describe('with a ServiceAccount token (TokenReview node claim, SubjectAccessReview)', () => {
      const user = (node: string | undefined): KubernetesUser => ({
        username: 'system:serviceaccount:slicekeeper:plugin-watcher',
        uid: 'uid-watcher',
        groups: ['system:serviceaccounts', 'system:authenticated'],
        extra: node === undefined ? {} : { [NODE_NAME_CLAIM]: [node] },
      });
      const tokens = new Map([
        ['watcher-on-node-a-0123456789abcdef0123456789', user('node-a')],
        ['controller-no-node-0123456789abcdef0123456789', user(undefined)],
      ]);
      let asked: string[];
      let granted: boolean;
      const reviewer: TokenReviewer & AccessReviewer = {
        reviewToken: (token) => {
          const found = tokens.get(token);
          return Promise.resolve(
            found === undefined
              ? { authenticated: false as const, error: 'invalid bearer token' }
              : { authenticated: true as const, user: found, audiences: ['slicekeeper'] },
          );
        },
        reviewAccess: (_user, attributes) => {
          asked.push(`${attributes.verb} ${attributes.name ?? '*'}`);
          return Promise.resolve({ allowed: granted, reason: '' });
        },
      };

      beforeEach(async () => {
        asked = [];
        granted = true;
        await h.close();
        const clock = new ManualClock();
        h = await new ApiHarness({
          redisUrl: server.url,
          prefix: uniquePrefix('api'),
          kubernetes: {
            authenticator: new KubernetesAuthenticator({ reviewer, clock }),
            authorizer: new KubernetesAuthorizer({ reviewer, clock }),
          },
        }).ready();
      });

      it.each([
        {
          name: 'node-claim-equals-node-201-after-subject-access-review',
          token: 'watcher-on-node-a-0123456789abcdef0123456789',
          grant: true,
          node: 'node-a',
          status: 201,
          message: undefined,
        },
        {
          name: 'node-claim-of-another-node-403',
          token: 'watcher-on-node-a-0123456789abcdef0123456789',
          grant: true,
          node: 'node-b',
          status: 403,
          message: /bound to node "node-a" by its authentication.kubernetes.io\/node-name claim/,
        },
        {
          name: 'no-node-claim-on-the-cluster-key-403',
          token: 'controller-no-node-0123456789abcdef0123456789',
          grant: true,
          node: '',
          status: 403,
          message:
            /^probedOnNode is accepted only from a token bound to a node, .*has no node claim/,
        },
        {
          name: 'rbac-denies-the-driver-403',
          token: 'watcher-on-node-a-0123456789abcdef0123456789',
          grant: false,
          node: 'node-a',
          status: 403,
          message: /may not create plugins.slicekeeper.dev "gpu.example.com"/,
        },
      ])('$name', async ({ token, grant, node, status, message }) => {
        granted = grant;
        const res = await register({ ...probed, node }, auth(token));
        expect(res.statusCode).toBe(status);
        if (message !== undefined) {
          expect(res.json()).toMatchObject({ message: expect.stringMatching(message) as unknown });
        }
        expect(h.prober.connects).toEqual([]);
        if (status === 201 || !grant) expect(asked).toContain('create gpu.example.com');
      });
    });
  });

  describe('DELETE /v1/plugins/{node}/{driver}', () => {
    const key = { node: 'node-a', driver: 'gpu.example.com' };

    it('removes one endpoint, then the rest, recording the removal and asking for a sync', async () => {
      await register({ node: 'node-a', endpoint: GPU });
      await register({ node: 'node-a', endpoint: socket('gpu-v2') });
      const one = await h.app.inject({
        method: 'DELETE',
        url: `/v1/plugins/node-a/gpu.example.com?endpoint=${encodeURIComponent(GPU)}`,
        headers: nodeA,
      });
      expect(one.statusCode).toBe(200);
      expect(
        one.json<{ removed: { endpoint: string }[] }>().removed.map((r) => r.endpoint),
      ).toEqual([GPU]);
      expect(await h.store.removal(key)).toBeUndefined();
      const rest = await h.app.inject({
        method: 'DELETE',
        url: '/v1/plugins/node-a/gpu.example.com',
        headers: admin,
      });
      expect(rest.statusCode).toBe(200);
      expect(await h.store.get(key)).toEqual([]);
      const removal = await h.store.removal(key);
      // The API's default grace (REMOVAL_GRACE, 30 s): a restarting driver keeps its slices.
      expect((removal?.withdrawAt ?? 0) - (removal?.removedAt ?? 0)).toBe(30_000);
      // One sync of the key waits (the registration's, which the removal's joined).
      const jobs = await h.queue.queue.getJobs(['waiting', 'prioritized']);
      expect(jobs.map((job) => ({ node: job.data.node, driver: job.data.driver }))).toEqual([key]);
    });

    it('takes the grace from the request, and refuses one that is not a duration', async () => {
      await register({ node: 'node-a', endpoint: GPU });
      const now = await h.app.inject({
        method: 'DELETE',
        url: '/v1/plugins/node-a/gpu.example.com?grace=0s',
        headers: admin,
      });
      expect(now.statusCode).toBe(200);
      const removal = await h.store.removal(key);
      expect(removal?.withdrawAt).toBe(removal?.removedAt);

      await register({ node: 'node-a', endpoint: GPU });
      expect(await h.store.removal(key)).toBeUndefined();
      for (const grace of ['soon', '2d', '5h']) {
        const bad = await h.app.inject({
          method: 'DELETE',
          url: `/v1/plugins/node-a/gpu.example.com?grace=${grace}`,
          headers: admin,
        });
        expect(bad.statusCode).toBe(400);
        expect(bad.json<{ message: string }>().message).toMatch(/grace/);
      }
      expect(await h.store.get(key)).toHaveLength(1);
    });

    it('answers 404 for a plugin or endpoint that is not registered', async () => {
      const none = await h.app.inject({
        method: 'DELETE',
        url: '/v1/plugins/node-a/gpu.example.com',
        headers: admin,
      });
      expect(none.statusCode).toBe(404);
      expect(none.json()).toEqual({
        code: 'not-found',
        message: 'plugin node-a/gpu.example.com is not registered',
        details: [],
      });
      await register({ node: 'node-a', endpoint: GPU });
      const other = await h.app.inject({
        method: 'DELETE',
        url: `/v1/plugins/node-a/gpu.example.com?endpoint=${encodeURIComponent(socket('x'))}`,
        headers: admin,
      });
      expect(other.statusCode).toBe(404);
      expect(await h.store.get(key)).toHaveLength(1);
    });
  });

  describe('GET /v1/plugins/{node}/{driver}', () => {
    it('shows the registration with stream state, snapshot summary and sync status', async () => {
      await register({ node: 'node-a', endpoint: GPU });
      const key = { node: 'node-a', driver: 'gpu.example.com' };
      const keys = redisKeys(h.prefix);
      const stream: StreamState = {
        state: 'streaming',
        endpoint: GPU,
        since: '2026-11-21T12:00:00.000Z',
        lastMessageAt: '2026-11-21T12:00:01.000Z',
        reconnects: 0,
      };
      const snapshot: InventorySnapshot = {
        generation: 2,
        receivedAt: '2026-11-21T12:00:01.000Z',
        endpoint: GPU,
        inventory: {
          pools: [
            {
              name: 'node-a',
              scope: { kind: 'node' },
              devices: [{ name: 'gpu-0' }, { name: 'gpu-1' }],
            },
          ],
        },
      };
      const sync: SyncStatus = {
        outcome: 'retrying',
        snapshotGeneration: 2,
        slices: [],
        pools: [],
        error: 'create ResourceSlice: 503',
        attempt: 3,
        startedAt: '2026-11-21T12:00:02.000Z',
        finishedAt: '2026-11-21T12:00:02.100Z',
        writes: 0,
      };
      await h.redis.set(keys.streamState(key), JSON.stringify(stream));
      await h.redis.set(keys.snapshot(key), JSON.stringify(snapshot));
      await h.redis.set(keys.syncStatus(key), JSON.stringify(sync));
      const res = await h.app.inject({
        method: 'GET',
        url: '/v1/plugins/node-a/gpu.example.com',
        headers: nodeA,
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        node: 'node-a',
        driver: 'gpu.example.com',
        registrations: [expect.objectContaining({ endpoint: GPU }) as unknown],
        stream,
        snapshot: {
          generation: 2,
          receivedAt: '2026-11-21T12:00:01.000Z',
          endpoint: GPU,
          pools: [{ name: 'node-a', devices: 2 }],
          devices: 2,
        },
        sync,
      });
    });

    it('answers 404 for a plugin that is not registered', async () => {
      const res = await h.app.inject({
        method: 'GET',
        url: '/v1/plugins/node-a/gpu.example.com',
        headers: admin,
      });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 'not-found' });
    });
  });

  describe('GET /v1/plugins', () => {
    beforeEach(async () => {
      for (const node of ['node-a', 'node-b', 'node-c']) {
        for (const driver of ['gpu.example.com', 'nic.example.com']) {
          h.prober.plugins.set(socket(`${node}-${driver}`), { ...gpuInfo, name: driver });
          await register({ node, endpoint: socket(`${node}-${driver}`) });
        }
      }
    });

    const list = async (query: string, headers = admin) => {
      const res = await h.app.inject({ method: 'GET', url: `/v1/plugins${query}`, headers });
      return {
        status: res.statusCode,
        body: res.json<{ items?: { node: string; driver: string }[]; next?: string }>(),
        ids: (res.json<{ items?: { node: string; driver: string }[] }>().items ?? []).map(
          (i) => `${i.node}/${i.driver}`,
        ),
      };
    };

    it('filters by node and by driver', async () => {
      expect((await list('?node=node-b')).ids).toEqual([
        'node-b/gpu.example.com',
        'node-b/nic.example.com',
      ]);
      expect((await list('?driver=nic.example.com')).ids).toEqual([
        'node-a/nic.example.com',
        'node-b/nic.example.com',
        'node-c/nic.example.com',
      ]);
    });

    it('pages with limit and after', async () => {
      const first = await list('?limit=4');
      expect(first.ids).toHaveLength(4);
      expect(first.body.next).toBe('node-b/nic.example.com');
      const second = await list(`?limit=4&after=${encodeURIComponent(first.body.next ?? '')}`);
      expect(second.ids).toEqual(['node-c/gpu.example.com', 'node-c/nic.example.com']);
      expect(second.body.next).toBeUndefined();
    });

    it("shows a node-bound token its own node's plugins only", async () => {
      expect((await list('', nodeA)).ids).toEqual([
        'node-a/gpu.example.com',
        'node-a/nic.example.com',
      ]);
      const other = await list('?node=node-b', nodeA);
      expect(other.status).toBe(403);
      expect(other.body).toMatchObject({ code: 'forbidden' });
      expect((await list('?node=node-b', auth(NODE_B_TOKEN))).ids).toHaveLength(2);
    });
  });
});
