import { Queue } from 'bullmq';
import type { JobsOptions } from 'bullmq';
import { Registry } from 'prom-client';
import { SYNC_JOB_NAME, SYNC_QUEUE_NAME, queuePrefix } from '@slicekeeper/contracts';
import type { SyncJob } from '@slicekeeper/contracts';
import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { QueueGauges } from './queue-gauges';

/** The time the gauges' clock shows, ms since the epoch. */
const NOW = Date.now();
const SECOND = 1000;

describe('queue gauges', () => {
  const db = useRedisServer();

  let queue: Queue<SyncJob>;
  let registry: Registry;
  beforeEach(() => {
    queue = new Queue<SyncJob>(SYNC_QUEUE_NAME, {
      connection: db.redis,
      prefix: queuePrefix(uniquePrefix('gauges')),
    });
    registry = new Registry();
    new QueueGauges(queue, registry, { now: () => NOW });
  });
  afterEach(() => queue.close());

  /** Adds a job created `ageMs` before {@link NOW}, as a producer would have. */
  async function add(node: string, ageMs: number, options: JobsOptions = {}): Promise<void> {
    await queue.add(
      SYNC_JOB_NAME,
      { node, driver: 'gpu.example.com', reason: 'snapshot' },
      { ...options, timestamp: NOW - ageMs },
    );
  }

  async function read(name: string): Promise<Record<string, number>> {
    const metric = await registry.getSingleMetric(name)?.get();
    return Object.fromEntries(
      (metric?.values ?? []).map(({ labels, value }) => [
        Object.values(labels).join(',') || 'value',
        value,
      ]),
    );
  }

  it('reads 0 when nothing waits', async () => {
    expect(await read('slicekeeper_queue_oldest_waiting_seconds')).toEqual({ value: 0 });
    expect(await read('slicekeeper_queue_prioritized_jobs')).toEqual({
      lifecycle: 0,
      firstPublish: 0,
      change: 0,
      check: 0,
    });
  });

  it('counts ready jobs by priority level, and ages the oldest behind younger, more urgent ones', async () => {
    // Next in line: lifecycle jobs of seconds ago. The oldest ready job is a check queued
    // behind them; a job delayed for later is older still, but not waiting to be taken.
    await add('delayed', 3600 * SECOND, { priority: 4, delay: 7200 * SECOND });
    await add('check-old', 300 * SECOND, { priority: 4 });
    await add('check-new', 200 * SECOND, { priority: 4 });
    await add('change', 100 * SECOND, { priority: 3 });
    await add('lifecycle-1', 10 * SECOND, { priority: 1 });
    await add('lifecycle-2', 5 * SECOND, { priority: 1 });

    expect(await read('slicekeeper_queue_oldest_waiting_seconds')).toEqual({ value: 300 });
    expect(await read('slicekeeper_queue_prioritized_jobs')).toEqual({
      lifecycle: 2,
      firstPublish: 0,
      change: 1,
      check: 2,
    });
    expect(await read('slicekeeper_queue_jobs')).toMatchObject({ prioritized: 5, delayed: 1 });
  });

  it('ages a waiting job without a priority too', async () => {
    // A job of a producer older than priorities, or one BullMQ put back after its replica died.
    await add('unprioritized', 600 * SECOND);
    await add('check', 300 * SECOND, { priority: 4 });

    expect(await read('slicekeeper_queue_oldest_waiting_seconds')).toEqual({ value: 600 });
    expect(await read('slicekeeper_queue_jobs')).toMatchObject({ waiting: 1, prioritized: 1 });
  });
});
