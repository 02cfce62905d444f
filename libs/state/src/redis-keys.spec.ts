import { apiRateLimitNamespace, redisKeys } from './redis-keys';

describe('Redis key layout', () => {
  const keys = redisKeys('sk');
  const key = { node: 'node-a', driver: 'gpu.example.com' };

  it("puts every record of a key in the key's hash slot", () => {
    const records = [
      keys.snapshot(key),
      keys.snapshotGeneration(key),
      keys.syncStatus(key),
      keys.syncedGeneration(key),
      keys.streamState(key),
      keys.deletedSlices(key),
      keys.registrations(key),
      keys.syncGuard(key),
      keys.watcherLease(key),
      keys.removal(key),
    ];
    for (const record of records) expect(hashTag(record)).toBe('node-a/gpu.example.com');
    expect(new Set(records).size).toBe(records.length);
  });

  it('separates prefixes', () => {
    expect(redisKeys('a').snapshot(key)).not.toBe(redisKeys('b').snapshot(key));
    expect(redisKeys('a').knownKeys).toBe('a:known-keys');
  });

  it('gives the API rate limiter a namespace of its own under the prefix', () => {
    expect(apiRateLimitNamespace('a')).toBe('a:api-rate-limit:');
  });
});

/** The part of a Redis key that Redis Cluster hashes: between the first `{` and the next `}`. */
function hashTag(redisKey: string): string {
  const open = redisKey.indexOf('{');
  const close = redisKey.indexOf('}', open + 1);
  return redisKey.slice(open + 1, close);
}
