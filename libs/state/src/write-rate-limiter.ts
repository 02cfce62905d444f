import type { RedisClient } from '@slicekeeper/queue';
import { LuaScript, execPipeline, replyOf } from '@slicekeeper/queue';
import { redisKeys } from './redis-keys';

export interface WriteRateLimiterOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix: one bucket per prefix, shared by every replica. @defaultValue `'sk'` */
  prefix?: string;
  /** Sustained writes per second across all replicas. */
  ratePerSecond: number;
  /** Writes allowed at once after a quiet period. */
  burst: number;
  /** Injected for tests. @defaultValue setTimeout-based sleep */
  sleep?: (ms: number) => Promise<void>;
  /** Told of every write allowed, with how long it waited for its token, ms (metrics). */
  onAcquired?: (waitedMs: number) => void;
}

// A token bucket kept in Redis and refilled from Redis' own clock (TIME), so that replicas with
// skewed clocks share one budget. Returns 0 when a token was taken, else the wait in ms.
const TAKE_TOKEN = new LuaScript(
  `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
local last = tonumber(redis.call('HGET', KEYS[1], 'at'))
if tokens == nil or last == nil then
  tokens = burst
  last = now
end
tokens = math.min(burst, tokens + math.max(0, now - last) * rate / 1000)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait
`,
  1,
);

/**
 * The cluster-wide limit on Kubernetes API writes, shared by all syncer replicas, so that a
 * burst of changes (a cold start, a driver rollout) cannot overload the API server.
 */
export class WriteRateLimiter {
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly key: string;

  constructor(private readonly options: WriteRateLimiterOptions) {
    this.key = redisKeys(options.prefix).writeRateLimit;
    this.sleep =
      options.sleep ??
      ((ms) =>
        new Promise((resolve) => {
          setTimeout(resolve, ms);
        }));
  }

  /**
   * Resolves when the caller may make one write. The token is asked for in the connection's
   * pipeline of the tick (`execPipeline`): a sync's first token goes out in one write with its
   * reads, one socket write less per change (issue 29). Should that
   * batch be sent again (NOSCRIPT after a Redis restart), a token can be taken twice: the budget
   * is underspent, never overspent.
   */
  async acquire(): Promise<void> {
    const { redis, ratePerSecond, burst } = this.options;
    let waited = 0;
    for (;;) {
      const [reply] = await execPipeline(redis, (pipeline) => {
        TAKE_TOKEN.queue(pipeline, [this.key], [ratePerSecond, burst]);
      });
      if (reply === undefined) throw new Error('the write budget got no reply from Redis');
      const wait = Number(replyOf(reply));
      if (wait <= 0) break;
      await this.sleep(wait);
      waited += wait;
    }
    this.options.onAcquired?.(waited);
  }
}
