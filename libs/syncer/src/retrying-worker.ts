import type { Job, Worker } from 'bullmq';
import { createQueueWorker } from '@slicekeeper/queue';
import type { QueueName, RedisClient } from '@slicekeeper/queue';
import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';
import { retryDelayMs } from './backoff';
import type { BackoffPolicy } from './backoff';

export interface RetryingWorkerOptions {
  /** The worker's connection; BullMQ blocks on a copy of it while waiting for jobs. */
  connection: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  logger: Logger;
  concurrency: number;
  /** How long a job's lock lasts without renewal, ms. @defaultValue 5000 */
  lockDurationMs?: number;
  /** How often stalled jobs (of dead replicas) are looked for, ms. @defaultValue 2000 */
  stalledIntervalMs?: number;
  /** Injected for tests. @defaultValue Math.random */
  random?: () => number;
  backoff?: BackoffPolicy;
}

/**
 * A BullMQ worker of the syncer's kind: not started (`run()` it), a failed job retried with the
 * full-jitter backoff of {@link retryDelayMs}, a job of a dead replica (stalled) run again however
 * often that happens, worker errors logged as `<what> error`.
 */
export function retryingWorker<T>(
  queue: QueueName,
  what: string,
  process: (job: Job<T>) => Promise<void>,
  options: RetryingWorkerOptions,
): Worker<T> {
  const random = options.random ?? Math.random;
  const worker = createQueueWorker<T>(queue, process, {
    ...options,
    backoffDelayMs: (attemptsMade, error) =>
      retryDelayMs(attemptsMade, error, random, options.backoff),
  });
  worker.on('error', (error) => {
    // Unless routed to the process's outage log (`RedisConnections.addErrorSources`), which
    // logs an outage once rather than each reconnect attempt.
    if (worker.listenerCount('error') > 1) return;
    options.logger.error({ err: errorMessage(error) }, `${what} error`);
  });
  return worker;
}
