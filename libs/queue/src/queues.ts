import { Queue, Worker } from 'bullmq';
import type { Job, JobsOptions } from 'bullmq';
import type { z } from 'zod';
import {
  MAINTENANCE_QUEUE_NAME,
  NODE_STATUS_QUEUE_NAME,
  SYNC_QUEUE_NAME,
  queuePrefix,
  sliceKeySchema,
} from '@slicekeeper/contracts';
import type { SyncJob } from '@slicekeeper/contracts';
import type { RedisClient } from './redis-connection';

/**
 * slicekeeper's three queues, and where each Queue and Worker of them is made: with the one
 * prefix rule, the workers' shared defaults and each queue's job options. A process makes one
 * Queue object per queue and shares it; a Worker is one more (blocking) connection, which
 * `RedisConnections.addErrorSources` counts.
 */
export type QueueName =
  | typeof SYNC_QUEUE_NAME
  | typeof NODE_STATUS_QUEUE_NAME
  | typeof MAINTENANCE_QUEUE_NAME;

/** Where a queue's Queue or Worker talks to Redis. */
export interface QueueConnectionOptions {
  connection: RedisClient;
  /** slicekeeper's Redis prefix; BullMQ's keys go under its hash-tagged form. @defaultValue `'sk'` */
  prefix?: string;
}

/** The sync queue's Queue: keys to sync, see `SyncQueue` for how jobs are added. */
export function createSyncQueue(options: QueueConnectionOptions): Queue<SyncJob> {
  return new Queue<SyncJob>(SYNC_QUEUE_NAME, queueOptions(options));
}

/**
 * A node condition job names a node, never a condition (level-triggered): the evaluation reads
 * the node's keys when it runs. The cluster-scoped key's node, '', has no Node.
 */
export const nodeConditionJobSchema = sliceKeySchema
  .pick({ node: true })
  .strict()
  .refine((job) => job.node !== '', {
    message: 'a cluster-scoped key has no Node',
    path: ['node'],
  });
export type NodeConditionJob = z.infer<typeof nodeConditionJobSchema>;

/** The BullMQ job name of a node condition evaluation. Renaming it is a breaking change. */
export const NODE_CONDITION_JOB_NAME = 'evaluate';

/** The backoff type of node condition jobs, implemented by the syncer's worker. */
export const NODE_CONDITION_BACKOFF_TYPE = 'slicekeeper-node-status';

/**
 * Deduplication per node with `keepLastIfActive`: across all replicas at most one evaluation of
 * a node runs at a time, and asking while one runs yields exactly one follow-up. Transient
 * failures retry for ever with the syncer's backoff (BullMQ needs a number; this one is never
 * reached); a waiting retry absorbs new asks and reads the latest state when it runs.
 */
export function nodeConditionJobOptions(node: string): JobsOptions {
  return {
    deduplication: { id: node, keepLastIfActive: true },
    attempts: Number.MAX_SAFE_INTEGER,
    backoff: { type: NODE_CONDITION_BACKOFF_TYPE },
    removeOnComplete: true,
    removeOnFail: { count: 100 },
  };
}

/** The node condition queue's Queue: nodes whose `DRAResourcesPublished` to evaluate. */
export function createNodeConditionQueue(options: QueueConnectionOptions): Queue<NodeConditionJob> {
  return new Queue<NodeConditionJob>(NODE_STATUS_QUEUE_NAME, queueOptions(options));
}

/** Options of the maintenance jobs: kept in the failed set, few, for looking at what went wrong. */
export const MAINTENANCE_JOB_OPTIONS = { removeOnComplete: true, removeOnFail: 10 };

/** The maintenance queue's Queue: its job schedulers (resync, janitor) live there. */
export function createMaintenanceQueue(options: QueueConnectionOptions): Queue {
  return new Queue(MAINTENANCE_QUEUE_NAME, queueOptions(options));
}

export interface QueueWorkerOptions extends QueueConnectionOptions {
  /** Jobs run at once by this worker. */
  concurrency: number;
  /**
   * How long a job's lock lasts without renewal, ms: a replica that dies holds its jobs this
   * long at most before another takes them over. @defaultValue 5000
   */
  lockDurationMs?: number;
  /** How often stalled jobs (of dead replicas) are looked for, ms. @defaultValue 2000 */
  stalledIntervalMs?: number;
  /** The delay before a failed job's next attempt, ms. @defaultValue BullMQ's job backoff */
  backoffDelayMs?: (attemptsMade: number, error: Error | undefined) => number;
}

/**
 * A Worker of one of the queues, not started (`run()` it): a job of a dead replica (stalled) is
 * run again however often that happens. BullMQ makes it a blocking connection of its own from
 * `connection`.
 */
export function createQueueWorker<T>(
  name: QueueName,
  process: (job: Job<T>) => Promise<void>,
  options: QueueWorkerOptions,
): Worker<T> {
  const { backoffDelayMs } = options;
  return new Worker<T>(name, process, {
    ...connectionOptions(options),
    autorun: false,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs ?? 5000,
    stalledInterval: options.stalledIntervalMs ?? 2000,
    maxStalledCount: Number.MAX_SAFE_INTEGER,
    ...(backoffDelayMs === undefined
      ? {}
      : {
          settings: {
            backoffStrategy: (attemptsMade: number, _type?: string, error?: Error) =>
              backoffDelayMs(attemptsMade, error),
          },
        }),
  });
}

/**
 * Events kept in each queue's event stream (BullMQ's `streams.events.maxLen`, 10,000 unless
 * set): the recent history an operator's QueueEvents or dashboard reads; slicekeeper reads none.
 * With BullMQ's default the sync and node-status streams held 1.4 MB of Redis once full (the
 * soak's first 20 minutes), a sixth of all Redis held for 1,000 keys.
 */
export const QUEUE_EVENTS_KEPT = 1000;

function connectionOptions(options: QueueConnectionOptions): {
  connection: RedisClient;
  prefix: string;
} {
  return { connection: options.connection, prefix: queuePrefix(options.prefix ?? 'sk') };
}

function queueOptions(options: QueueConnectionOptions): ReturnType<typeof connectionOptions> & {
  streams: { events: { maxLen: number } };
} {
  return { ...connectionOptions(options), streams: { events: { maxLen: QUEUE_EVENTS_KEPT } } };
}
