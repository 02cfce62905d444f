import type { EventEmitter } from 'node:events';
import { UnrecoverableError, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { RedisClient } from '@slicekeeper/queue';
import type { Logger } from 'pino';
import { NODE_STATUS_QUEUE_NAME } from '@slicekeeper/contracts';
import { errorMessage, isTerminal } from '@slicekeeper/errors';
import type { BackoffPolicy } from './backoff';
import { nodeConditionJobSchema } from './node-condition-queue';
import { retryingWorker } from './retrying-worker';
import type { NodeConditionJob } from './node-condition-queue';
import type { NodeConditionReconciler } from './node-condition-reconciler';

export interface NodeConditionWorkerOptions {
  /** The worker's connection; BullMQ blocks on a copy of it while waiting for jobs. */
  connection: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  reconciler: Pick<NodeConditionReconciler, 'reconcile'>;
  logger: Logger;
  /** Nodes evaluated at once by this replica. @defaultValue 4 */
  concurrency?: number;
  /**
   * How long a job's lock lasts without renewal, ms: a replica that dies holds its evaluations
   * this long at most. @defaultValue 5000
   */
  lockDurationMs?: number;
  /** How often stalled jobs (of dead replicas) are looked for, ms. @defaultValue 2000 */
  stalledIntervalMs?: number;
  /** Injected for tests. @defaultValue Math.random */
  random?: () => number;
  /** Retry delays after a transient failure. @defaultValue the sync retries' */
  backoff?: BackoffPolicy;
}

/**
 * The worker of the node condition queue (one replica's share): runs
 * {@link NodeConditionReconciler} for each job. A transient failure (network, 5xx, 409, 429) is
 * retried with the syncer's full-jitter backoff, for ever; a terminal one (403 without the
 * `nodes/status` patch grant, 422) fails the job without a retry, logged, until the node is
 * asked for again. A job of a dead replica is taken over after the lock duration.
 */
export class NodeConditionWorker {
  private readonly worker: Worker<NodeConditionJob>;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: NodeConditionWorkerOptions) {
    this.worker = retryingWorker<NodeConditionJob>(
      NODE_STATUS_QUEUE_NAME,
      'node condition worker',
      (job) => this.evaluate(job),
      { ...options, concurrency: options.concurrency ?? 4 },
    );
  }

  /** Starts taking jobs. */
  start(): Promise<void> {
    void this.worker.run().catch((error: unknown) => {
      this.options.logger.error({ err: errorMessage(error) }, 'node condition worker stopped');
    });
    return this.worker.waitUntilReady().then(() => undefined);
  }

  /** The BullMQ objects whose errors are their connection's, for the process's outage log. */
  get errorSources(): readonly EventEmitter[] {
    return [this.worker];
  }

  /** Stops taking jobs, waits for the running ones, and closes. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.worker.close();
    return this.closing;
  }

  private async evaluate(job: Job<NodeConditionJob>): Promise<void> {
    const { logger } = this.options;
    const parsed = nodeConditionJobSchema.safeParse(job.data);
    if (!parsed.success) {
      // Retrying a job that breaks the contract cannot help.
      logger.error({ jobId: job.id, err: parsed.error.message }, 'malformed job dropped');
      return;
    }
    const { node } = parsed.data;
    const attempt = job.attemptsMade + 1;
    try {
      await this.options.reconciler.reconcile(node);
    } catch (error) {
      if (isTerminal(error)) {
        logger.error({ node, attempt, err: errorMessage(error) }, 'node condition not written');
        throw new UnrecoverableError(errorMessage(error));
      }
      logger.warn({ node, attempt, err: errorMessage(error) }, 'node condition failed, will retry');
      throw error;
    }
  }
}
