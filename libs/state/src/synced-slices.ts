import type { ChainableCommander } from 'ioredis';
import { storedSliceProblem } from '@slicekeeper/slices';
import type { StoredResourceSlice } from '@slicekeeper/slices';

/**
 * The record of what the key's last successful sync left (`RedisKeys.syncedSlices`, a hash):
 * `slices`, the key's slices as the API server returned them; `versions`, their names and
 * resourceVersions; `epoch`, the sync's epoch. The next sync of the key plans from it instead
 * of listing, as upstream's controller plans from its informer's cache, but only if its own
 * epoch is the next one: any sync in between, by any replica, finished or crashed part-way,
 * took the key's guard and so raised the epoch. A sync that leaves the same versions (a resync
 * with nothing to do) only moves the epoch on.
 */

/** What a sync reads of the record (with the guard). */
export interface SyncedRecord {
  epoch: number | undefined;
  versions: string | undefined;
  /** The raw `slices` field, when asked for. */
  slices: string | undefined;
}

/** The slices' names and resourceVersions, in name order: equal versions, equal slices. */
export function versionsOf(slices: readonly StoredResourceSlice[]): string {
  return slices
    .map((s) => `${s.metadata.name}=${s.metadata.resourceVersion}`)
    .sort()
    .join(',');
}

/** Adds the read of the record to a pipeline; `slices` (the bulk of it) only if asked. */
export function queueSyncedRead(
  pipeline: ChainableCommander,
  redisKey: string,
  withSlices: boolean,
): void {
  if (withSlices) pipeline.hmget(redisKey, 'epoch', 'versions', 'slices');
  else pipeline.hmget(redisKey, 'epoch', 'versions');
}

/** The reply to {@link queueSyncedRead}. */
export function toSyncedRecord(reply: unknown): SyncedRecord {
  const [epoch, versions, slices] = Array.isArray(reply) ? (reply as unknown[]) : [];
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const number = Number(text(epoch));
  return {
    epoch: Number.isSafeInteger(number) ? number : undefined,
    versions: text(versions),
    slices: text(slices),
  };
}

/**
 * The recorded slices, when they are current for a sync of `epoch` (recorded by the sync of
 * `epoch - 1`); undefined when not, or unreadable (the caller then lists).
 */
export function slicesForEpoch(
  record: SyncedRecord,
  epoch: number,
): StoredResourceSlice[] | undefined {
  if (record.epoch !== epoch - 1 || record.slices === undefined) return undefined;
  let slices: unknown;
  try {
    slices = JSON.parse(record.slices);
  } catch {
    return undefined;
  }
  if (!Array.isArray(slices) || slices.some((s) => storedSliceProblem(s) !== undefined)) {
    return undefined;
  }
  const stored = slices as StoredResourceSlice[];
  return versionsOf(stored) === record.versions ? stored : undefined;
}

/**
 * Adds to a pipeline the record of what the sync of `epoch` left: only the epoch when the
 * versions are those already recorded, else everything.
 */
export function queueSyncedWrite(
  pipeline: ChainableCommander,
  redisKey: string,
  epoch: number,
  slices: readonly StoredResourceSlice[],
  recorded: SyncedRecord,
): void {
  const versions = versionsOf(slices);
  if (versions === recorded.versions) {
    pipeline.hset(redisKey, 'epoch', epoch);
    return;
  }
  pipeline.hset(redisKey, 'epoch', epoch, 'versions', versions, 'slices', JSON.stringify(slices));
}
