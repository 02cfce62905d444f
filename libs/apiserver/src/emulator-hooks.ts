/**
 * Test hooks: request counters (benchmarks count API calls with them), injected failures and
 * latency, and a bounded request log that proves the order in which calls arrived. Available to
 * in-process callers on the emulator handle and over HTTP under `/_emulator/`.
 */

/** One counter: requests with this verb, resource and response code. */
export interface RequestCount {
  /** Kubernetes verb (`get`, `list`, `watch`, `create`, …) or, outside resources, the HTTP method. */
  readonly verb: string;
  /** `resourceslices`, `nodes`, `nodes/status`, or the path of a non-resource request. */
  readonly resource: string;
  readonly code: number;
  readonly count: number;
}

export interface CountersSnapshot {
  /** Requests answered since start or the last reset. */
  readonly total: number;
  readonly counts: readonly RequestCount[];
}

/** Which requests a fault or latency rule applies to; an unset field matches anything. */
export interface RequestMatcher {
  readonly verb?: string;
  readonly resource?: string;
  /** The object name in the path (`…/resourceslices/<name>`). */
  readonly name?: string;
}

export interface FaultSpec extends RequestMatcher {
  /** HTTP status to answer with, e.g. 409, 429, 500, 503. */
  readonly status: number;
  /**
   * How many matching requests fail before the rule is spent. @defaultValue 1, or unlimited
   * when `durationMs` is set
   */
  readonly times?: number;
  /** The rule is spent this long after it was injected, ms (an outage of a given length). */
  readonly durationMs?: number;
  /** Seconds for the `Retry-After` header and `details.retryAfterSeconds`. */
  readonly retryAfterSeconds?: number;
  /** Status message; the real server's usual text for the code when unset. */
  readonly message?: string;
}

export interface LatencySpec extends RequestMatcher {
  /** Delay added before the request is handled, ms. */
  readonly ms: number;
  /** How many matching requests are delayed; unlimited when unset. */
  readonly times?: number;
}

export interface RequestLogEntry {
  /** Order of arrival, from 1. */
  readonly seq: number;
  readonly verb: string;
  readonly resource: string;
  readonly name: string;
  readonly code: number;
  /** The resourceVersion of the object written, when the request wrote one. */
  readonly resourceVersion?: string;
  /** When the request was answered, ms since the epoch (the emulator's clock). */
  readonly at: number;
}

interface Rule<T> {
  spec: T;
  remaining: number;
  /** Spent from this time on, ms since the epoch. */
  expiresAt?: number;
}

export interface RequestInfo {
  verb: string;
  resource: string;
  name: string;
}

function matches(rule: RequestMatcher, info: RequestInfo): boolean {
  return (
    (rule.verb === undefined || rule.verb === info.verb) &&
    (rule.resource === undefined || rule.resource === info.resource) &&
    (rule.name === undefined || rule.name === info.name)
  );
}

const LOG_LIMIT = 10_000;

export class EmulatorHooks {
  constructor(private readonly now: () => number = Date.now) {}

  private counts = new Map<
    string,
    { verb: string; resource: string; code: number; count: number }
  >();
  private total = 0;
  private faults: Rule<FaultSpec>[] = [];
  private latencies: Rule<LatencySpec>[] = [];
  private log: RequestLogEntry[] = [];
  private seq = 0;

  record(info: RequestInfo, code: number, resourceVersion?: string): void {
    const key = `${info.verb}\u0000${info.resource}\u0000${code}`;
    const entry = this.counts.get(key);
    if (entry === undefined)
      this.counts.set(key, { verb: info.verb, resource: info.resource, code, count: 1 });
    else entry.count++;
    this.total++;
    this.seq++;
    this.log.push({
      seq: this.seq,
      verb: info.verb,
      resource: info.resource,
      name: info.name,
      code,
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
      at: this.now(),
    });
    // Trimmed in batches: slicing on every request would make each one cost O(LOG_LIMIT).
    if (this.log.length > 2 * LOG_LIMIT) this.log = this.log.slice(this.log.length - LOG_LIMIT);
  }

  counters(): CountersSnapshot {
    const counts = [...this.counts.values()]
      .map((c) => ({ ...c }))
      .sort((a, b) => (a.resource + a.verb).localeCompare(b.resource + b.verb) || a.code - b.code);
    return { total: this.total, counts };
  }

  /** Sum of the counters matching `filter` (e.g. every `create` of `resourceslices`). */
  count(filter: RequestMatcher & { code?: number } = {}): number {
    let n = 0;
    for (const c of this.counts.values()) {
      if (filter.verb !== undefined && filter.verb !== c.verb) continue;
      if (filter.resource !== undefined && filter.resource !== c.resource) continue;
      if (filter.code !== undefined && filter.code !== c.code) continue;
      n += c.count;
    }
    return n;
  }

  /** The most recent requests (up to 10,000), oldest first. */
  requestLog(): readonly RequestLogEntry[] {
    return this.log.slice(-LOG_LIMIT);
  }

  injectFault(spec: FaultSpec): void {
    if (spec.durationMs === undefined) {
      this.faults.push({ spec, remaining: spec.times ?? 1 });
      return;
    }
    this.faults.push({
      spec,
      remaining: spec.times ?? Number.POSITIVE_INFINITY,
      expiresAt: this.now() + spec.durationMs,
    });
  }

  addLatency(spec: LatencySpec): void {
    this.latencies.push({ spec, remaining: spec.times ?? Number.POSITIVE_INFINITY });
  }

  /** The fault the request must fail with, if a rule matches (and consumes one use of it). */
  takeFault(info: RequestInfo): FaultSpec | undefined {
    if (this.faults.length === 0) return undefined;
    const now = this.now();
    this.faults = this.faults.filter(
      (r) => r.remaining > 0 && (r.expiresAt === undefined || now < r.expiresAt),
    );
    const rule = this.faults.find((r) => matches(r.spec, info));
    if (rule === undefined) return undefined;
    rule.remaining--;
    return rule.spec;
  }

  takeLatency(info: RequestInfo): number {
    let ms = 0;
    for (const rule of this.latencies) {
      if (rule.remaining > 0 && matches(rule.spec, info)) {
        rule.remaining--;
        ms += rule.spec.ms;
      }
    }
    this.latencies = this.latencies.filter((r) => r.remaining > 0);
    return ms;
  }

  /** Clears counters, the log, faults and latency rules. */
  reset(): void {
    this.counts = new Map();
    this.total = 0;
    this.faults = [];
    this.latencies = [];
    this.log = [];
    this.seq = 0;
  }
}
