import { Job, Queue } from 'bullmq';
import type { JobsOptions } from 'bullmq';
import type { RedisClient } from './redis-connection';
import {
  SYNC_JOB_NAME,
  bringsNews,
  keyId,
  SYNC_QUEUE_NAME,
  queuePrefix,
  syncDeduplicationId,
  syncPriority,
} from '@slicekeeper/contracts';
import type { SliceKey, SyncJob, SyncReason } from '@slicekeeper/contracts';
import { raiseAbsorbedPriority } from './raise-absorbed-priority';

export interface SyncQueueOptions {
  connection: RedisClient;
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
 * a resync or janitor add leaves the backoff alone. Every job has the reason's priority
 * ({@link syncPriority}); an add absorbed by the key's job raises that job's, see
 * {@link SyncQueue.enqueue}.
 */
export function syncJobOptions(key: SliceKey, reason: SyncReason): JobsOptions {
  return {
    priority: syncPriority(reason),
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
   * latest state when it runs), and that job is then taken at least as soon as this reason's
   * priority says; while the key's job runs, the call becomes its follow-up (one, however many
   * calls), which takes the most urgent priority and the shortest delay of the calls it
   * absorbed. The add and the raise are one MULTI: see {@link raiseAbsorbedPriority}.
   */
  async enqueue(key: SliceKey, reason: SyncReason, delayMs = 0): Promise<void> {
    const data: SyncJob = { node: key.node, driver: key.driver, reason };
    const options =
      delayMs > 0
        ? { ...syncJobOptions(key, reason), delay: delayMs }
        : syncJobOptions(key, reason);
    const { toKey } = this.queue;
    const deduplicationId = syncDeduplicationId(key);
    const raiseKeys = [
      `${toKey('de')}:${deduplicationId}`,
      `${toKey('')}dn:${deduplicationId}`,
      toKey('active'),
      toKey('prioritized'),
      toKey('pc'),
    ];
    const raiseArgs = [toKey(''), syncPriority(reason), delayMs > 0 ? delayMs : 0];

    const client = await raiseAbsorbedPriority.clientOf(this.queue);
    const transaction = client.multi();
    await new Job<SyncJob>(this.queue, SYNC_JOB_NAME, data, options).addJob(transaction);
    raiseAbsorbedPriority.queue(transaction, raiseKeys, raiseArgs);
    // Only a MULTI whose WATCH failed answers null, and this one watches nothing.
    const replies = (await transaction.exec()) ?? [];
    if (replies.some(([error]) => error?.message.includes('NOSCRIPT'))) {
      // Redis forgot its scripts on a live connection (SCRIPT FLUSH; Redis 7.4 may also evict
      // scripts that EVAL loaded). ioredis sends a script again when it hears so outside a
      // MULTI, not inside one: both steps alone, once, load them again. An add that goes in
      // twice asks for a sync already asked for (one more at most); what the raise may miss
      // when it is not atomic with its add is in raise-absorbed-priority.ts.
      await this.queue.add(SYNC_JOB_NAME, data, options);
      await raiseAbsorbedPriority.run(this.queue, raiseKeys, raiseArgs);
      return;
    }
    for (const [error, result] of replies) {
      if (error !== null) throw new Error(`enqueue sync of ${keyId(key)}: ${error.message}`);
      // BullMQ's add answers a negative code for a job it refused (parent trouble: none here).
      if (typeof result === 'number' && result < 0) {
        throw new Error(`enqueue sync of ${keyId(key)}: refused with code ${result}`);
      }
    }
  }

  close(): Promise<void> {
    this.closing ??= this.queue.close();
    return this.closing;
  }
}
