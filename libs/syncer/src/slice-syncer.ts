import { Queue, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { SYNC_QUEUE_NAME, queuePrefix, syncJobSchema } from '@slicekeeper/contracts';
import type { SyncJob } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import { retryDelayMs } from './backoff';
import type { BackoffPolicy } from './backoff';
import type { Reconciler } from './reconciler';

export interface SliceSyncerOptions {
  /** A dedicated connection: the worker blocks on it while waiting for jobs. */
  connection: Redis;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  reconciler: Pick<Reconciler, 'reconcile'>;
  logger: Logger;
  /** Keys synced at once by this replica. @defaultValue 8 */
  concurrency?: number;
  /**
   * How long a job's lock lasts without renewal, ms. A replica that dies (SIGKILL) holds its jobs
   * this long at most before another replica takes them over. @defaultValue 5000
   */
  lockDurationMs?: number;
  /** How often stalled jobs (of dead replicas) are looked for, ms. @defaultValue 2000 */
  stalledIntervalMs?: number;
  /** Registers queue gauges (jobs by state, oldest waiting job) when given. */
  registry?: Registry;
  /** Injected for tests. @defaultValue Math.random */
  random?: () => number;
  backoff?: BackoffPolicy;
}

/**
 * The BullMQ worker of the sync queue: one replica of the slice-syncer. Transient failures are
 * retried with full-jitter backoff for ever (a key is never left stale); a 429 pauses the whole
 * queue, across replicas, for the server's Retry-After; a job of a dead replica is taken over
 * after the lock duration.
 */
export class SliceSyncer {
  private readonly worker: Worker<SyncJob>;
  private readonly queue: Queue<SyncJob>;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: SliceSyncerOptions) {
    const prefix = queuePrefix(options.prefix ?? 'sk');
    const random = options.random ?? Math.random;
    this.queue = new Queue<SyncJob>(SYNC_QUEUE_NAME, { connection: options.connection, prefix });
    this.worker = new Worker<SyncJob>(SYNC_QUEUE_NAME, (job) => this.process(job), {
      connection: options.connection,
      prefix,
      autorun: false,
      concurrency: options.concurrency ?? 8,
      lockDuration: options.lockDurationMs ?? 5000,
      stalledInterval: options.stalledIntervalMs ?? 2000,
      // A stalled job is one whose replica died: run it again, however often that happens.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      settings: {
        backoffStrategy: (attemptsMade, _type, error) =>
          retryDelayMs(attemptsMade, error, random, options.backoff),
      },
    });
    this.worker.on('error', (error) => {
      options.logger.error({ err: errorMessage(error) }, 'worker error');
    });
    if (options.registry !== undefined) this.registerGauges(options.registry);
  }

  /** Starts taking jobs. */
  start(): void {
    void this.worker.run().catch((error: unknown) => {
      this.options.logger.error({ err: errorMessage(error) }, 'worker stopped');
    });
  }

  /** Stops taking jobs, waits for the running ones, and closes. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.worker.close();
      await this.queue.close();
    })();
    return this.closing;
  }

  private async process(job: Job<SyncJob>): Promise<void> {
    const parsed = syncJobSchema.safeParse(job.data);
    if (!parsed.success) {
      // Retrying a job that breaks the contract cannot help; the resync covers its key if any.
      this.options.logger.error(
        { jobId: job.id, err: parsed.error.message },
        'malformed job dropped',
      );
      return;
    }
    const { node, driver, reason } = parsed.data;
    const { retry } = await this.options.reconciler.reconcile(
      { node, driver },
      { jobId: job.id ?? `${node}/${driver}`, attempt: job.attemptsMade + 1, reason },
    );
    if (retry === undefined) return;
    if (retry.code === 'throttled' && retry.retryAfterMs !== undefined) {
      // The API server asked everyone to slow down: pause the queue for all replicas.
      await this.queue.rateLimit(retry.retryAfterMs);
      throw Worker.RateLimitError();
    }
    // BullMQ retries it with `retryDelayMs`'s backoff.
    throw retry;
  }

  private registerGauges(registry: Registry): void {
    const queue = this.queue;
    new Gauge({
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
    new Gauge({
      name: 'slicekeeper_queue_oldest_waiting_seconds',
      help: 'Age of the oldest waiting sync job. Alert when it keeps growing: syncers fall behind.',
      registers: [registry],
      async collect() {
        const [oldest] = await queue.getWaiting(0, 0);
        this.set(oldest === undefined ? 0 : Math.max(0, (Date.now() - oldest.timestamp) / 1000));
      },
    });
  }
}
