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
  /** The first snapshot a key ever had (a node that just joined): publish it before changes. */
  'first-snapshot',
  /** A snapshot that differs from the previous one only in device health: (un)taint at once. */
  'health',
  /** A plugin (re-)registered: publish at once, even when its inventory is unchanged. */
  'registered',
  'removed',
  'stream-lost',
  /** The key's stream failed: taint its devices `driver-unreachable` at once. */
  'unreachable',
  /** The key's stream is back before the wipe: remove the `driver-unreachable` taint. */
  'reachable',
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
  return reason !== 'resync' && reason !== 'janitor';
}

/**
 * The BullMQ priority of a sync asked for this reason (1 is taken first). Under a backlog the
 * queue drains withdrawals and taints first (a dead driver's devices stop being scheduled),
 * then a new key's first publish (a node that just joined), then inventory changes and repairs,
 * then periodic checks. Every job has a priority: BullMQ would take an unprioritized job before
 * all prioritized ones.
 */
export function syncPriority(reason: SyncReason): number {
  switch (reason) {
    case 'removed':
    case 'stream-lost':
    case 'unreachable':
    case 'reachable':
    case 'health':
      return SYNC_PRIORITIES.lifecycle;
    case 'first-snapshot':
    case 'registered':
    case 'node-changed':
      return SYNC_PRIORITIES.firstPublish;
    case 'snapshot':
    case 'slice-changed':
      return SYNC_PRIORITIES.change;
    case 'resync':
    case 'janitor':
      return SYNC_PRIORITIES.check;
  }
}

/** The priority levels of {@link syncPriority}, highest first. */
export const SYNC_PRIORITIES = {
  /** Withdrawals, removals, driver-unreachable and health taints. */
  lifecycle: 1,
  /** A key's first publish: a node that just joined, a driver that registered. */
  firstPublish: 2,
  /** An inventory change; a repair of a slice someone else changed. */
  change: 3,
  /** Periodic resyncs and the janitor. */
  check: 4,
} as const;

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

/**
 * The queue of Node condition evaluations (`DRAResourcesPublished`): one job per node,
 * deduplicated by node name, taken by slice-syncer replicas. Renaming it is a breaking change,
 * as for {@link SYNC_QUEUE_NAME}.
 */
export const NODE_STATUS_QUEUE_NAME = 'slicekeeper-node-status';
