import { Queue } from 'bullmq';
import type { JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  SYNC_JOB_NAME,
  bringsNews,
  SYNC_QUEUE_NAME,
  queuePrefix,
  syncDeduplicationId,
} from '@slicekeeper/contracts';
import type { SliceKey, SyncJob, SyncReason } from '@slicekeeper/contracts';

export interface SyncQueueOptions {
  connection: Redis;
  /** slicekeeper's Redis prefix; BullMQ's keys go under its hash-tagged form. @defaultValue `'sk'` */
  prefix?: string;
}

/**
 * The backoff type of sync jobs. The syncer's worker implements it (full jitter, honouring
 * Retry-After, slow for a missing Node); producers only name it.
 */
export const SYNC_BACKOFF_TYPE = 'slicekeeper-sync';

/**
 * Transient failures retry for ever: a sync is never dropped, so a key never stays stale
 * because a job ran out of attempts. (BullMQ needs a number; this one is never reached.)
 */
export const SYNC_ATTEMPTS = Number.MAX_SAFE_INTEGER;

/**
 * Job options every producer uses, so that a job behaves the same whoever enqueued it.
 * Deduplication per key with `keepLastIfActive`: at most one active and one waiting job per key
 * across all syncer replicas; an add while the key's job runs yields exactly one follow-up job.
 * An add that brings news while the key's job waits in backoff reschedules it to run now;
 * a resync or janitor add leaves the backoff alone.
 */
export function syncJobOptions(key: SliceKey, reason: SyncReason): JobsOptions {
  return {
    deduplication: {
      id: syncDeduplicationId(key),
      keepLastIfActive: true,
      ...(bringsNews(reason) ? { reschedule: true } : {}),
    },
    attempts: SYNC_ATTEMPTS,
    backoff: { type: SYNC_BACKOFF_TYPE },
    removeOnComplete: true,
    removeOnFail: { count: 1000 },
  };
}

/** The producer side of the sync queue: asks for a key to be synced. */
export class SyncQueue {
  readonly queue: Queue<SyncJob>;
  private closing: Promise<void> | undefined;

  constructor(options: SyncQueueOptions) {
    this.queue = new Queue<SyncJob>(SYNC_QUEUE_NAME, {
      connection: options.connection,
      prefix: queuePrefix(options.prefix ?? 'sk'),
    });
  }

  /**
   * Asks for a sync of `key`, after `delayMs` (ms, spreads resyncs). Cheap to call on every
   * change: while a job for the key waits, the call is absorbed by it (the sync reads the
   * latest state when it runs).
   */
  async enqueue(key: SliceKey, reason: SyncReason, delayMs = 0): Promise<void> {
    await this.queue.add(
      SYNC_JOB_NAME,
      { node: key.node, driver: key.driver, reason },
      delayMs > 0
        ? { ...syncJobOptions(key, reason), delay: delayMs }
        : syncJobOptions(key, reason),
    );
  }

  close(): Promise<void> {
    this.closing ??= this.queue.close();
    return this.closing;
  }
}
