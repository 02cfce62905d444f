import { Backoff } from './backoff';

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
