import { randomUUID } from 'node:crypto';
import type { Job, JobState, JobsOptions, Queue } from 'bullmq';
import { createSyncQueue } from './queues';
import type { QueueConnectionOptions } from './queues';
import {
  SYNC_JOB_NAME,
  bringsNews,
  keyId,
  syncDeduplicationId,
  syncPriority,
} from '@slicekeeper/contracts';
import type { SliceKey, SyncJob, SyncReason } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';

export type SyncQueueOptions = QueueConnectionOptions;

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

/** Whether a job in this state (BullMQ's `getJobState`) will still run (again). */
function isPending(state: JobState | 'unknown'): boolean {
  return state !== 'completed' && state !== 'failed' && state !== 'unknown';
}

/**
 * The producer side of the sync queue: asks for a key to be synced. Built on BullMQ's public
 * API only (deduplication, `getJobState`, `Job.changePriority`); what that costs against one
 * atomic step is listed on {@link SyncQueue.enqueue}.
 */
export class SyncQueue {
  readonly queue: Queue<SyncJob>;
  private closing: Promise<void> | undefined;

  constructor(options: SyncQueueOptions) {
    this.queue = createSyncQueue(options);
  }

  /**
   * Asks for a sync of `key`, after `delayMs` (ms, spreads resyncs). Cheap to call on every
   * change: the sync reads the latest state when it runs, so while a job for the key is pending
   * the call only makes sure that job runs soon enough.
   *
   * - No job for the key: one is added, at the reason's priority, after `delayMs`.
   * - A job waits (or waits out a backoff or a resync's spread): it absorbs the call, and its
   *   priority is raised to the reason's when that is more urgent; news (see `bringsNews`) also
   *   cuts its wait short (BullMQ's `reschedule`).
   * - The key's job runs: the call becomes its follow-up (one, however many calls), which runs at
   *   once, at least as urgently as the most urgent call it absorbed: that urgency is kept on
   *   the running job's priority (which a retry of it also runs at), and the follow-up is stored
   *   again with it when a later, less urgent call replaced it.
   * - A resync or janitor call while a job of the key waits is dropped: that job checks the key
   *   anyway, and a check must not cut a backoff short. While the key's job runs, it becomes
   *   the follow-up as news does (the running sync may have read the key before the call).
   *
   * Each step is one of BullMQ's atomic scripts; the steps are not one atomic step, which
   * leaves three windows, each one round trip to Redis wide. None loses a sync (a job only
   * names a key and every sync reads the latest state); they may cost urgency:
   * 1. Two calls raising the same job at once may leave it at the less urgent of the two
   *    raises (both more urgent than before).
   * 2. When the key's job finishes between a call that replaced its follow-up and the call's
   *    second add, the follow-up keeps that call's priority rather than the most urgent one.
   * 3. When the key's job finishes between a resync call that replaced its follow-up and the
   *    call's second add, the follow-up runs after the resync's spread; and when a waiting job
   *    starts between a resync's check and its add, and is given a follow-up with news
   *    meanwhile, the same can happen.
   */
  async enqueue(key: SliceKey, reason: SyncReason, delayMs = 0): Promise<void> {
    if (!bringsNews(reason) && (await this.hasWaitingJob(key))) return;
    const data: SyncJob = { node: key.node, driver: key.driver, reason };
    let priority = syncPriority(reason);
    let delay = delayMs;
    // A second round only stores a follow-up again, at once and at the urgency it must keep.
    for (let round = 0; round < 2; round++) {
      const options: JobsOptions = {
        ...syncJobOptions(key, reason),
        priority,
        ...(delay > 0 ? { delay } : {}),
        jobId: randomUUID(),
      };
      let added: Job<SyncJob>;
      try {
        added = await this.queue.add(SYNC_JOB_NAME, data, options);
      } catch (error) {
        throw new Error(`enqueue sync of ${keyId(key)}: ${errorMessage(error)}`, { cause: error });
      }
      // A job of its own: nothing else holds the key.
      if (added.id === options.jobId || added.id === undefined) return;
      const followUp = await this.absorbedBy(added.id, priority, delay);
      if (followUp === undefined) return;
      priority = followUp;
      delay = 0;
    }
  }

  close(): Promise<void> {
    this.closing ??= this.queue.close();
    return this.closing;
  }

  /** Whether a job of the key waits to run (not yet running, or again after a failure). */
  private async hasWaitingJob(key: SliceKey): Promise<boolean> {
    const id = await this.queue.getDeduplicationJobId(syncDeduplicationId(key));
    if (id === null) return false;
    // A deduplication id that outlived its job (BullMQ's add recovers from that) names none.
    const state = await this.queue.getJobState(id);
    return isPending(state) && state !== 'active';
  }

  /**
   * Settles an add that job `id` absorbed: raises the job to `priority` when that is more
   * urgent. Returns the priority to store the add again at, at once, when it became the
   * follow-up of the running job and what it stored keeps less than it must; else undefined.
   */
  private async absorbedBy(
    id: string,
    priority: number,
    delay: number,
  ): Promise<number | undefined> {
    const [state, job] = await Promise.all([this.queue.getJobState(id), this.queue.getJob(id)]);
    // It finished since: it started after the add, or made the add its follow-up.
    if (job === undefined || !isPending(state)) return undefined;
    // Priority 0 is a job BullMQ put back unprioritized (a stalled one): taken first already.
    let kept = job.priority;
    if (kept !== 0 && kept > priority) {
      await this.raise(job, priority);
      kept = priority;
    }
    if (state !== 'active') return undefined;
    const wanted = kept === 0 ? priority : Math.min(priority, kept);
    return wanted === priority && delay === 0 ? undefined : wanted;
  }

  private async raise(job: Job<SyncJob>, priority: number): Promise<void> {
    try {
      await job.changePriority({ priority });
    } catch (error) {
      // Gone since (it finished and was removed): it started after the add; nothing to raise.
      if ((await this.queue.getJobState(job.id ?? '')) !== 'unknown') throw error;
    }
  }
}
