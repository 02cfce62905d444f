import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import type { SliceKey, SyncReason } from '@slicekeeper/contracts';
import { ClusterCache, KubeSliceClient, KubeTransport } from '@slicekeeper/kube';
import { createLogger } from '@slicekeeper/observability';
import { DeletionMarks, RegistrationStore, SyncRecords } from '@slicekeeper/state';
import { redisKeys } from '@slicekeeper/state/testing';
import { uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { ClusterTriggers } from './cluster-triggers';
import { Reconciler } from './reconciler';

const logger = createLogger({ service: 'cluster-triggers-test', level: 'silent' });
const gpuA = { node: 'node-a', driver: 'gpu.example.com' };
const nicA = { node: 'node-a', driver: 'nic.example.com' };

/**
 * Two syncer replicas against one Redis and one API server: each with its own watch-fed cache,
 * as two pods have. Replica A syncs; replica B only watches and asks for repairs.
 */
describe('cluster triggers across replicas', () => {
  const redis = useRedisServer();
  let kube: RunningKubeEmulator;
  let closers: (() => Promise<void> | void)[];
  let prefix: string;
  let registrations: RegistrationStore;
  let replicaA: { cluster: ClusterCache; reconciler: Reconciler };
  let repairs: { key: SliceKey; reason: SyncReason }[];
  let caches: ClusterCache[];

  function cache(onForeignChange?: ClusterTriggers['onForeignChange']): ClusterCache {
    const transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    const cluster = new ClusterCache({
      transport,
      logger,
      ...(onForeignChange === undefined ? {} : { onForeignChange }),
    });
    closers.push(async () => {
      await cluster.close();
      transport.close();
    });
    caches.push(cluster);
    return cluster;
  }

  beforeEach(async () => {
    closers = [];
    caches = [];
    repairs = [];
    prefix = uniquePrefix('triggers');
    kube = await startKubeEmulator({ port: 0 });
    closers.push(() => kube.close());
    await fetch(`${kube.url}/api/v1/nodes`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } }),
    });
    registrations = new RegistrationStore({ redis: redis.redis, prefix });
    const deletions = new DeletionMarks({ redis: redis.redis, prefix });

    const clusterA = cache();
    const transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    const api = new KubeSliceClient({ transport });
    closers.push(async () => {
      await api.close();
      transport.close();
    });
    replicaA = {
      cluster: clusterA,
      reconciler: new Reconciler({
        records: new SyncRecords({ redis: redis.redis, prefix }),
        cluster: clusterA,
        api,
        deletions,
        logger,
      }),
    };
    const triggersB = new ClusterTriggers({
      syncQueue: {
        enqueue: (key, reason) => {
          repairs.push({ key, reason });
          return Promise.resolve();
        },
      },
      registrations,
      deletions,
      logger,
    });
    cache(triggersB.onForeignChange);
    await Promise.all(caches.map((c) => c.start()));
  });

  afterEach(async () => {
    for (const close of closers.reverse()) await close();
  });

  async function publish(key: SliceKey, devices: number): Promise<void> {
    await registrations.add({ ...key, endpoint: 'unix:///run/driver.sock', version: 'v1' });
    await redis.redis.set(
      redisKeys(prefix).snapshot(key),
      JSON.stringify({
        generation: 1,
        receivedAt: new Date().toISOString(),
        endpoint: 'unix:///run/driver.sock',
        inventory: {
          pools: [
            {
              name: 'node-a',
              scope: { kind: 'node' },
              devices: Array.from({ length: devices }, (_, i) => ({ name: `dev-${i}` })),
            },
          ],
        },
      }),
    );
    const result = await replicaA.reconciler.reconcile(key, {
      jobId: `publish-${key.driver}`,
      attempt: 1,
      reason: 'snapshot',
    });
    expect(result.outcome).toBe('synced');
  }

  const seenByB = (key: SliceKey) => caches[1]?.slicesOf(key).length ?? 0;

  it("knows another replica's withdrawal as slicekeeper's, and repairs a slice someone else deletes", async () => {
    // 100 devices: two slices (64 per slice, as laid out for taints).
    await publish(gpuA, 100);
    await publish(nicA, 1);
    await waitFor(() => seenByB(gpuA) === 2 && seenByB(nicA) === 1, {
      description: "replica B's watch has both keys' slices",
    });

    // Replica A withdraws the GPU driver's two slices.
    await registrations.remove(gpuA);
    const withdrawn = await replicaA.reconciler.reconcile(gpuA, {
      jobId: 'withdraw',
      attempt: 1,
      reason: 'removed',
    });
    expect(withdrawn).toMatchObject({ outcome: 'withdrawn', status: { writes: 2 } });
    await waitFor(() => seenByB(gpuA) === 0, { description: "B's watch saw the deletions" });

    // Someone else deletes the NIC driver's slice: B asks for its repair. Its lookup is queued
    // behind those of the withdrawal's deletions, so by now B has judged those too.
    const [nicSlice] = replicaA.cluster.slicesOf(nicA);
    const name = nicSlice?.metadata.name ?? '';
    const deleted = await fetch(`${kube.url}/apis/resource.k8s.io/v1/resourceslices/${name}`, {
      method: 'DELETE',
    });
    expect(deleted.status).toBe(200);
    await waitFor(() => repairs.length > 0, { description: 'the repair of the NIC slice' });
    expect(repairs).toEqual([{ key: nicA, reason: 'slice-changed' }]);
  });
});
