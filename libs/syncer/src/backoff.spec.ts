import { TransientError } from '@slicekeeper/errors';
import { retryDelayMs } from './backoff';

describe('retryDelayMs', () => {
  it('doubles the bound from 100 ms and caps it at 5 minutes', () => {
    const atTop = () => 1;
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(a, new Error('x'), atTop))).toEqual([
      100, 200, 400, 800, 1600,
    ]);
    expect(retryDelayMs(12, new Error('x'), atTop)).toBe(204_800);
    expect(retryDelayMs(13, new Error('x'), atTop)).toBe(300_000);
    expect(retryDelayMs(5000, new Error('x'), atTop)).toBe(300_000);
  });

  it('spreads retries over the whole window (full jitter)', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const delays = Array.from({ length: 2000 }, () => retryDelayMs(6, new Error('x'), random));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(3200);
    // Spread, not bunched: every tenth of the window gets some retries.
    const buckets = new Set(delays.map((d) => Math.min(9, Math.floor(d / 320))));
    expect(buckets.size).toBe(10);
  });

  it('never retries before the Retry-After the server asked for', () => {
    const throttled = new TransientError('too many requests', {
      code: 'throttled',
      retryAfterMs: 7000,
    });
    expect(retryDelayMs(1, throttled, () => 0.5)).toBe(7000);
  });
});
