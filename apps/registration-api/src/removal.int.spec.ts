import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { syncStatusSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { InventorySnapshot, SliceKey } from '@slicekeeper/contracts';
import { ClusterCache, KubeSliceClient, KubeTransport } from '@slicekeeper/kube';
import { createLogger } from '@slicekeeper/observability';
import { createRedisConnection } from '@slicekeeper/queue';
import { SyncRecords } from '@slicekeeper/state';
import { Reconciler, SyncWorker } from '@slicekeeper/syncer';
import { RedisServer, waitFor, uniquePrefix } from '@slicekeeper/testing';
import { ApiHarness, SOCKET_DIR, admin } from './testing/api-harness';

const GPU = `unix://${SOCKET_DIR}/gpu.sock`;
const key: SliceKey = { node: 'node-a', driver: 'gpu.example.com' };

async function slicesOf(kube: RunningKubeEmulator): Promise<string[]> {
  const selector = encodeURIComponent(`spec.nodeName=${key.node},spec.driver=${key.driver}`);
  const res = await fetch(
    `${kube.url}/apis/resource.k8s.io/v1/resourceslices?fieldSelector=${selector}`,
  );
  const list = (await res.json()) as { items: { metadata: { name: string } }[] };
  return list.items.map((item) => item.metadata.name);
}

/**
 * The acceptance test of removal: with only the slice-syncer running (no plugin-watcher), a
 * DELETE through the API withdraws the key's slices from the API server.
 */
describe('removing a plugin with only the syncer running', () => {
  let server: RedisServer;
  let kube: RunningKubeEmulator;
  let h: ApiHarness;
  let syncer: SyncWorker;
  let transport: KubeTransport;
  let cluster: ClusterCache;
  const workerConnection = () =>
    createRedisConnection({ target: { kind: 'server', url: server.url } });
  let worker: ReturnType<typeof workerConnection>;

  beforeAll(async () => {
    server = await RedisServer.start();
    kube = await startKubeEmulator({ port: 0 });
    await fetch(`${kube.url}/api/v1/nodes`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: key.node } }),
    });
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('api') }).ready();
    worker = workerConnection();
    const logger = createLogger({ service: 'slice-syncer', level: 'silent' });
    transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    cluster = new ClusterCache({ transport, logger });
    await cluster.start();
    syncer = new SyncWorker({
      connection: worker,
      prefix: h.prefix,
      reconciler: new Reconciler({
        records: new SyncRecords({ redis: h.redis, prefix: h.prefix }),
        cluster,
        api: new KubeSliceClient({ transport }),
        logger,
      }),
      logger,
    });
    await syncer.start();
  });
  afterAll(async () => {
    await syncer.close();
    await cluster.close();
    transport.close();
    worker.disconnect();
    await h.close();
    await kube.close();
    await server.stop();
  });

  it('withdraws the slices promptly', async () => {
    const registered = await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: admin,
      payload: { node: key.node, endpoint: GPU },
    });
    expect(registered.statusCode).toBe(201);
    // What the plugin-watcher would have done with the driver's first message.
    const snapshot: InventorySnapshot = {
      generation: 1,
      receivedAt: new Date().toISOString(),
      endpoint: GPU,
      inventory: {
        pools: [
          {
            name: key.node,
            scope: { kind: 'node' },
            devices: [{ name: 'gpu-0' }, { name: 'gpu-1' }],
          },
        ],
      },
    };
    await h.redis.set(redisKeys(h.prefix).snapshot(key), JSON.stringify(snapshot));
    await h.queue.enqueue(key, 'snapshot');
    await waitFor(async () => (await slicesOf(kube)).length === 1, {
      description: 'slices published',
    });

    const removed = await h.app.inject({
      method: 'DELETE',
      url: `/v1/plugins/${key.node}/${key.driver}?grace=0s`,
      headers: admin,
    });
    expect(removed.statusCode).toBe(200);
    await waitFor(async () => (await slicesOf(kube)).length === 0, {
      description: 'slices withdrawn',
      timeoutMs: 5000,
    });
    const status = syncStatusSchema.parse(
      JSON.parse((await h.redis.get(redisKeys(h.prefix).syncStatus(key))) ?? 'null'),
    );
    expect(status).toMatchObject({ outcome: 'withdrawn', slices: [] });
  });
});
