/**
 * End-to-end latency: a driver sends an inventory → the slice carrying it is seen through a
 * watch on ResourceSlices, as a scheduler would see it. Every device of an inventory carries the
 * same `rev`, so a watch event says which inventory of its key it shows.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { keyId } from '@slicekeeper/contracts';
import type { EmulatorClient, InProcessDriver, ResourceSlice } from '../src/harness';
import { gpuInventory } from '../src/harness';
import { monotonicUs } from './profile-phases';
import type { PhaseWindow } from './profile-phases';
import { round, summarize } from './stats';
import { apiCalls, callsSince, cpuSeconds, cpuSince, settledSyncs, syncsRun } from './support';
import type { ApiCalls } from './support';

export interface WatchEvent {
  type: string;
  object: ResourceSlice;
}

/**
 * One HTTP watch on every ResourceSlice, opened by the bench, as an informer would. Reports each
 * slice it sees with the `rev` its devices carry and when its line arrived.
 */
export class SliceWatch {
  /** Key id → the highest rev seen. */
  readonly latest = new Map<string, number>();
  onSlice: ((key: string, rev: number, at: number) => void) | undefined;
  /** Every watch event as it arrived (`at`: `performance.now()`), deletions included. */
  onEvent: ((event: WatchEvent, at: number) => void) | undefined;
  private request: http.ClientRequest | undefined;
  private failure: Error | undefined;

  private constructor() {}

  /** Opens the watch from the current resourceVersion of the collection. */
  static async open(emulatorUrl: string): Promise<SliceWatch> {
    const collection = new URL('/apis/resource.k8s.io/v1/resourceslices', emulatorUrl);
    const response = await fetch(collection, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`listing resourceslices: ${response.status}`);
    const list = (await response.json()) as {
      metadata: { resourceVersion: string };
      items: ResourceSlice[];
    };
    const watch = new SliceWatch();
    for (const slice of list.items) watch.seen(slice, performance.now());
    await watch.connect(
      `${collection.href}?watch=1&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=3600`,
    );
    return watch;
  }

  /** Throws if the watch ended or failed. */
  check(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  close(): void {
    this.request?.destroy();
    this.request = undefined;
  }

  private connect(url: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const request = http.get(url, { headers: { accept: 'application/json' } }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`watch: HTTP ${res.statusCode ?? 0}`));
          res.resume();
          return;
        }
        resolve();
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const at = performance.now();
          buffered += chunk;
          let newline = buffered.indexOf('\n');
          while (newline >= 0) {
            const line = buffered.slice(0, newline);
            buffered = buffered.slice(newline + 1);
            if (line.trim() !== '') this.event(JSON.parse(line) as WatchEvent, at);
            newline = buffered.indexOf('\n');
          }
        });
        res.on('end', () => {
          if (this.request !== undefined) this.failure ??= new Error('the watch ended');
        });
        res.on('error', (error) => {
          this.failure ??= error;
        });
      });
      request.on('error', (error) => {
        this.failure ??= error;
        reject(error);
      });
      this.request = request;
    });
  }

  private event(event: WatchEvent, at: number): void {
    if (event.type === 'ERROR') {
      this.failure ??= new Error(`watch error: ${JSON.stringify(event.object)}`);
      return;
    }
    this.onEvent?.(event, at);
    if (event.type === 'ADDED' || event.type === 'MODIFIED') this.seen(event.object, at);
  }

  private seen(slice: ResourceSlice, at: number): void {
    const rev = slice.spec.devices?.[0]?.attributes?.rev?.int;
    if (rev === undefined || slice.spec.nodeName === undefined) return;
    const key = keyId({ node: slice.spec.nodeName, driver: slice.spec.driver });
    if (rev > (this.latest.get(key) ?? -1)) this.latest.set(key, rev);
    this.onSlice?.(key, rev, at);
  }
}

export interface LatencyResult {
  /** Changes per second asked for. */
  rate: number;
  seconds: number;
  /** Changes per second actually sent. */
  achievedRate: number;
  sent: number;
  /** Sent changes seen through the watch (the rest were coalesced: never written). */
  seen: number;
  p50ms: number;
  p99ms: number;
  maxMs: number;
  /** Every key's last change was seen before the drain timeout. */
  converged: boolean;
  readsPerChange: number;
  writesPerChange: number;
  /** Every API call while sending and draining. */
  api: ApiCalls;
  /** Syncs the syncer ran while sending and draining (changes to one key coalesce). */
  syncs: number;
  /** Seconds of sending and draining. */
  wallSeconds: number;
  /** CPU seconds per process while sending and draining. */
  cpuSeconds: Record<string, number>;
  /** When it was sending and draining, for reading it alone out of CPU profiles. */
  window: PhaseWindow;
  /** With tracing on: the spans the services exported while sending and draining. */
  spans?: SpansSent;
}

/** Spans exported in a stretch of a run, counted by an OTLP sink. */
export interface SpansSent {
  total: number;
  perChange: number;
  /** By `<service> <span name>`, per change. */
  perChangeByName: Record<string, number>;
}

