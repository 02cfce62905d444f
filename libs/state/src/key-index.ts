import type { RedisClient } from '@slicekeeper/queue';
import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import { decodeOrUndefined } from './codec';
import { streamStateRecord } from './record-schemas';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

export interface KeyIndexOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
}

/** Where a key stands, as the janitor sees it. */
export interface KeyStanding {
  /** It has at least one registration. */
  registered: boolean;
  /** Its last registration was removed and the removal stands. */
  removed: boolean;
  /**
   * A watcher streams from its driver (its registration may have been lost with Redis' data;
   * the watcher restores it). An unreadable stream state says no: the orphan grace still
   * protects the key.
   */
  streaming: boolean;
}

/**
 * The syncer's indexes over all keys: the keys slicekeeper has published for (`knownKeys`,
 * written by each sync's outcome) and the orphans (keys with managed slices and no
 * registration, scored by when the janitor first saw them).
 */
export class KeyIndex {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(options: KeyIndexOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
  }

  /** The ids of every registered key and every key slicekeeper has published for. */
  async activeKeyIds(): Promise<Set<string>> {
    return new Set([
      ...(await this.redis.zrange(this.keys.registrationIndex, 0, -1)),
      ...(await this.redis.zrange(this.keys.knownKeys, 0, -1)),
    ]);
  }

  async standing(key: SliceKey): Promise<KeyStanding> {
    const [registrations, removal, stream] = await Promise.all([
      this.redis.hlen(this.keys.registrations(key)),
      this.redis.exists(this.keys.removal(key)),
      this.redis.get(this.keys.streamState(key)),
    ]);
    return {
      registered: registrations > 0,
      removed: removal > 0,
      streaming: decodeOrUndefined(streamStateRecord, stream)?.state === 'streaming',
    };
  }

  /**
   * Marks the key an orphan at `now` unless it already is one.
   * @returns when it became one, ms since the epoch
   */
  async markOrphan(key: SliceKey, now: number): Promise<number> {
    const id = keyId(key);
    await this.redis.zadd(this.keys.orphans, 'NX', now, id);
    return Number(await this.redis.zscore(this.keys.orphans, id));
  }

  async clearOrphan(id: string): Promise<void> {
    await this.redis.zrem(this.keys.orphans, id);
  }

  async orphanIds(): Promise<string[]> {
    return this.redis.zrange(this.keys.orphans, 0, -1);
  }
}
