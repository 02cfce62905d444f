import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '@slicekeeper/queue';
import { LuaScript, execPipeline, execWrites, replyOf } from '@slicekeeper/queue';
import type { PipelineReply } from '@slicekeeper/queue';

// Takes the guard when it is free or already held by the same job: a job that BullMQ handed to
// another replica (its first replica died or lost its lock) must be able to continue. KEYS: the
// guard. Returns 1 when taken, 0 when another job holds the guard.
const ACQUIRE = new LuaScript(
  `
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`,
  1,
);

// Compare-and-delete: only the holder releases the guard.
const RELEASE = new LuaScript(
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`,
  1,
);

/**
 * A per-key marker held while a sync runs. BullMQ's deduplication already gives at most one
 * active job per key; the guard checks that promise on every sync, so that a violation (two
 * jobs of one key active at once) is refused, counted and visible, never a silent overlap.
 *
 * Taking the guard shares its round trip with the sync's reads, releasing it with the sync's
 * last writes.
 */
export class KeyGuard {
  constructor(
    private readonly redis: RedisClient,
    /** Bound on how long a crashed holder blocks the key, ms. */
    private readonly ttlMs: number,
  ) {}

  /**
   * Takes the guard whose key is `guardKey` for `holder` (a job id) and sends the commands
   * `reads` adds right after it, in the same round trip.
   * @returns the held guard and the replies to `reads`, or `undefined` when another holder has
   * the guard (the replies are then ignored)
   */
  async acquireWith(
    guardKey: string,
    holder: string,
    reads: (pipeline: ChainableCommander) => void,
  ): Promise<{ guard: HeldGuard; replies: PipelineReply[] } | undefined> {
    const [taken, ...replies] = await execPipeline(this.redis, (pipeline) => {
      ACQUIRE.queue(pipeline, [guardKey], [holder, this.ttlMs]);
      reads(pipeline);
    });
    if (taken === undefined || Number(replyOf(taken)) !== 1) return undefined;
    return { guard: new HeldGuard(this.redis, guardKey, holder), replies };
  }
}

/** A guard taken by {@link KeyGuard.acquireWith}, released once its sync ends. */
export class HeldGuard {
  private released = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly guardKey: string,
    private readonly holder: string,
  ) {}

  /**
   * Sends the commands `writes` adds, then releases the guard, in one round trip. Throws the
   * first error among the replies; the guard then counts as still held, for {@link release}.
   */
  async releaseWith(writes: (pipeline: ChainableCommander) => void): Promise<void> {
    await execWrites(this.redis, (pipeline) => {
      writes(pipeline);
      RELEASE.queue(pipeline, [this.guardKey], [this.holder]);
    });
    this.released = true;
  }

  /** Releases the guard, unless {@link releaseWith} already did. */
  async release(): Promise<void> {
    if (this.released) return;
    await RELEASE.run(this.redis, [this.guardKey], [this.holder]);
    this.released = true;
  }
}
