import { Redis } from 'ioredis';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { redisKeys } from '@slicekeeper/state/testing';
import type { RedisKeys } from '@slicekeeper/state/testing';
import { KubeSliceClient } from '@slicekeeper/kube';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { RegistrationStore } from '@slicekeeper/state';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { SyncProcessor } from './sync-processor';
import { SyncerMetrics } from './syncer-metrics';

const logger = createLogger({ service: 'sync-processor-test', level: 'silent' });
const key = { node: '', driver: 'gpu.example.com' };
const context = { jobId: 'job-1', attempt: 1, reason: 'snapshot' } as const;

function snapshot(generation: number, devices: readonly string[] = ['a']): string {
  return JSON.stringify({
    generation,
    receivedAt: new Date().toISOString(),
    endpoint: 'unix:///run/driver.sock',
    inventory: {
      pools: [
        {
          name: 'fabric',
          scope: { kind: 'all-nodes' },
          devices: devices.map((name) => ({ name })),
        },
      ],
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
  let prefix: string;
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
  beforeEach(async () => {
    prefix = uniquePrefix('processor');
    keys = redisKeys(prefix);
    metrics = new SyncerMetrics(createMetricsRegistry('test'));
    processor = new SyncProcessor({ api, redis, prefix, logger, metrics });
    await new RegistrationStore({ redis, prefix }).add({
      ...key,
      endpoint: 'unix:///run/driver.sock',
      version: 'v1.ResourcePublisher',
    });
  });

  it("refuses to sync while another job holds the key's guard, and leaves that guard alone", async () => {
    await redis.set(keys.syncGuard(key), 'job-0', 'PX', 60_000);
    await redis.set(keys.snapshot(key), snapshot(1));
    await expect(processor.sync(key, context)).rejects.toMatchObject({ code: 'overlap' });
    expect((await metrics.overlaps.get()).values[0]?.value).toBe(1);
    expect(await redis.get(keys.syncGuard(key))).toBe('job-0');
    expect(await redis.get(keys.syncStatus(key))).toBeNull();
  });

  it("leaves published slices alone when a registration's sync finds no inventory yet", async () => {
    await redis.set(keys.snapshot(key), snapshot(1, ['a', 'b']));
    expect(await processor.sync(key, context)).toMatchObject({ outcome: 'synced' });
    const published = await api.listSlices(key);
    expect(published).toHaveLength(1);
    // Redis lost the snapshot (the driver registers again before its watcher re-streams).
    await redis.del(keys.snapshot(key));

    await expect(processor.sync(key, { ...context, reason: 'registered' })).resolves.toBe(
      undefined,
    );
    expect(await api.listSlices(key)).toEqual(published);
    expect(JSON.parse((await redis.get(keys.syncStatus(key))) ?? 'null')).toMatchObject({
      outcome: 'synced',
    });
    expect(await redis.exists(keys.syncGuard(key))).toBe(0);
    // Any other sync still takes a key without an inventory for a withdrawal (the watcher's wipe).
    expect(await processor.sync(key, { ...context, reason: 'stream-lost' })).toMatchObject({
      outcome: 'withdrawn',
    });
    expect(await api.listSlices(key)).toEqual([]);
  });

  const outcomes: {
    name: string;
    arrange: () => Promise<unknown>;
    /** The outcome recorded and returned, or the error thrown (retried). */
    expected: { outcome: string; error?: unknown } | RegExp;
  }[] = [
    {
      name: 'synced',
      arrange: () => redis.set(keys.snapshot(key), snapshot(1)),
      expected: { outcome: 'synced' },
    },
    {
      name: 'synced after Redis forgot its scripts',
      arrange: async () => {
        await redis.set(keys.snapshot(key), snapshot(1));
        await redis.script('FLUSH');
      },
      expected: { outcome: 'synced' },
    },
    {
      name: 'corrupt snapshot',
      arrange: () => redis.set(keys.snapshot(key), JSON.stringify({ generation: 'one' })),
      expected: { outcome: 'corrupt', error: expect.stringMatching(/corrupt snapshot/) as unknown },
    },
    {
      name: 'snapshot that is not JSON',
      arrange: () => redis.set(keys.snapshot(key), '{"generation":'),
      expected: { outcome: 'corrupt', error: expect.stringMatching(/corrupt snapshot/) as unknown },
    },
    {
      name: 'synced over a status that is not JSON',
      arrange: async () => {
        await redis.set(keys.snapshot(key), snapshot(1));
        await redis.set(keys.syncStatus(key), 'not json');
      },
      expected: { outcome: 'synced' },
    },
    {
      name: 'failed read',
      arrange: async () => {
        await redis.del(keys.registrations(key));
        await redis.set(keys.registrations(key), 'not a hash');
      },
      expected: /WRONGTYPE/,
    },
  ];
  it.each(outcomes)(
    "releases the key's guard after a sync: $name",
    async ({ arrange, expected }) => {
      await arrange();
      const sync = processor.sync(key, context);
      if (expected instanceof RegExp) await expect(sync).rejects.toThrow(expected);
      else await expect(sync).resolves.toMatchObject(expected);
      expect(await redis.exists(keys.syncGuard(key))).toBe(0);
    },
  );

  describe("planning from the slices the key's previous sync left", () => {
    const lists = () => kube.emulator.count({ verb: 'list', resource: 'resourceslices' });
    const published = async () =>
      (await api.listSlices(key)).flatMap((s) => (s.spec.devices ?? []).map((d) => d.name));
    const syncChange = async (
      on: SyncProcessor,
      generation: number,
      devices: string[],
      reason: 'snapshot' | 'resync' = 'snapshot',
    ) => {
      await redis.set(keys.snapshot(key), snapshot(generation, devices));
      return on.sync(key, { jobId: `job-${generation}`, attempt: 1, reason });
    };
    afterEach(async () => {
      for (const slice of await api.listSlices(key)) await api.deleteSlice(slice.metadata);
    });

    it('syncs the next change of its key without listing', async () => {
      await syncChange(processor, 1, ['a']);
      const before = lists();
      await expect(syncChange(processor, 2, ['a', 'b'])).resolves.toMatchObject({
        outcome: 'synced',
        writes: 1,
      });
      expect(lists()).toBe(before);
      expect(await published()).toEqual(['a', 'b']);
      const views = (await metrics.syncedSlices.get()).values;
      expect(views.find((v) => v.labels.result === 'recorded')?.value).toBe(1);
    });

    it('plans from what another replica recorded', async () => {
      const other = new SyncProcessor({ api, redis, prefix, logger });
      await syncChange(processor, 1, ['a']);
      const before = lists();
      await expect(syncChange(other, 2, ['a', 'b'])).resolves.toMatchObject({ writes: 1 });
      await expect(syncChange(processor, 3, ['b'])).resolves.toMatchObject({ writes: 1 });
      expect(lists()).toBe(before);
      expect(await published()).toEqual(['b']);
    });

    it('lists when a sync ran in between without recording what it left', async () => {
      await syncChange(processor, 1, ['a']);
      // A sync that took the guard and died before recording (its replica was killed).
      await redis.incr(keys.syncEpoch(key));
      const before = lists();
      await expect(syncChange(processor, 2, ['a', 'b'])).resolves.toMatchObject({ writes: 1 });
      expect(lists()).toBe(before + 1);
      expect(await published()).toEqual(['a', 'b']);
    });

    it('creates only from a list, so that a slice nobody recorded is not duplicated', async () => {
      await syncChange(processor, 1, ['a']);
      // Move to a cluster-scoped pool of another name: the old slice goes, a new one is created.
      const before = lists();
      await redis.set(
        keys.snapshot(key),
        JSON.stringify({
          ...JSON.parse(snapshot(2)),
          inventory: {
            pools: [{ name: 'other', scope: { kind: 'all-nodes' }, devices: [{ name: 'c' }] }],
          },
        }),
      );
      await expect(
        processor.sync(key, { jobId: 'job-2', attempt: 1, reason: 'snapshot' }),
      ).resolves.toMatchObject({ outcome: 'synced' });
      expect(lists()).toBe(before + 1);
      expect(await published()).toEqual(['c']);
    });

    it('lists again when a slice it remembers was deleted behind its back', async () => {
      await syncChange(processor, 1, ['a']);
      for (const slice of await api.listSlices(key)) await api.deleteSlice(slice.metadata);
      await expect(syncChange(processor, 2, ['a', 'b'])).resolves.toMatchObject({
        outcome: 'synced',
      });
      expect(await published()).toEqual(['a', 'b']);
      expect(await api.listSlices(key)).toHaveLength(1);
    });

    it('plans from the record again after a resync that changed nothing', async () => {
      await syncChange(processor, 1, ['a']);
      await syncChange(processor, 1, ['a'], 'resync');
      const before = lists();
      await expect(syncChange(processor, 2, ['a', 'b'])).resolves.toMatchObject({ writes: 1 });
      expect(lists()).toBe(before);
      expect(await published()).toEqual(['a', 'b']);
    });

    it('lists on every periodic resync, the safety net for changes it did not make', async () => {
      await syncChange(processor, 1, ['a']);
      const before = lists();
      await syncChange(processor, 1, ['a'], 'resync');
      await syncChange(processor, 1, ['a'], 'resync');
      expect(lists()).toBe(before + 2);
    });
  });
});
