import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { streamStateSchema, syncStatusSchema } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import { SyncQueue } from '@slicekeeper/queue';
import { RegistrationStore } from '@slicekeeper/state';
import { RedisServer, ServiceProcess, uniquePrefix, waitFor } from '@slicekeeper/testing';

const key = { node: 'node-a', driver: 'gpu.example.com' };

const inventory: DriverInventory = {
  pools: [
    {
      name: 'node-a',
      scope: { kind: 'node' },
      devices: Array.from({ length: 8 }, (_, i) => ({
        name: `gpu-${i}`,
        attributes: { model: { string: 'A100' }, index: { int: i } },
        capacity: { memory: { value: '80Gi' } },
      })),
    },
  ],
};

describe('restarting slicekeeper with unchanged drivers', () => {
  let redisServer: RedisServer;
  let redis: Redis;
  let kube: RunningKubeEmulator;
  let driver: DriverServer;
  let dir: string;
  const running: ServiceProcess[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'restart-'));
    redisServer = await RedisServer.start();
    redis = new Redis(redisServer.url);
    kube = await startKubeEmulator({ port: 0, kubeconfigPath: join(dir, 'kubeconfig') });
    await fetch(`${kube.url}/api/v1/nodes`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } }),
    });
    driver = new DriverServer({
      driverName: key.driver,
      endpoint: `unix://${join(dir, 'gpu.sock')}`,
      inventory,
    });
    await driver.start();
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.stop()));
    await driver.close();
    await kube.close();
    redis.disconnect();
    await redisServer.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function startServices(prefix: string): ServiceProcess[] {
    const common = {
      REDIS_URL: redisServer.url,
      REDIS_PREFIX: prefix,
      PROBE_HOST: '127.0.0.1',
      PROBE_PORT: '0',
      LOG_LEVEL: 'info',
    };
    const services = [
      new ServiceProcess({
        app: 'plugin-watcher',
        env: { ...common, WATCHER_MODE: 'node', NODE_NAME: 'node-a', PLUGIN_SOCKET_DIRS: dir },
      }),
      new ServiceProcess({
        app: 'slice-syncer',
        env: { ...common, KUBECONFIG: join(dir, 'kubeconfig') },
      }),
    ];
    running.push(...services);
    return services;
  }

  function sliceWrites(): number {
    return ['create', 'update', 'delete', 'patch'].reduce(
      (sum, verb) => sum + kube.emulator.count({ verb, resource: 'resourceslices' }),
      0,
    );
  }

  it('makes zero ResourceSlice writes', async () => {
    const prefix = uniquePrefix('restart');
    const keys = redisKeys(prefix);
    const store = new RegistrationStore({ redis, prefix });
    await store.add({
      ...key,
      endpoint: `unix://${join(dir, 'gpu.sock')}`,
      version: 'v1.ResourcePublisher',
    });

    const [watcher, syncer] = startServices(prefix);
    await Promise.all([watcher?.waitForLog('watching'), syncer?.waitForLog('started')]);
    await waitFor(
      async () => {
        const raw = await redis.get(keys.syncStatus(key));
        return raw !== null && syncStatusSchema.parse(JSON.parse(raw)).outcome === 'synced';
      },
      { description: 'the first publication' },
    );
    const published = sliceWrites();
    expect(published).toBe(1);

    await Promise.all(running.splice(0).map((p) => p.stop()));
    const restartedAt = new Date();
    const [watcher2, syncer2] = startServices(prefix);
    await Promise.all([watcher2?.waitForLog('watching'), syncer2?.waitForLog('started')]);
    // The new watcher has its stream again (a message received after the restart) ...
    await waitFor(
      async () => {
        const raw = await redis.get(keys.streamState(key));
        if (raw === null) return false;
        const state = streamStateSchema.parse(JSON.parse(raw));
        return (
          state.state === 'streaming' &&
          Date.parse(state.lastMessageAt ?? '') >= restartedAt.getTime()
        );
      },
      { description: 'the stream to be open again' },
    );
    // ... and a sync after the restart finds everything equal. An equal inventory owes no sync,
    // so one is asked for as the periodic resync would ask (its schedule survives the restart
    // in Redis and runs next in 10 minutes).
    const queue = new SyncQueue({ connection: redis, prefix });
    await queue.enqueue(key, 'resync');
    await queue.close();
    await waitFor(
      async () => {
        const raw = await redis.get(keys.syncStatus(key));
        return (
          raw !== null &&
          Date.parse(syncStatusSchema.parse(JSON.parse(raw)).finishedAt) >= restartedAt.getTime()
        );
      },
      { description: 'a sync after the restart' },
    );
    expect(sliceWrites()).toBe(published);
  });
});
