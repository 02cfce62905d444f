import type { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { SYNC_PRIORITIES } from '@slicekeeper/contracts';
import { oldestReadyJobTimestamp } from '@slicekeeper/queue';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';

/**
 * The sync queue's gauges: jobs by state, prioritized jobs by priority level, and the age of the
 * oldest job waiting to be taken. Every sync job has a priority, so the jobs ready to run are
 * nearly all in the `prioritized` state; `waiting` holds the few without one (jobs of a replica
 * that died, put back by BullMQ, and jobs of producers older than priorities). Each is read from
 * the queue when scraped.
 */
export class QueueGauges {
  readonly jobs: Gauge<'state'>;
  readonly prioritizedJobs: Gauge<'priority'>;
  readonly oldestWaiting: Gauge;

  /** @param clock - what the oldest job's age is measured against. @defaultValue systemClock */
  constructor(queue: Queue, registry: Registry, clock: Pick<Clock, 'now'> = systemClock) {
    this.jobs = new Gauge({
      name: 'slicekeeper_queue_jobs',
      help: 'Sync jobs by state.',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const counts = await queue.getJobCounts(
          'waiting',
          'active',
          'delayed',
          'failed',
          'prioritized',
        );
        for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
      },
    });
    this.prioritizedJobs = new Gauge({
      name: 'slicekeeper_queue_prioritized_jobs',
      help:
        'Sync jobs ready to run, by priority level (taken in this order: lifecycle, firstPublish, ' +
        'change, check). A backlog of checks alone is harmless; one of lifecycle jobs is not.',
      labelNames: ['priority'],
      registers: [registry],
      async collect() {
        const counts = await queue.getCountsPerPriority(Object.values(SYNC_PRIORITIES));
        for (const [priority, level] of Object.entries(SYNC_PRIORITIES)) {
          this.set({ priority }, counts[level] ?? 0);
        }
      },
    });
    this.oldestWaiting = new Gauge({
      name: 'slicekeeper_queue_oldest_waiting_seconds',
      help:
        'Age of the oldest sync job waiting to be taken, at any priority. Alert when it keeps ' +
        'growing: syncers fall behind.',
      registers: [registry],
      async collect() {
        const oldest = await oldestReadyJobTimestamp(queue, Object.values(SYNC_PRIORITIES));
        this.set(oldest === undefined ? 0 : Math.max(0, (clock.now() - oldest) / 1000));
      },
    });
  }
}
