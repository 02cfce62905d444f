import { z } from 'zod';
import { keyId, sliceKeySchema } from './key';
import type { SliceKey } from './key';

/**
 * The BullMQ queue that carries sync jobs from producers (plugin-watcher, registration-api,
 * the syncer's own resync and janitor) to slice-syncer replicas.
 * Renaming it is a breaking change: producers and consumers of different versions would no
 * longer meet, and jobs already queued under the old name would be stranded.
 */
export const SYNC_QUEUE_NAME = 'slicekeeper-sync';

/**
 * The queue of the syncer's periodic work (full resync, janitor), run by BullMQ job schedulers
 * so that each run happens on exactly one replica. Renaming it is a breaking change.
 */
export const MAINTENANCE_QUEUE_NAME = 'slicekeeper-maintenance';

/** Job names on the maintenance queue. */
export const maintenanceJobs = ['resync', 'janitor'] as const;
export type MaintenanceJob = (typeof maintenanceJobs)[number];

/** The BullMQ job name of a sync job. Renaming it is a breaking change, as for the queue. */
export const SYNC_JOB_NAME = 'sync';

/** Why a sync was asked for. Informational only: every sync reads the key's latest state. */
export const syncReasons = [
  'snapshot',
  /** A plugin (re-)registered: publish at once, even when its inventory is unchanged. */
  'registered',
  'removed',
  'stream-lost',
  /** A managed slice changed or vanished by someone else's hand, as the syncer's watch saw. */
  'slice-changed',
  /** The key's Node appeared, was re-created with a new UID, or was deleted. */
  'node-changed',
  'resync',
  'janitor',
] as const;
export type SyncReason = (typeof syncReasons)[number];

/**
 * Whether a sync asked for this reason brings news of its key (its inventory or registration
 * changed), as opposed to a periodic check: news cuts a backoff wait short, and nearly always
 * means a write.
 */
export function bringsNews(reason: SyncReason): boolean {
  return (
    reason === 'snapshot' ||
    reason === 'registered' ||
    reason === 'removed' ||
    reason === 'stream-lost' ||
    reason === 'slice-changed' ||
    reason === 'node-changed'
  );
}

/**
 * A sync job names a key, never a payload (level-triggered): the worker reads the key's latest
 * snapshot when it runs, so changes that arrive while a job waits collapse into one sync.
 */
export const syncJobSchema = sliceKeySchema.extend({ reason: z.enum(syncReasons) }).strict();
export type SyncJob = z.infer<typeof syncJobSchema>;

/**
 * The deduplication id of a key's sync job: at most one waiting job per key, however many
 * changes arrive.
 */
export function syncDeduplicationId(key: SliceKey): string {
  return keyId(key);
}

/**
 * BullMQ's key prefix for `prefix`. The braces make it a Redis Cluster hash tag, so that all of
 * a queue's keys live in one slot, as BullMQ requires on a cluster.
 */
export function queuePrefix(prefix: string): string {
  return `{${prefix}}`;
}
