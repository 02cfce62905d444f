import type { RedisClient } from '@slicekeeper/queue';
import { parseKeyId } from '@slicekeeper/contracts';
import { LuaScript } from '@slicekeeper/queue';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

export interface WatcherLeasesOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
}

// Renews a lease this replica holds. A lease that is gone (Redis restarted empty) is taken back
// rather than given up: the streams are still live here, and dropping them would withdraw every
// driver's slices. Only a lease another replica holds is lost.
const RENEW = new LuaScript(
  `local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`,
  1,
);
const RELEASE = new LuaScript(
  `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
  1,
);

/**
 * The shared-mode watcher replicas and their leases: a sorted set of live replicas scored by
 * heartbeat expiry (Redis server time, so that clock skew between pods does not matter), and one
 * lease per key (`SET NX PX`) naming the replica that owns the key's stream. Keys are ids
 * (`<node>/<driver>`).
 */
export class WatcherLeases {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(options: WatcherLeasesOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
  }

  /**
   * Announces `replicaId` as live for `leaseMs` more, drops the replicas whose heartbeat
   * expired, and returns the live replicas (at least `replicaId`).
   */
  async heartbeat(replicaId: string, leaseMs: number): Promise<string[]> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const membership = await this.redis
      .multi()
      .zadd(this.keys.watcherMembers, now + leaseMs, replicaId)
      .zremrangebyscore(this.keys.watcherMembers, '-inf', now)
      .zrange(this.keys.watcherMembers, 0, -1)
      .exec();
    const members = membership?.[2]?.[1];
    return Array.isArray(members) ? members.map(String) : [replicaId];
  }

  /** Takes the key's lease if no replica holds it; true when `replicaId` now holds it. */
  async take(id: string, replicaId: string, leaseMs: number): Promise<boolean> {
    return (await this.redis.set(this.lease(id), replicaId, 'PX', leaseMs, 'NX')) === 'OK';
  }

  /** Extends a lease `replicaId` holds (or takes back a vanished one); false when it is lost. */
  async renew(id: string, replicaId: string, leaseMs: number): Promise<boolean> {
    return Number(await RENEW.run(this.redis, [this.lease(id)], [replicaId, leaseMs])) !== 0;
  }

  /** Gives the key's lease up, if `replicaId` still holds it. */
  async release(id: string, replicaId: string): Promise<void> {
    await RELEASE.run(this.redis, [this.lease(id)], [replicaId]);
  }

  /** Leaves the replica set, so that the others rebalance at once. */
  async leave(replicaId: string): Promise<void> {
    await this.redis.zrem(this.keys.watcherMembers, replicaId);
  }

  private lease(id: string): string {
    return this.keys.watcherLease(parseKeyId(id));
  }
}
