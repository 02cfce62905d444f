/** How reconnects back off. Defaults are kubelet 1.30's (noderesources.go): 5 s doubling to 180 s. */
export interface BackoffOptions {
  /** Delay before the first retry, ms. @defaultValue 5000 */
  initialMs?: number;
  /** Longest delay, ms; the doubling stops here. @defaultValue 180000 */
  maxMs?: number;
  /** Growth per failed attempt. @defaultValue 2 */
  factor?: number;
  /**
   * Fraction of each delay that is random, so that plugins that failed together (a node reboot,
   * a watcher restart) do not reconnect in lockstep. A delay is drawn uniformly from
   * `[base × (1 − jitter), base]`, so it never exceeds the documented 5 s … 180 s. @defaultValue 0.2
   */
  jitter?: number;
  /** Uniform in [0, 1); injected for tests. @defaultValue `Math.random` */
  random?: () => number;
}

/** Exponential backoff with jitter for one stream. `reset()` after a success. */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private failures = 0;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 5_000;
    this.maxMs = options.maxMs ?? 180_000;
    this.factor = options.factor ?? 2;
    this.jitter = Math.min(1, Math.max(0, options.jitter ?? 0.2));
    this.random = options.random ?? Math.random;
  }

  /** Failures since the last reset. */
  get attempts(): number {
    return this.failures;
  }

  /** The delay before the next attempt, ms; counts one more failure. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** this.failures);
    this.failures++;
    return Math.round(base * (1 - this.jitter * this.random()));
  }

  reset(): void {
    this.failures = 0;
  }
}
