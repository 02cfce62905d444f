import { Redis } from 'ioredis';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { redisKeys } from '@slicekeeper/contracts';
import type { RedisKeys } from '@slicekeeper/contracts';
import { KubeSliceClient } from '@slicekeeper/kube';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { SyncProcessor } from './sync-processor';
import { SyncerMetrics } from './syncer-metrics';

const logger = createLogger({ service: 'sync-processor-test', level: 'silent' });
const key = { node: '', driver: 'gpu.example.com' };
const context = { jobId: 'job-1', attempt: 1, reason: 'snapshot' } as const;

function snapshot(generation: number): string {
  return JSON.stringify({
    generation,
    receivedAt: new Date().toISOString(),
    endpoint: 'unix:///run/driver.sock',
    inventory: {
      pools: [{ name: 'fabric', scope: { kind: 'all-nodes' }, devices: [{ name: 'a' }] }],
    },
  });
}

describe('SyncProcessor', () => {
  let server: RedisServer;
  let redis: Redis;
  let kube: RunningKubeEmulator;
  let api: KubeSliceClient;
  let keys: RedisKeys;
  let metrics: SyncerMetrics;
  let processor: SyncProcessor;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
    kube = await startKubeEmulator({ port: 0 });
    api = new KubeSliceClient({ kubeconfig: { kind: 'yaml', text: kube.kubeconfig } });
  });
  afterAll(async () => {
    await api.close();
    await kube.close();
    redis.disconnect();
    await server.stop();
  });
  beforeEach(() => {
    const prefix = uniquePrefix('processor');
    keys = redisKeys(prefix);
    metrics = new SyncerMetrics(createMetricsRegistry('test'));
    processor = new SyncProcessor({ api, redis, prefix, logger, metrics });
  });

  it("refuses to sync while another job holds the key's guard, and leaves that guard alone", async () => {
    await redis.set(keys.syncGuard(key), 'job-0', 'PX', 60_000);
    await redis.set(keys.snapshot(key), snapshot(1));
    await expect(processor.sync(key, context)).rejects.toMatchObject({ code: 'overlap' });
    expect((await metrics.overlaps.get()).values[0]?.value).toBe(1);
    expect(await redis.get(keys.syncGuard(key))).toBe('job-0');
    expect(await redis.get(keys.syncStatus(key))).toBeNull();
  });

  const outcomes: {
    name: string;
    arrange: () => Promise<unknown>;
    expected: string | RegExp | undefined;
  }[] = [
    {
      name: 'synced',
      arrange: () => redis.set(keys.snapshot(key), snapshot(1)),
      expected: undefined,
    },
    {
      name: 'synced after Redis forgot its scripts',
      arrange: async () => {
        await redis.set(keys.snapshot(key), snapshot(1));
        await redis.script('FLUSH');
      },
      expected: undefined,
    },
    {
      name: 'corrupt snapshot',
      arrange: () => redis.set(keys.snapshot(key), JSON.stringify({ generation: 'one' })),
      expected: /corrupt snapshot/,
    },
    {
      name: 'failed read',
      arrange: () => redis.set(keys.registrations(key), 'not a hash'),
      expected: /WRONGTYPE/,
    },
  ];
  it.each(outcomes)(
    "releases the key's guard after a sync: $name",
    async ({ arrange, expected }) => {
      await arrange();
      const sync = processor.sync(key, context);
      if (expected === undefined) await expect(sync).resolves.toMatchObject({ outcome: 'synced' });
      else await expect(sync).rejects.toThrow(expected);
      expect(await redis.exists(keys.syncGuard(key))).toBe(0);
    },
  );
});
