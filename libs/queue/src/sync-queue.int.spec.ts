import { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { RedisClient } from './redis-connection';
import { SYNC_QUEUE_NAME, queuePrefix, syncPriority } from '@slicekeeper/contracts';
import type { SyncJob, SyncReason } from '@slicekeeper/contracts';
import { uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { createRedisConnection } from './redis-connection';
import { SyncQueue } from './sync-queue';

const DRIVER = 'gpu.example.com';

/** A job as the worker took it. */
interface Taken {
  node: string;
  reason: SyncReason;
  priority: number;
}

/** A promise and the function that resolves it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('SyncQueue', () => {
  const db = useRedisServer();

  /**
   * One test's queue (its own prefix), with producers and workers as replicas would have them;
   * the workers record the order they took jobs in.
   */
  class Harness {
    readonly queue: SyncQueue;
    readonly taken: Taken[] = [];
    private readonly prefix: string;
    private readonly connections: RedisClient[] = [];
    private readonly producers: SyncQueue[] = [];
    private readonly workers: Worker<SyncJob>[] = [];

    constructor(name: string) {
      this.prefix = uniquePrefix(name);
      this.queue = this.addProducer();
    }

    /** Another producer of the same queue, on a connection of its own. */
    addProducer(): SyncQueue {
      const producer = new SyncQueue({ connection: this.connect(), prefix: this.prefix });
      this.producers.push(producer);
      return producer;
    }

    /** Asks for a sync of each of `count` keys named `<name>-<i>`. */
    async enqueueMany(name: string, reason: SyncReason, count: number): Promise<void> {
      for (let i = 0; i < count; i++) await this.queue.enqueue(key(`${name}-${i}`), reason);
    }

    /**
     * Starts a worker taking `concurrency` jobs at a time. `process` runs each job after it was
     * recorded; a job whose `process` throws is retried after `backoffMs` (at once by default).
     */
    startWorker(
      process: (job: Job<SyncJob>) => void | Promise<void> = () => undefined,
      concurrency = 1,
      backoffMs = 0,
    ): void {
      const worker = new Worker<SyncJob>(
        SYNC_QUEUE_NAME,
        async (job: Job<SyncJob>) => {
          this.taken.push({ node: job.data.node, reason: job.data.reason, priority: job.priority });
          await process(job);
        },
        {
          connection: this.connect(),
          prefix: queuePrefix(this.prefix),
          concurrency,
          settings: { backoffStrategy: () => backoffMs },
        },
      );
      this.workers.push(worker);
    }

    /** Waits until the workers took `count` jobs and the queue has nothing left. */
    async drained(count: number): Promise<void> {
      await waitFor(() => this.taken.length >= count, { description: `${count} jobs taken` });
      await waitFor(
        async () =>
          (await this.queue.queue.getJobCountByTypes(
            'active',
            'waiting',
            'prioritized',
            'delayed',
          )) === 0,
        { description: 'the queue to drain' },
      );
    }

    nodesTaken(): string[] {
      return this.taken.map(({ node }) => node);
    }

    async close(): Promise<void> {
      await Promise.all(this.workers.map((worker) => worker.close()));
      await Promise.all(this.producers.map((producer) => producer.close()));
      for (const connection of this.connections) connection.disconnect();
    }

    private connect(): RedisClient {
      const connection = createRedisConnection({ target: { kind: 'server', url: db.server.url } });
      this.connections.push(connection);
      return connection;
    }
  }

  const key = (node: string) => ({ node, driver: DRIVER });

  let harness: Harness;
  afterEach(() => harness.close());

  /**
   * Starts the harness's worker and has it take a `first` sync of node-a, which runs until
   * `release` is called, then ends as `outcome` says (a failure is retried at once).
   */
  async function holdFirstJob(
    first: SyncReason,
    outcome: 'completes' | 'fails' = 'completes',
  ): Promise<{ release: () => void }> {
    const running = deferred();
    const released = deferred();
    harness.startWorker(async () => {
      if (harness.taken.length > 1) return;
      running.resolve();
      await released.promise;
      if (outcome === 'fails') throw new Error('conflict');
    });
    await harness.queue.enqueue(key('node-a'), first);
    await running.promise;
    return { release: released.resolve };
  }

  it('keeps one waiting job per key however often it is asked', async () => {
    harness = new Harness('dedup');
    for (let i = 0; i < 50; i++) await harness.queue.enqueue(key('node-a'), 'snapshot');
    await harness.queue.enqueue(key('node-b'), 'snapshot');
    expect(await harness.queue.queue.getJobCountByTypes('waiting', 'prioritized')).toBe(2);
  });

  it('runs exactly one follow-up when asked while the key is syncing', async () => {
    harness = new Harness('follow-up');
    const first = await holdFirstJob('snapshot');
    // Three changes land while the first sync runs: they must yield one follow-up, not zero
    // (a plain jobId would drop them) and not three (and never a second concurrent sync).
    await harness.queue.enqueue(key('node-a'), 'janitor');
    await harness.queue.enqueue(key('node-a'), 'stream-lost');
    await harness.queue.enqueue(key('node-a'), 'resync');
    expect(harness.taken).toHaveLength(1);
    first.release();
    await harness.drained(2);
    expect(harness.taken.map(({ reason }) => reason)).toEqual(['snapshot', 'resync']);
  });

  it.each<[level: string, urgent: SyncReason, backlog: SyncReason]>([
    ['lifecycle before checks', 'stream-lost', 'resync'],
    ['lifecycle before first publishes', 'removed', 'first-snapshot'],
    ['first publish before changes', 'first-snapshot', 'snapshot'],
    ['change before checks', 'slice-changed', 'janitor'],
  ])('takes %s: a %s key before a backlog of %s keys', async (_level, urgent, backlog) => {
    harness = new Harness('backlog');
    await harness.enqueueMany('backlog', backlog, 30);
    await harness.queue.enqueue(key('urgent'), urgent);
    harness.startWorker();
    await harness.drained(31);
    expect(harness.taken[0]).toEqual({
      node: 'urgent',
      reason: urgent,
      priority: syncPriority(urgent),
    });
  });

  it('drains a mixed backlog lifecycle first, then first publishes, changes and checks', async () => {
    harness = new Harness('mixed');
    const reasons: SyncReason[] = ['resync', 'snapshot', 'first-snapshot', 'unreachable'];
    for (let round = 0; round < 5; round++) {
      for (const reason of reasons) {
        await harness.queue.enqueue(key(`${reason}-${round}`), reason);
      }
    }
    harness.startWorker();
    await harness.drained(20);
    expect(harness.taken.map(({ reason }) => reason)).toEqual(
      [...reasons].reverse().flatMap((reason) => Array<SyncReason>(5).fill(reason)),
    );
    // Within a level, first asked, first taken.
    expect(harness.nodesTaken().slice(0, 5)).toEqual(
      [0, 1, 2, 3, 4].map((i) => `unreachable-${i}`),
    );
  });

  it('takes a waiting resync at lifecycle priority once it absorbed a stream-lost add', async () => {
    harness = new Harness('raise-waiting');
    await harness.enqueueMany('backlog', 'resync', 20);
    await harness.queue.enqueue(key('node-a'), 'resync');
    await harness.queue.enqueue(key('node-a'), 'stream-lost');
    expect(await harness.queue.queue.getJobCountByTypes('prioritized')).toBe(21);
    harness.startWorker();
    await harness.drained(21);
    // One sync of node-a (the waiting job absorbed the add), before every resync queued ahead.
    expect(harness.taken[0]).toEqual({ node: 'node-a', reason: 'resync', priority: 1 });
    expect(harness.nodesTaken().filter((node) => node === 'node-a')).toHaveLength(1);
  });

  it('runs a delayed resync at once, and first, once it absorbed a stream-lost add', async () => {
    harness = new Harness('raise-delayed');
    await harness.queue.enqueue(key('node-a'), 'resync', 3_600_000);
    await harness.enqueueMany('backlog', 'resync', 20);
    await harness.queue.enqueue(key('node-a'), 'stream-lost');
    harness.startWorker();
    await harness.drained(21);
    expect(harness.taken[0]).toEqual({ node: 'node-a', reason: 'resync', priority: 1 });
  });

  it('runs the follow-up of a running sync at the most urgent priority it absorbed', async () => {
    harness = new Harness('raise-follow-up');
    const first = await holdFirstJob('snapshot');
    await harness.enqueueMany('backlog', 'resync', 20);
    // BullMQ keeps only the last add's options for the follow-up: a resync's priority.
    await harness.queue.enqueue(key('node-a'), 'stream-lost');
    await harness.queue.enqueue(key('node-a'), 'resync');
    first.release();
    await harness.drained(22);
    expect(harness.taken.slice(0, 2)).toEqual([
      { node: 'node-a', reason: 'snapshot', priority: 3 },
      { node: 'node-a', reason: 'resync', priority: 1 },
    ]);
  });

  it('runs the follow-up of a running sync at once when a spread resync was asked last', async () => {
    harness = new Harness('follow-up-delay');
    const first = await holdFirstJob('snapshot');
    await harness.queue.enqueue(key('node-a'), 'snapshot');
    await harness.queue.enqueue(key('node-a'), 'resync', 3_600_000);
    first.release();
    await harness.drained(2);
    expect(harness.taken).toEqual([
      { node: 'node-a', reason: 'snapshot', priority: 3 },
      { node: 'node-a', reason: 'resync', priority: 3 },
    ]);
  });

  it('retries a failed sync at the priority of the add it absorbed while running', async () => {
    harness = new Harness('raise-retry');
    const first = await holdFirstJob('resync', 'fails');
    await harness.enqueueMany('backlog', 'resync', 20);
    await harness.queue.enqueue(key('node-a'), 'unreachable');
    first.release();
    await harness.drained(23);
    // The retry reads the news the follow-up was stored for; the follow-up still follows it.
    expect(harness.taken.slice(0, 3)).toEqual([
      { node: 'node-a', reason: 'resync', priority: 4 },
      { node: 'node-a', reason: 'resync', priority: 1 },
      { node: 'node-a', reason: 'unreachable', priority: 1 },
    ]);
  });

  it('cuts a backoff short for news, and leaves it alone for a resync or the janitor', async () => {
    harness = new Harness('backoff');
    harness.startWorker(
      () => {
        if (harness.taken.length === 1) throw new Error('conflict');
      },
      1,
      3_600_000,
    );
    await harness.queue.enqueue(key('node-a'), 'snapshot');
    const backoff = await waitFor(
      async () => {
        const delayed = await harness.queue.queue.getDelayed();
        return delayed.length === 1 ? delayed.map(({ id, delay }) => ({ id, delay })) : undefined;
      },
      { description: 'the failed sync to wait out its backoff' },
    );
    expect(backoff).toEqual([{ id: expect.any(String) as string, delay: 3_600_000 }]);
    await harness.queue.enqueue(key('node-a'), 'resync');
    await harness.queue.enqueue(key('node-a'), 'janitor');
    const after = await harness.queue.queue.getDelayed();
    expect(after.map(({ id, delay }) => ({ id, delay }))).toEqual(backoff);

    await harness.queue.enqueue(key('node-a'), 'snapshot');
    await harness.drained(2);
    expect(harness.taken.map(({ reason }) => reason)).toEqual(['snapshot', 'snapshot']);
  });

  it('retries a failed sync at its own priority, before the backlog', async () => {
    harness = new Harness('retry');
    await harness.enqueueMany('backlog', 'snapshot', 20);
    await harness.queue.enqueue(key('node-a'), 'first-snapshot');
    let failed = false;
    harness.startWorker((job) => {
      if (job.data.node !== 'node-a' || failed) return;
      failed = true;
      throw new Error('conflict');
    });
    await harness.drained(22);
    expect(harness.taken.slice(0, 2)).toEqual([
      { node: 'node-a', reason: 'first-snapshot', priority: 2 },
      { node: 'node-a', reason: 'first-snapshot', priority: 2 },
    ]);
  });

  it('syncs each key one at a time across replicas, and once more after its last add', async () => {
    harness = new Harness('replicas');
    const producers = [harness.queue, harness.addProducer()];
    const nodes = ['node-a', 'node-b', 'node-c'];
    const reasons: SyncReason[] = [
      'snapshot',
      'stream-lost',
      'resync',
      'first-snapshot',
      'janitor',
    ];
    // One clock orders adds and syncs: a sync that starts after an add was asked for reads its
    // news (a producer writes the news before it asks). An add may return after that sync
    // started: a resync asked while the key's job waits is dropped, and the job may start while
    // the add looks.
    let clock = 0;
    const lastAdd = new Map<string, number>();
    const lastStart = new Map<string, number>();
    const running = new Set<string>();
    const overlapping: string[] = [];
    const sync = async (job: Job<SyncJob>): Promise<void> => {
      const { node } = job.data;
      if (running.has(node)) overlapping.push(node);
      running.add(node);
      lastStart.set(node, ++clock);
      // Let the other jobs in flight, on both workers, move meanwhile.
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      running.delete(node);
    };
    harness.startWorker(sync, 4);
    harness.startWorker(sync, 4);
    await Promise.all(
      producers.map(async (producer, p) => {
        for (let i = 0; i < 60; i++) {
          const node = nodes[(i + p) % nodes.length] ?? 'node-a';
          const asked = ++clock;
          await producer.enqueue(key(node), reasons[(i * 7 + p) % reasons.length] ?? 'snapshot');
          lastAdd.set(node, asked);
        }
      }),
    );
    await harness.drained(0);
    expect(overlapping).toEqual([]);
    for (const node of nodes) {
      expect(lastStart.get(node)).toBeGreaterThan(lastAdd.get(node) ?? Infinity);
    }
  });

  it('enqueues, and raises what it asks for, after Redis forgot its scripts', async () => {
    harness = new Harness('noscript');
    await harness.enqueueMany('backlog', 'resync', 10);
    await harness.queue.enqueue(key('node-a'), 'resync');
    await db.redis.script('FLUSH');
    await harness.queue.enqueue(key('node-a'), 'stream-lost');
    await harness.queue.enqueue(key('node-b'), 'removed');
    harness.startWorker();
    await harness.drained(12);
    expect(harness.nodesTaken().slice(0, 2)).toEqual(['node-a', 'node-b']);
  });
});
