/**
 * How retries back off. Defaults are kubelet 1.30's plugin reconnects (noderesources.go): 5 s
 * doubling to 180 s, less up to 20% at random.
 */
export interface BackoffOptions {
  /** Delay before the first retry, before jitter, ms. @defaultValue 5000 */
  initialMs?: number;
  /** Longest delay, ms; the growth stops here. @defaultValue 180000 */
  maxMs?: number;
  /** Growth per failed attempt. @defaultValue 2 */
  factor?: number;
  /**
   * Fraction of each delay that is random, so that clients that failed together (a node reboot,
   * a restart, a Redis outage) do not retry in lockstep. A delay is drawn uniformly from
   * `[base × (1 − jitter), base]`, so it never exceeds the undrawn delay: 0.2 keeps kubelet's
   * documented 5 s … 180 s; 1 is "full jitter" (anywhere in `[0, base]`). @defaultValue 0.2
   */
  jitter?: number;
  /**
   * Uniform in [0, 1): the fraction of the jitter taken off a delay (0 waits the full base).
   * Injected for tests. @defaultValue `Math.random`
   */
  random?: () => number;
}

/**
 * Past this many doublings every practical cap is reached (2^40 ms is 35 years), and larger
 * powers would overflow to Infinity.
 */
const MAX_EXPONENT = 40;

/**
 * The delay before retry number `attempt` (1 for the first retry), ms: exponential backoff,
 * `base = min(maxMs, initialMs × factor^(attempt − 1))`, with jitter: uniformly random in
 * `[base × (1 − jitter), base]`. The one backoff of slicekeeper: the watcher's reconnects
 * (kubelet's defaults, {@link Backoff}) and the syncer's job retries (full jitter) both use it.
 */
export function backoffDelayMs(attempt: number, options: BackoffOptions = {}): number {
  const { initialMs = 5_000, maxMs = 180_000, factor = 2, random = Math.random } = options;
  const jitter = Math.min(1, Math.max(0, options.jitter ?? 0.2));
  const exponent = Math.min(Math.max(attempt, 1) - 1, MAX_EXPONENT);
  const base = Math.min(maxMs, initialMs * factor ** exponent);
  return Math.round(base * (1 - jitter * random()));
}

/**
 * Backoff for one stream of attempts, counting its failures: `next()` after each failure gives
 * the delay before the next attempt ({@link backoffDelayMs}); `reset()` after a success.
 */
export class Backoff {
  private failures = 0;

  constructor(private readonly options: BackoffOptions = {}) {}

  /** Failures since the last reset. */
  get attempts(): number {
    return this.failures;
  }

  /** The delay before the next attempt, ms; counts one more failure. */
  next(): number {
    this.failures++;
    return backoffDelayMs(this.failures, this.options);
  }

  reset(): void {
    this.failures = 0;
  }
}