export interface LatencyOptions {
  emulator: EmulatorClient;
  watch: SliceWatch;
  drivers: readonly InProcessDriver[];
  /** Key id → the last rev sent; continued from one run to the next. */
  revs: Map<string, number>;
  rate: number;
  seconds: number;
  /** The syncer replicas' /metrics. */
  syncerMetrics: readonly string[];
  /** How long to wait for the last changes after sending. @defaultValue 15000 */
  drainMs?: number;
  /**
   * Seconds of changes at the same rate sent first and not measured, as the floor's first
   * rounds are not: every process's code paths warm up (JIT, connection pools). @defaultValue 2
   */
  warmupSeconds?: number;
  /** With tracing on: the spans received so far by the OTLP sink, by `<service> <name>`. */
  spans?: () => ReadonlyMap<string, number>;
}

/** The spans counted between two readings of a sink, per change. */
function spansSince(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  changes: number,
): SpansSent {
  let total = 0;
  const perChangeByName: Record<string, number> = {};
  for (const [name, count] of [...after].sort(([a], [b]) => a.localeCompare(b))) {
    const spans = count - (before.get(name) ?? 0);
    if (spans === 0) continue;
    total += spans;
    perChangeByName[name] = round(spans / changes, 3);
  }
  return { total, perChange: round(total / changes, 3), perChangeByName };
}

/** Sends `total` changes at `rate` a second, round-robin over the drivers. */
async function sendAtRate(
  options: LatencyOptions,
  ids: readonly string[],
  total: number,
  onSend: (id: string, rev: number) => void,
): Promise<void> {
  const { watch, drivers, revs, rate } = options;
  const start = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
    for (; sent < due; sent++) {
      const index = sent % drivers.length;
      const driver = drivers[index];
      const id = ids[index];
      if (driver === undefined || id === undefined) throw new Error('no drivers');
      const rev = (revs.get(id) ?? 0) + 1;
      revs.set(id, rev);
      const inventory = gpuInventory({ rev });
      onSend(id, rev);
      driver.publish(inventory);
    }
    watch.check();
    const nextDue = start + (sent / rate) * 1000;
    await sleep(Math.max(0, nextDue - performance.now()));
  }
}

/** Waits until the watch has seen every key's last change; false after `timeoutMs`. */
async function converge(options: LatencyOptions, ids: readonly string[], timeoutMs: number) {
  const { watch, revs } = options;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    watch.check();
    if (ids.every((id) => (watch.latest.get(id) ?? -1) >= (revs.get(id) ?? 0))) return true;
    await sleep(20);
  }
  return false;
}

/** Sends `rate` changes a second round-robin over the drivers and times each through the watch. */
export async function measureLatency(options: LatencyOptions): Promise<LatencyResult> {
  const { watch, drivers, rate, seconds } = options;
  const ids = drivers.map((d) => keyId({ node: d.node, driver: d.driver }));
  const drainMs = options.drainMs ?? 15_000;
  await sendAtRate(options, ids, Math.round(rate * (options.warmupSeconds ?? 2)), () => undefined);
  if (!(await converge(options, ids, drainMs)))
    throw new Error(`warm-up at ${rate}/s: no convergence`);
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  watch.onSlice = (key, rev, at) => {
    const id = `${key}#${rev}`;
    const sent = sentAt.get(id);
    if (sent === undefined) return;
    // Seen once: a later event of the same rev (e.g. a status-only update) is not a new arrival.
    sentAt.delete(id);
    latencies.push(at - sent);
  };
  const before = await apiCalls(options.emulator);
  const syncsBefore = await syncsRun(options.syncerMetrics);
  const cpuBefore = await cpuSeconds();
  const spansBefore = options.spans?.();
  const total = Math.round(rate * seconds);
  const fromUs = monotonicUs();
  const start = performance.now();
  try {
    await sendAtRate(options, ids, total, (id, rev) => {
      sentAt.set(`${id}#${rev}`, performance.now());
    });
    const sendSeconds = (performance.now() - start) / 1000;
    const converged = await converge(options, ids, drainMs);
    // The last updates of a change may still be on their way (e.g. a status write).
    await sleep(200);
    const wallSeconds = (performance.now() - start) / 1000;
    const window = { fromUs, toUs: monotonicUs() };
    const cpu = cpuSince(cpuBefore, await cpuSeconds());
    const syncs = (await settledSyncs(options.syncerMetrics)) - syncsBefore;
    const calls = callsSince(before, await apiCalls(options.emulator));
    // Read once the syncs settled: every span of the stretch has been exported (batch delay).
    const spansAfter = options.spans?.();
    const summary = summarize(latencies);
    return {
      rate,
      seconds,
      achievedRate: round(total / sendSeconds, 1),
      sent: total,
      seen: latencies.length,
      p50ms: summary.p50,
      p99ms: summary.p99,
      maxMs: summary.max,
      converged,
      readsPerChange: round(calls.reads / total, 3),
      writesPerChange: round(calls.writes / total, 3),
      api: calls,
      syncs,
      wallSeconds: round(wallSeconds, 2),
      cpuSeconds: cpu,
      window,
      ...(spansBefore === undefined || spansAfter === undefined
        ? {}
        : { spans: spansSince(spansBefore, spansAfter, total) }),
    };
  } finally {
    watch.onSlice = undefined;
  }
}
