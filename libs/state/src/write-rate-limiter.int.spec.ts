import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { WriteRateLimiter } from './write-rate-limiter';

describe('WriteRateLimiter', () => {
  const db = useRedisServer();

  it('lets a burst through, then makes writers wait for the rate', async () => {
    const waits: number[] = [];
    const limiter = new WriteRateLimiter({
      redis: db.redis,
      prefix: uniquePrefix('rate'),
      ratePerSecond: 10,
      burst: 3,
      sleep: (ms) => {
        waits.push(ms);
        return Promise.reject(new Error('would sleep'));
      },
    });
    for (let i = 0; i < 3; i++) await limiter.acquire();
    expect(waits).toEqual([]);
    // The bucket is empty: the fourth writer is told to wait about one token's time (100 ms).
    await expect(limiter.acquire()).rejects.toThrow('would sleep');
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(0);
    expect(waits[0]).toBeLessThanOrEqual(100);
  });

  it('tells what each write waited for its token (the saturation metric)', async () => {
    const slept: number[] = [];
    const waited: number[] = [];
    const limiter = new WriteRateLimiter({
      redis: db.redis,
      prefix: uniquePrefix('waits'),
      ratePerSecond: 2,
      burst: 1,
      // The bucket refills by Redis's clock (TIME), which no test can move: really wait the
      // 500 ms a token takes at this rate. Slow enough that a loaded machine cannot refill the
      // bucket between the two acquires (at 50/s a 20 ms stall did, and nothing was waited).
      sleep: (ms) => {
        slept.push(ms);
        return new Promise((resolve) => setTimeout(resolve, ms));
      },
      onAcquired: (ms) => waited.push(ms),
    });
    await limiter.acquire();
    await limiter.acquire();
    expect(waited).toHaveLength(2);
    expect(waited[0]).toBe(0);
    expect(waited[1]).toBe(slept.reduce((sum, ms) => sum + ms, 0));
    expect(waited[1]).toBeGreaterThan(0);
  });

  it('is one budget for every replica', async () => {
    const prefix = uniquePrefix('shared');
    const waited: string[] = [];
    const replica = (name: string) =>
      new WriteRateLimiter({
        redis: db.redis,
        prefix,
        ratePerSecond: 1,
        burst: 4,
        sleep: () => {
          waited.push(name);
          return Promise.reject(new Error('stop'));
        },
      });
    const a = replica('a');
    const b = replica('b');
    await a.acquire();
    await b.acquire();
    await a.acquire();
    await b.acquire();
    // Four writes used the shared burst of four: the fifth, from either replica, must wait.
    await expect(a.acquire()).rejects.toThrow('stop');
    expect(waited).toEqual(['a']);
  });
});
