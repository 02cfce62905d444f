import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { parse } from 'yaml';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import type { DriverInventory, SliceKey } from '@slicekeeper/contracts';
import {
  ClusterCache,
  KubeNodeStatusClient,
  KubeSliceClient,
  KubeTransport,
} from '@slicekeeper/kube';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { SyncQueue, createRedisConnection } from '@slicekeeper/queue';
import {
  NodePublishState,
  RegistrationStore,
  SnapshotWriter,
  SyncRecords,
} from '@slicekeeper/state';
import { requestJson, uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { ClusterTriggers } from './cluster-triggers';
import { NodeConditionQueue } from './node-condition-queue';
import { NodeConditionMetrics, NodeConditionReconciler } from './node-condition-reconciler';
import type { NodeConditionResult } from './node-condition-reconciler';
import { NodeConditionWorker } from './node-condition-worker';
import { Reconciler } from './reconciler';
import { SyncWorker } from './sync-worker';

const logger = createLogger({ service: 'node-condition-test', level: 'silent' });
const run = promisify(execFile);
const NODES = '/api/v1/nodes';
const ENDPOINT = 'unix:///plugins/driver.sock';

interface ConditionJson {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

function gpus(node: string, count: number, name = (i: number) => `gpu-${i}`): DriverInventory {
  return {
    pools: [
      {
        name: node,
        scope: { kind: 'node' },
        devices: Array.from({ length: count }, (_, i) => ({
          name: name(i),
          attributes: { index: { int: i } },
        })),
      },
    ],
  };
}

/**
 * A slice-syncer replica wired as apps/slice-syncer's main.ts wires it, against a private Redis
 * prefix and the emulator: syncs report their statuses to the node condition queue, the cache
 * reports Nodes and others' condition writes to it.
 */
class Syncer {
  readonly prefix = uniquePrefix('node-condition');
  readonly registrations: RegistrationStore;
  readonly snapshots: SnapshotWriter;
  readonly syncQueue: SyncQueue;
  readonly nodeQueue: NodeConditionQueue;
  readonly cluster: ClusterCache;
  readonly metrics: NodeConditionMetrics;
  /** Every evaluation's outcome, by node, in the order they finished. */
  readonly evaluations: { node: string; result: NodeConditionResult }[] = [];
  private readonly transport: KubeTransport;
  private readonly api: KubeSliceClient;
  private readonly syncWorker: SyncWorker;
  private readonly nodeWorker: NodeConditionWorker;
  private readonly connections: Redis[] = [];

  constructor(
    private readonly redisUrl: string,
    readonly kube: RunningKubeEmulator,
  ) {
    const redis = this.connection();
    this.registrations = new RegistrationStore({ redis, prefix: this.prefix });
    this.snapshots = new SnapshotWriter({ redis, prefix: this.prefix });
    this.syncQueue = new SyncQueue({ connection: redis, prefix: this.prefix });
    this.nodeQueue = new NodeConditionQueue({ connection: redis, prefix: this.prefix, logger });
    this.transport = new KubeTransport({ kind: 'yaml', text: kube.kubeconfig });
    this.api = new KubeSliceClient({ transport: this.transport });
    const triggers = new ClusterTriggers({
      syncQueue: this.syncQueue,
      registrations: this.registrations,
      logger,
    });
    this.cluster = new ClusterCache({
      transport: this.transport,
      logger,
      onForeignChange: triggers.onForeignChange,
      onNode: (change) => {
        triggers.onNode(change);
        this.nodeQueue.onNode(change);
      },
      onNodeCondition: this.nodeQueue.onNodeCondition,
    });
    this.syncWorker = new SyncWorker({
      connection: this.connection(),
      prefix: this.prefix,
      reconciler: new Reconciler({
        records: new SyncRecords({ redis, prefix: this.prefix }),
        cluster: this.cluster,
        api: this.api,
        logger,
      }),
      logger,
      backoff: { baseMs: 5, capMs: 50 },
      onStatus: this.nodeQueue.onStatus,
    });
    this.metrics = new NodeConditionMetrics(createMetricsRegistry('test'));
    const reconciler = new NodeConditionReconciler({
      records: new NodePublishState({ redis, prefix: this.prefix }),
      cluster: this.cluster,
      api: new KubeNodeStatusClient({ transport: this.transport }),
      metrics: this.metrics,
      logger,
    });
    this.nodeWorker = new NodeConditionWorker({
      connection: this.connection(),
      prefix: this.prefix,
      reconciler: {
        reconcile: async (node) => {
          const result = await reconciler.reconcile(node);
          this.evaluations.push({ node, result });
          return result;
        },
      },
      logger,
      backoff: { baseMs: 5, capMs: 50 },
    });
  }

  async start(): Promise<void> {
    await this.cluster.start();
    await this.nodeWorker.start();
    await this.syncWorker.start();
  }

  /** What the plugin-watcher does with a driver's message: register, store, enqueue. */
  async publish(key: SliceKey, inventory: DriverInventory): Promise<void> {
    if ((await this.registrations.get(key)).length === 0) {
      await this.registrations.add({ ...key, endpoint: ENDPOINT, version: 'v1.ResourcePublisher' });
    }
    const stored = await this.snapshots.store(key, ENDPOINT, inventory, new Date());
    if (stored.kind !== 'stored') throw new Error(`snapshot not stored: ${stored.kind}`);
    await this.syncQueue.enqueue(key, 'snapshot');
  }

  /** What the registration API does when a plugin goes, its slices kept for `graceMs`. */
  async remove(key: SliceKey, graceMs = 0): Promise<void> {
    await this.registrations.remove(key, { graceMs });
    await this.syncQueue.enqueue(key, 'removed');
  }

  /** Resolves once both queues have nothing waiting, running or retrying. */
  async idle(): Promise<void> {
    await waitFor(
      async () =>
        (await this.syncQueue.queue.getJobCountByTypes(
          'active',
          'waiting',
          'delayed',
          'prioritized',
        )) +
          (await this.nodeQueue.queue.getJobCountByTypes(
            'active',
            'waiting',
            'prioritized',
            'delayed',
          )) ===
        0,
      { description: 'both queues idle' },
    );
  }

  async close(): Promise<void> {
    await this.syncWorker.close();
    await this.nodeWorker.close();
    await this.nodeQueue.close();
    await this.syncQueue.close();
    await this.cluster.close();
    await this.api.close();
    this.transport.close();
    for (const connection of this.connections) connection.disconnect();
  }

  private connection(): Redis {
    const connection = createRedisConnection({ target: { kind: 'server', url: this.redisUrl } });
    this.connections.push(connection);
    return connection;
  }
}

describe('the DRAResourcesPublished Node condition, against Redis and the emulator', () => {
  const db = useRedisServer();
  let dir: string;
  let kube: RunningKubeEmulator;
  let syncer: Syncer;
  const gpuA = { node: 'node-a', driver: 'gpu.example.com' };
  const nicA = { node: 'node-a', driver: 'nic.example.com' };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'node-condition-'));
    kube = await startKubeEmulator({ port: 0, kubeconfigPath: join(dir, 'kubeconfig') });
    await createNode('node-a');
    syncer = new Syncer(db.server.url, kube);
    await syncer.start();
  });

  afterEach(async () => {
    await syncer.close();
    await kube.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function createNode(name: string): Promise<void> {
    await requestJson(kube.url, 'POST', NODES, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
    });
  }

  /** The Node's DRAResourcesPublished condition, as anyone reading the Node sees it. */
  async function condition(node: string): Promise<ConditionJson | undefined> {
    const json = (await requestJson(kube.url, 'GET', `${NODES}/${node}`)) as {
      status?: { conditions?: ConditionJson[] };
    };
    return json.status?.conditions?.find((c) => c.type === 'DRAResourcesPublished');
  }

  async function conditionBecomes(
    node: string,
    status: string,
    reason: string,
  ): Promise<ConditionJson> {
    return waitFor(
      async () => {
        const shown = await condition(node);
        return shown?.status === status && shown.reason === reason ? shown : undefined;
      },
      { description: `${node} ${status}/${reason}`, timeoutMs: 15_000 },
    );
  }

  /** PATCHes of `node`'s status: the condition's writes. */
  function conditionWrites(node: string): number {
    return kube.emulator
      .requestLog()
      .filter((e) => e.verb === 'patch' && e.resource === 'nodes/status' && e.name === node).length;
  }

  async function kubectl(...args: string[]): Promise<string> {
    const { stdout } = await run(
      '/usr/bin/kubectl',
      ['--kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 20_000 },
    );
    return stdout;
  }

  it('goes True once every driver of the node is published; kubectl shows it', async () => {
    await syncer.publish(gpuA, gpus('node-a', 2));
    await syncer.publish(nicA, gpus('node-a', 1));
    const shown = await conditionBecomes('node-a', 'True', 'Published');
    expect(shown.message).toBe('published: gpu.example.com, nic.example.com');
    expect(shown.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const node = parse(await kubectl('get', 'node', 'node-a', '-o', 'yaml')) as {
      status: { conditions: ConditionJson[] };
    };
    expect(node.status.conditions).toContainEqual(
      expect.objectContaining({
        type: 'DRAResourcesPublished',
        status: 'True',
        reason: 'Published',
        message: 'published: gpu.example.com, nic.example.com',
      }),
    );
    await syncer.idle();
    const counted = (await syncer.metrics.writes.get()).values;
    expect(counted.reduce((sum, v) => sum + v.value, 0)).toBe(conditionWrites('node-a'));
    expect(counted).toContainEqual(
      expect.objectContaining({ labels: { status: 'True', reason: 'Published' } }),
    );
  });

  it('goes False/Invalid naming the driver and the field, and True again when fixed', async () => {
    await syncer.publish(gpuA, gpus('node-a', 2));
    await syncer.publish(nicA, gpus('node-a', 1));
    const published = await conditionBecomes('node-a', 'True', 'Published');

    await syncer.publish(
      gpuA,
      gpus('node-a', 2, (i) => `GPU_${i}`),
    );
    const invalid = await conditionBecomes('node-a', 'False', 'Invalid');
    expect(invalid.message).toMatch(
      /^gpu\.example\.com: invalid: .*devices\[0\]\.name: Invalid value: "GPU_0"/,
    );
    expect(invalid.lastTransitionTime >= published.lastTransitionTime).toBe(true);

    await syncer.publish(gpuA, gpus('node-a', 3));
    await conditionBecomes('node-a', 'True', 'Published');
  });

  it('writes only transitions: more syncs and evaluations of a published node cost no Node write', async () => {
    await syncer.publish(gpuA, gpus('node-a', 2));
    await conditionBecomes('node-a', 'True', 'Published');
    await syncer.idle();
    const writes = conditionWrites('node-a');
    const evaluated = syncer.evaluations.length;

    // A changed inventory published into the same slice, and a resync: nothing new to tell, so
    // no evaluation is even asked for.
    await syncer.publish(gpuA, gpus('node-a', 4));
    await syncer.syncQueue.enqueue(gpuA, 'resync');
    await syncer.idle();
    expect(syncer.evaluations.length).toBe(evaluated);

    // An evaluation asked for anyway (a Node event, say) finds nothing to change.
    await syncer.nodeQueue.enqueue('node-a');
    await waitFor(() => syncer.evaluations.length > evaluated, {
      description: 'the evaluation asked for',
    });
    await syncer.idle();
    expect(syncer.evaluations.slice(evaluated).map((e) => e.result)).toEqual(['unchanged']);
    expect(conditionWrites('node-a')).toBe(writes);
  });

  it('goes False/NoPlugins when the last plugin goes, and leaves a node that never had one alone', async () => {
    await createNode('node-b');
    await syncer.publish(gpuA, gpus('node-a', 2));
    await conditionBecomes('node-a', 'True', 'Published');

    await syncer.remove(gpuA);
    const none = await conditionBecomes('node-a', 'False', 'NoPlugins');
    expect(none.message).toBe('no DRA driver is registered');

    // node-b appeared (its evaluation ran) and has no plugin: no condition is made up for it.
    await waitFor(() => syncer.evaluations.some((e) => e.node === 'node-b'), {
      description: "node-b's evaluation",
    });
    expect(await condition('node-b')).toBeUndefined();
    expect(conditionWrites('node-b')).toBe(0);
  });

  it('stays True through a driver restart within the removal grace: no Node write', async () => {
    await syncer.publish(gpuA, gpus('node-a', 2));
    await conditionBecomes('node-a', 'True', 'Published');
    await syncer.idle();
    const writes = conditionWrites('node-a');
    const evaluatedAfter = async (count: number): Promise<number> => {
      await waitFor(() => syncer.evaluations.length > count, { description: 'an evaluation' });
      await waitFor(
        async () => (await syncer.syncQueue.queue.getJobCountByTypes('active', 'waiting')) === 0,
        { description: 'the syncs done' },
      );
      return syncer.evaluations.length;
    };

    // The driver deregisters on SIGTERM: its slices stay for the grace (its withdrawal waits,
    // delayed), and the node is evaluated with it.
    await syncer.remove(gpuA, 60_000);
    const evaluated = await evaluatedAfter(syncer.evaluations.length);
    expect(syncer.cluster.keysOfNode('node-a')).toEqual([gpuA]);
    // Back, as the registration API registers a restarted driver.
    await syncer.registrations.add({
      ...gpuA,
      endpoint: ENDPOINT,
      version: 'v1.ResourcePublisher',
    });
    await syncer.syncQueue.enqueue(gpuA, 'registered');
    await evaluatedAfter(evaluated);

    expect(syncer.evaluations.slice(-2).map((e) => e.result)).toEqual(['unchanged', 'unchanged']);
    expect(await condition('node-a')).toMatchObject({ status: 'True', reason: 'Published' });
    expect(conditionWrites('node-a')).toBe(writes);
  });

  it('publishes the condition of a Node that appears after its drivers registered', async () => {
    const gpuC = { node: 'node-c', driver: 'gpu.example.com' };
    await syncer.publish(gpuC, gpus('node-c', 1));
    await waitFor(() => syncer.evaluations.find((e) => e.node === 'node-c'), {
      description: "node-c's first evaluation",
    });
    expect(syncer.evaluations.filter((e) => e.node === 'node-c').map((e) => e.result)).toEqual([
      'no-node',
    ]);

    await createNode('node-c');
    await conditionBecomes('node-c', 'True', 'Published');
  });

  it('rewrites a condition someone else changed, as its watch reports it', async () => {
    await syncer.publish(gpuA, gpus('node-a', 2));
    await conditionBecomes('node-a', 'True', 'Published');
    const response = await fetch(`${kube.url}${NODES}/node-a/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/strategic-merge-patch+json' },
      body: JSON.stringify({
        status: {
          conditions: [{ type: 'DRAResourcesPublished', status: 'False', reason: 'Meddling' }],
        },
      }),
    });
    expect(response.status).toBe(200);
    await conditionBecomes('node-a', 'True', 'Published');
  });
});

describe('node condition evaluations across replicas', () => {
  const db = useRedisServer();

  it('runs one evaluation of a node at a time, and exactly one follow-up for asks during it', async () => {
    const prefix = uniquePrefix('node-condition-replicas');
    const producer = createRedisConnection({ target: { kind: 'server', url: db.server.url } });
    const queue = new NodeConditionQueue({ connection: producer, prefix, logger });
    const connections = [producer];
    let running = 0;
    let mostAtOnce = 0;
    const evaluated: string[] = [];
    let firstStarted = (): void => undefined;
    const firstRunning = new Promise<void>((resolve) => {
      firstStarted = resolve;
    });
    let releaseFirst = (): void => undefined;
    const firstReleased = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const reconciler = {
      reconcile: async (node: string): Promise<NodeConditionResult> => {
        running++;
        mostAtOnce = Math.max(mostAtOnce, running);
        evaluated.push(node);
        if (evaluated.length === 1) {
          firstStarted();
          await firstReleased;
        }
        running--;
        return 'unchanged';
      },
    };
    const replicas = [1, 2, 3].map(() => {
      const connection = createRedisConnection({ target: { kind: 'server', url: db.server.url } });
      connections.push(connection);
      return new NodeConditionWorker({ connection, prefix, reconciler, logger, concurrency: 4 });
    });
    try {
      await Promise.all(replicas.map((r) => r.start()));
      await queue.enqueue('node-a');
      await firstRunning;
      // Syncs of the node's keys finish on every replica while it is evaluated.
      for (let i = 0; i < 5; i++) await queue.enqueue('node-a');
      releaseFirst();
      await waitFor(
        async () =>
          evaluated.length === 2 &&
          (await queue.queue.getJobCountByTypes('active', 'waiting', 'prioritized', 'delayed')) ===
            0,
        { description: 'the follow-up evaluation' },
      );
      expect(evaluated).toEqual(['node-a', 'node-a']);
      expect(mostAtOnce).toBe(1);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
      await queue.close();
      for (const connection of connections) connection.disconnect();
    }
  });
});
