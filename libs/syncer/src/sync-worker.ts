import type { EventEmitter } from 'node:events';
import { UnrecoverableError, Worker } from 'bullmq';
import type { Job, Queue } from 'bullmq';
import {
  MAINTENANCE_JOB_OPTIONS,
  createMaintenanceQueue,
  createQueueWorker,
  createSyncQueue,
  redisHealth,
} from '@slicekeeper/queue';
import type { RedisClient } from '@slicekeeper/queue';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import {
  MAINTENANCE_QUEUE_NAME,
  SYNC_QUEUE_NAME,
  maintenanceJobs,
  syncJobSchema,
} from '@slicekeeper/contracts';
import type { MaintenanceJob, SliceKey, SyncJob, SyncStatus } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import { QueueGauges } from './queue-gauges';
import { retryingWorker } from './retrying-worker';
import { RetryLater } from './backoff';
import type { BackoffPolicy } from './backoff';
import type { Maintenance } from './maintenance';
import type { ReconcileResult, Reconciler } from './reconciler';

/** The periodic work a replica takes part in, see {@link SyncWorkerOptions.maintenance}. */
export interface MaintenanceScheduleOptions {
  /**
   * A dedicated connection for the maintenance queue and its worker. When it is ready again
   * after Redis restarted (perhaps empty), the schedulers are created again.
   */
  connection: RedisClient;
  /** What the jobs run. The resync is scheduled every `resyncIntervalMs`, the interval it spreads over. */
  jobs: Pick<Maintenance, 'resync' | 'janitor' | 'resyncIntervalMs'>;
  /** How often the janitor looks for slices of removed or unknown keys, ms. @defaultValue 60000 */
  janitorIntervalMs?: number;
}

export interface SyncWorkerOptions {
  /** The worker's connection; BullMQ blocks on a copy of it while waiting for jobs. */
  connection: RedisClient;
  /**
   * The process's sync Queue (`SyncQueue.queue`), for rate limits and gauges: one Queue object
   * per queue per process. Closed by its owner. Without it the worker opens one of its own.
   */
  queue?: Queue<SyncJob>;
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
  /** Registers the sync queue's gauges (jobs by state, oldest waiting job) when given. */
  registry?: Registry;
  /** Injected for tests. @defaultValue Math.random */
  random?: () => number;
  backoff?: BackoffPolicy;
  /**
   * The resync and the janitor, run by job schedulers on a queue of their own (a scheduler's
   * always-delayed job in the sync queue would count in its gauges and in every "queue idle"
   * check). Every replica takes part; each run happens on one. Without it this replica only syncs.
   */
  maintenance?: MaintenanceScheduleOptions;
  /**
   * Called with a status a sync recorded when it tells something new (`ReconcileResult.news`):
   * the node condition follows outcomes from here. Must not throw.
   */
  onStatus?: (key: SliceKey, status: SyncStatus) => void;
}

/**
 * Everything BullMQ in the slice-syncer: the worker of the sync queue (one replica of the
 * syncer) and the job schedulers and worker of the maintenance queue.
 *
 * A sync's outcome decides what BullMQ does with its job: a transient failure is retried with
 * full-jitter backoff for ever (a key is never left stale); a 429 pauses the whole queue, across
 * replicas, for the server's Retry-After; a terminal error fails the job without a retry; a job
 * of a dead replica is taken over after the lock duration.
 */
