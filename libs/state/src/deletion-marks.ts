import type { RedisClient } from '@slicekeeper/queue';
import type { SliceKey } from '@slicekeeper/contracts';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

export interface DeletionMarksOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** @defaultValue `systemClock` */
  clock?: Pick<Clock, 'now'>;
  /**
   * How long a mark lasts, ms: far longer than a watch takes to deliver a deletion, as the
   * syncer's mutation cache keeps its own writes. @defaultValue 60000
   */
  ttlMs?: number;
}

/**
 * The ResourceSlices slicekeeper is deleting, by UID, shared by every syncer replica. A replica
 * marks the slices of a plan before it deletes them, so that the DELETED events every other
 * replica's watch then sees are known as slicekeeper's own, not as someone else's change to
 * repair (which cost a log line and a sync that finds nothing to do, per deleted slice).
 *
 * One sorted set per key (UID → expiry, ms), in the key's hash slot: a mark and its sweep are
 * one pipeline.
 */
export class DeletionMarks {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly ttlMs: number;

  constructor(options: DeletionMarksOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.clock = options.clock ?? systemClock;
    this.ttlMs = options.ttlMs ?? 60_000;
  }

  /** Marks slices of `key` about to be deleted; expired marks of the key go in the same step. */
  async mark(key: SliceKey, uids: readonly string[]): Promise<void> {
    if (uids.length === 0) return;
    const now = this.clock.now();
    const record = this.keys.deletedSlices(key);
    const members = uids.flatMap((uid) => [now + this.ttlMs, uid]);
    const replies = await this.redis
      .multi()
      .zremrangebyscore(record, '-inf', now)
      .zadd(record, ...members)
      .pexpire(record, this.ttlMs)
      .exec();
    const failed = replies?.find(([error]) => error !== null)?.[0];
    if (failed !== undefined && failed !== null) throw failed;
  }

  /** Whether a slice of `key` with this UID was marked by a replica and its mark still holds. */
  async has(key: SliceKey, uid: string): Promise<boolean> {
    const expiry = await this.redis.zscore(this.keys.deletedSlices(key), uid);
    return expiry !== null && Number(expiry) > this.clock.now();
  }
}
