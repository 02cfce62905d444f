import type { Redis } from 'ioredis';

// Takes the guard when it is free or already held by the same job: a job that BullMQ handed to
// another replica (its first replica died or lost its lock) must be able to continue.
const ACQUIRE = `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/**
 * A per-key marker held while a sync runs. BullMQ's deduplication already gives at most one
 * active job per key; the guard checks that promise on every sync, so that a violation (two
 * jobs of one key active at once) is refused, counted and visible, never a silent overlap.
 */
export class KeyGuard {
  constructor(
    private readonly redis: Redis,
    /** Bound on how long a crashed holder blocks the key, ms. */
    private readonly ttlMs: number,
  ) {}

  /** Whether `holder` (a job id) may sync the key whose guard is `guardKey`. */
  async acquire(guardKey: string, holder: string): Promise<boolean> {
    return Number(await this.redis.eval(ACQUIRE, 1, guardKey, holder, this.ttlMs)) === 1;
  }

  async release(guardKey: string, holder: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, guardKey, holder);
  }
}
