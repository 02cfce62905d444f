/** Percentiles of a set of samples, ms. */
export interface Summary {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles; NaN for no samples. */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number =>
    sorted.length === 0
      ? Number.NaN
      : round(sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN, 3);
  return { samples: sorted.length, p50: rank(50), p99: rank(99), max: rank(100) };
}

/** Rounds to `digits` decimals (NaN stays NaN). */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
