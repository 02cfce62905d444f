import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DriverServer } from '@slicekeeper/driver-kit';
import { System, gpuInventory, publishes } from './harness';
import { KubeIdentities, expiredCopy, forgedToken } from './harness/kube-identities';
import type { DriverPod } from './harness/kube-identities';

const GPU = 'gpu.example.com';
// A namespace the emulator has (it models only the system ones).
const NAMESPACE = 'kube-system';
const NODE_CLAIM = 'authentication.kubernetes.io/node-name';
const USER = `system:serviceaccount:${NAMESPACE}:gpu-driver`;

/**
 * Issue 27: a driver pod's projected ServiceAccount token is its registration credential. The
 * API reviews it with the cluster's TokenReview, holds it to the node of its node claim, and asks
 * SubjectAccessReview whether RBAC lets it register its driver. Every service is a process; the
 * kube emulator issues and reviews the tokens and evaluates RBAC as kube-apiserver 1.34 does.
 */
describe('Kubernetes identities at the registration API', () => {
  let system: System;
  let cluster: KubeIdentities;
  let driver: DriverServer | undefined;
  let pod: DriverPod;
  let token: string;
  let endpoint: string;
  const inventory = gpuInventory({ devices: 4 });
  let keyDir: string;
  /** The emulator's ServiceAccount signing key, PEM: the test can sign as the cluster does. */
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();

  /** POST /v1/plugins as the driver does, with `bearer`; the status and the error body. */
  async function register(
    bearer: string,
    node = 'node-a',
  ): Promise<{ status: number; code?: string; message?: string }> {
    const response = await fetch(new URL('/v1/plugins', system.apiUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ node, endpoint }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json()) as { code?: string; message?: string };
    return { status: response.status, code: body.code, message: body.message };
  }

  beforeAll(async () => {
    keyDir = await mkdtemp(join(tmpdir(), 'kube-identities-'));
    await writeFile(join(keyDir, 'sa.key'), signingKey, { mode: 0o600 });
    system = await System.start({
      name: 'kube-identities',
      emulatorEnv: { SERVICE_ACCOUNT_SIGNING_KEY_FILE: join(keyDir, 'sa.key') },
      nodes: ['node-a', 'node-b'],
      apiKubernetesIdentities: true,
      // Short, so that revocations and new grants show within a scenario.
      apiEnv: { TOKEN_REVIEW_CACHE_TTL: '1s', ACCESS_REVIEW_CACHE_TTL: '1s' },
    });
    cluster = new KubeIdentities(system.emulator.url);
    pod = await cluster.driverPod({
      namespace: NAMESPACE,
      serviceAccount: 'gpu-driver',
      pod: 'gpu-driver-node-a',
      node: 'node-a',
    });
    token = await cluster.projectedToken(pod, { audience: 'slicekeeper' });
    const socketDir = join(system.stateDir, 'sockets', 'node-a');
    await mkdir(socketDir, { recursive: true });
    endpoint = `unix://${join(socketDir, `${GPU}.sock`)}`;
    driver = new DriverServer({ driverName: GPU, endpoint, inventory });
    await driver.start();
  }, 90_000);

  afterAll(async () => {
    await driver?.close();
    await system.close();
    await rm(keyDir, { recursive: true, force: true });
  });

  it('without an RBAC grant the registration is refused: 403 naming the verb and the driver', async () => {
    expect(await register(token)).toEqual({
      status: 403,
      code: 'forbidden',
      message: `${USER} may not create plugins.slicekeeper.dev "${GPU}"`,
    });
  });

  it('once a ClusterRole for the driver is bound to its ServiceAccount, it registers for its own node (201) and publishes', async () => {
    await cluster.pluginRole(`slicekeeper-plugin-${GPU}`, [GPU], ['create', 'delete', 'get']);
    await cluster.bindClusterRole(
      `slicekeeper-plugin-${GPU}`,
      `slicekeeper-plugin-${GPU}`,
      NAMESPACE,
      'gpu-driver',
    );
    let last: Awaited<ReturnType<typeof register>> | undefined;
    // The API may still hold the denial for ACCESS_REVIEW_CACHE_TTL.
    await system.until('the grant seen', async () => {
      last = await register(token);
      return last.status !== 403;
    });
    expect(last?.status).toBe(201);
    await system.until('the slices published', async () =>
      publishes(await system.emulator.slices({ node: 'node-a', driver: GPU }), inventory),
    );
  });

  it('is refused for another node: 403 naming the node claim', async () => {
    expect(await register(token, 'node-b')).toEqual({
      status: 403,
      code: 'forbidden',
      message: `the token of ${USER} is bound to node "node-a" by its ${NODE_CLAIM} claim; it may not act on node "node-b"`,
    });
  });

  it.each([
    { name: 'forged (signed by no key of the cluster)', bearer: () => forgedToken('node-a') },
    {
      name: 'for another audience',
      bearer: () => cluster.projectedToken(pod, { audience: 'vault' }),
    },
  ])('a token $name is 401', async ({ bearer }) => {
    expect(await register(await bearer())).toEqual({
      status: 401,
      code: 'unauthorized',
      message: 'a valid bearer token is required',
    });
  });

  it('an expired token (signed by the cluster, its exp an hour ago) is 401', async () => {
    // The same claims re-signed with a future exp are accepted: the signature is the cluster's,
    // so the 401 is the expiry's.
    expect((await register(expiredCopy(token, signingKey, -600))).status).toBe(200);
    expect(await register(expiredCopy(token, signingKey))).toEqual({
      status: 401,
      code: 'unauthorized',
      message: 'a valid bearer token is required',
    });
  });

  it('while TokenReview fails the API answers 503, never an accept, and recovers after', async () => {
    // A token the API has not reviewed yet, so no cached answer stands in for the review.
    const fresh = await cluster.projectedToken(pod, { audience: 'slicekeeper' });
    await system.emulator.injectFault({
      verb: 'create',
      resource: 'tokenreviews',
      status: 503,
      durationMs: 600_000,
    });
    for (let i = 0; i < 3; i++) {
      expect(await register(fresh)).toMatchObject({
        status: 503,
        code: 'authentication-unavailable',
      });
    }
    await system.emulator.clearLog();
    expect((await register(fresh)).status).toBe(200);
  });

  it('deleting its ServiceAccount makes the next registration fail (within the review cache TTL)', async () => {
    await cluster.deleteServiceAccount(NAMESPACE, 'gpu-driver');
    await system.until('the token refused', async () => (await register(token)).status === 401);
    expect(await register(token)).toMatchObject({ status: 401, code: 'unauthorized' });
  });
});
