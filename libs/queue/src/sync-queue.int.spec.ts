import { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import { SYNC_QUEUE_NAME, queuePrefix } from '@slicekeeper/contracts';
import type { SyncJob } from '@slicekeeper/contracts';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';
import { createRedisConnection } from './redis-connection';
import { SyncQueue } from './sync-queue';

describe('SyncQueue', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(() => redis.stop());

  it('keeps one waiting job per key however often it is asked', async () => {
    const connection = createRedisConnection({ url: redis.url });
    const queue = new SyncQueue({ connection, prefix: uniquePrefix('dedup') });
    try {
      for (let i = 0; i < 50; i++)
        await queue.enqueue({ node: 'node-a', driver: 'gpu.example.com' }, 'snapshot');
      await queue.enqueue({ node: 'node-b', driver: 'gpu.example.com' }, 'snapshot');
      expect(await queue.queue.getWaitingCount()).toBe(2);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });

  it('runs exactly one follow-up when asked while the key is syncing', async () => {
    const prefix = uniquePrefix('follow-up');
    const connection = createRedisConnection({ url: redis.url });
    const workerConnection = createRedisConnection({ url: redis.url });
    const queue = new SyncQueue({ connection, prefix });
    const key = { node: 'node-a', driver: 'gpu.example.com' };
    const processed: string[] = [];
    let firstStarted = (): void => undefined;
    const firstRunning = new Promise<void>((resolve) => {
      firstStarted = resolve;
    });
    let releaseFirst = (): void => undefined;
    const firstReleased = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const worker = new Worker<SyncJob>(
      SYNC_QUEUE_NAME,
      async (job: Job<SyncJob>) => {
        processed.push(job.data.reason);
        if (processed.length === 1) {
          firstStarted();
          await firstReleased;
        }
      },
      { connection: workerConnection, prefix: queuePrefix(prefix), concurrency: 4 },
    );
    try {
      await queue.enqueue(key, 'snapshot');
      await firstRunning;
      // Three changes land while the first sync runs: they must yield one follow-up, not zero
      // (a plain jobId would drop them) and not three (and never a second concurrent sync).
      await queue.enqueue(key, 'janitor');
      await queue.enqueue(key, 'stream-lost');
      await queue.enqueue(key, 'resync');
      expect(processed).toEqual(['snapshot']);
      releaseFirst();
      await waitFor(() => processed.length === 2, { description: 'the follow-up sync' });
      await waitFor(
        async () => (await queue.queue.getJobCountByTypes('active', 'waiting', 'delayed')) === 0,
        { description: 'the queue to drain' },
      );
      expect(processed).toEqual(['snapshot', 'resync']);
    } finally {
      await worker.close();
      await queue.close();
      connection.disconnect();
      workerConnection.disconnect();
    }
  });
});