export class SyncWorker {
  private readonly worker: Worker<SyncJob>;
  private readonly queue: Queue<SyncJob>;
  private readonly maintenance:
    | { queue: Queue; worker: Worker; options: MaintenanceScheduleOptions }
    | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: SyncWorkerOptions) {
    const { logger } = options;
    const { prefix } = options;
    this.queue = options.queue ?? createSyncQueue({ connection: options.connection, prefix });
    this.worker = retryingWorker<SyncJob>(SYNC_QUEUE_NAME, 'worker', (job) => this.sync(job), {
      ...options,
      concurrency: options.concurrency ?? 8,
    });

    if (options.maintenance !== undefined) {
      const { connection } = options.maintenance;
      const worker = createQueueWorker(MAINTENANCE_QUEUE_NAME, (job: Job) => this.maintain(job), {
        connection,
        prefix,
        concurrency: 1,
        // A run may take a while (a resync enqueues every key); BullMQ's defaults.
        lockDurationMs: 30_000,
        stalledIntervalMs: 30_000,
      });
      worker.on('error', (error) => {
        // Unless routed to the process's outage log (`errorSources`).
        if (worker.listenerCount('error') > 1) return;
        logger.error({ err: errorMessage(error) }, 'maintenance worker error');
      });
      // Not retried: the next run does the same work.
      worker.on('failed', (job, error) => {
        logger.warn({ job: job?.name, err: errorMessage(error) }, 'maintenance run failed');
      });
      this.maintenance = {
        queue: createMaintenanceQueue({ connection, prefix }),
        worker,
        options: options.maintenance,
      };
    }
    if (options.registry !== undefined) new QueueGauges(this.queue, options.registry);
  }

  /**
   * Starts taking sync jobs, creates the maintenance schedulers and starts taking their jobs.
   * The schedulers live in Redis: when Redis comes back after a restart (perhaps empty), they
   * are created again, or the janitor and the resync would stop until a replica restarts.
   */
  async start(): Promise<void> {
    this.run(this.worker, 'worker stopped');
    if (this.maintenance === undefined) return;
    await this.upsertSchedulers();
    redisHealth(this.maintenance.options.connection).on('ready', this.onRedisReady);
    this.run(this.maintenance.worker, 'maintenance worker stopped');
  }

  /**
   * The BullMQ objects whose errors are their connection's, for the process's outage log
   * (`RedisConnections.addErrorSources`): nothing then reaches stderr.
   */
  get errorSources(): readonly EventEmitter[] {
    const own = this.options.queue === undefined ? [this.queue] : [];
    const maintenance =
      this.maintenance === undefined ? [] : [this.maintenance.worker, this.maintenance.queue];
    return [this.worker, ...own, ...maintenance];
  }

  /** Stops taking jobs, waits for the running ones, and closes. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.maintenance !== undefined) {
        redisHealth(this.maintenance.options.connection).off('ready', this.onRedisReady);
      }
      await Promise.all([this.worker.close(), this.maintenance?.worker.close()]);
      await Promise.all([
        this.options.queue === undefined ? this.queue.close() : undefined,
        this.maintenance?.queue.close(),
      ]);
    })();
    return this.closing;
  }

  private run(worker: Worker, stopped: string): void {
    void worker.run().catch((error: unknown) => {
      this.options.logger.error({ err: errorMessage(error) }, stopped);
    });
  }

  private async sync(job: Job<SyncJob>): Promise<void> {
    const { logger } = this.options;
    const parsed = syncJobSchema.safeParse(job.data);
    if (!parsed.success) {
      // Retrying a job that breaks the contract cannot help; the resync covers its key if any.
      logger.error({ jobId: job.id, err: parsed.error.message }, 'malformed job dropped');
      return;
    }
    const { node, driver, reason } = parsed.data;
    const jobId = job.id ?? `${node}/${driver}`;
    const attempt = job.attemptsMade + 1;
    let result: ReconcileResult;
    try {
      result = await this.options.reconciler.reconcile(
        { node, driver },
        { jobId, attempt, reason },
      );
    } catch (error) {
      // Unexpected (Redis unreachable, a bug): retried with backoff, never dropped.
      logger.warn(
        { node, driver, jobId, attempt, err: errorMessage(error) },
        'sync error, will retry',
      );
      throw error;
    }
    if (result.status !== undefined && result.news) {
      this.options.onStatus?.({ node, driver }, result.status);
    }
    const requeue = result.requeueAfter;
    if (requeue === undefined) return;
    const why = result.status?.error ?? `sync of ${node}/${driver} is already running`;
    switch (requeue.kind) {
      case 'throttled':
        // The API server asked everyone to slow down: pause the queue for all replicas.
        await this.queue.rateLimit(requeue.ms);
        throw Worker.RateLimitError();
      case 'backoff':
      case 'after':
        // BullMQ runs the job again after `retryDelayMs` of this.
        throw new RetryLater(why, requeue);
    }
  }

  private async maintain(job: Job): Promise<void> {
    const jobs = this.options.maintenance?.jobs;
    if (jobs === undefined || !isMaintenanceJob(job.name)) {
      throw new UnrecoverableError(`unknown maintenance job "${job.name}"`);
    }
    if (job.name === 'resync') await jobs.resync();
    else await jobs.janitor();
  }

  private readonly onRedisReady = (): void => {
    this.upsertSchedulers().then(
      () => {
        this.options.logger.info('redis reconnected, maintenance schedules ensured');
      },
      (error: unknown) => {
        this.options.logger.error(
          { err: errorMessage(error) },
          'could not re-create the maintenance schedules after Redis reconnected',
        );
      },
    );
  };

  /** Creates or updates the schedulers; every replica does, BullMQ keeps one of each. */
  private async upsertSchedulers(): Promise<void> {
    if (this.maintenance === undefined) return;
    const { queue, options } = this.maintenance;
    const every: Record<MaintenanceJob, number> = {
      resync: options.jobs.resyncIntervalMs,
      janitor: options.janitorIntervalMs ?? 60_000,
    };
    for (const name of maintenanceJobs) {
      await queue.upsertJobScheduler(
        name,
        { every: every[name] },
        { name, opts: MAINTENANCE_JOB_OPTIONS },
      );
    }
  }
}

function isMaintenanceJob(name: string): name is MaintenanceJob {
  return (maintenanceJobs as readonly string[]).includes(name);
}
