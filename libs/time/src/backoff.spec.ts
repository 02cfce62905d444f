import { Backoff, backoffDelayMs } from './backoff';

describe('Backoff', () => {
  it('starts at 5 s and doubles up to 180 s', () => {
    const backoff = new Backoff({ random: () => 0 });
    const delays = Array.from({ length: 8 }, () => backoff.next());
    expect(delays).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 180_000, 180_000]);
    expect(backoff.attempts).toBe(8);
  });

  it('starts over after a reset', () => {
    const backoff = new Backoff({ random: () => 0 });
    backoff.next();
    backoff.next();
    backoff.reset();
    expect(backoff.next()).toBe(5_000);
  });

  it('keeps jittered delays within [base × 0.8, base]', () => {
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const bases = [5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 180_000, 180_000];
    const seen = new Set<number>();
    for (let run = 0; run < 200; run++) {
      const backoff = new Backoff({ random });
      for (const base of bases) {
        const delay = backoff.next();
        expect(delay).toBeGreaterThanOrEqual(base * 0.8);
        expect(delay).toBeLessThanOrEqual(base);
        seen.add(delay);
      }
    }
    // Spread, not lockstep.
    expect(seen.size).toBeGreaterThan(1000);
    expect(new Backoff({ random: () => 0.999_999 }).next()).toBe(4_000);
  });

  it('honours other settings', () => {
    const backoff = new Backoff({
      initialMs: 100,
      maxMs: 250,
      factor: 3,
      jitter: 0,
      random: () => 0.5,
    });
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 250, 250]);
  });
});

describe('backoffDelayMs', () => {
  /** A fixed-seed generator: the same spread on every run. */
  function seeded(seed: number): () => number {
    return () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
  }

  it('grows from the initial delay to the cap, from the first retry on', () => {
    const full = { initialMs: 100, maxMs: 300_000, jitter: 0 };
    expect([0, 1, 2, 3, 4, 5].map((attempt) => backoffDelayMs(attempt, full))).toEqual([
      100, 100, 200, 400, 800, 1600,
    ]);
    expect(backoffDelayMs(12, full)).toBe(204_800);
    expect(backoffDelayMs(13, full)).toBe(300_000);
    expect(backoffDelayMs(5000, full)).toBe(300_000);
  });

  it('spreads full-jitter retries over the whole window', () => {
    const random = seeded(42);
    const delays = Array.from({ length: 2000 }, () =>
      backoffDelayMs(6, { initialMs: 100, maxMs: 300_000, jitter: 1, random }),
    );
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(3200);
    // Spread, not bunched: every tenth of the window gets some retries.
    const buckets = new Set(delays.map((d) => Math.min(9, Math.floor(d / 320))));
    expect(buckets.size).toBe(10);
  });
});
