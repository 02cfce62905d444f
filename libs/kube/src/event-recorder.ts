import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';
import { systemClock } from '@slicekeeper/time';
import type { Clock, TimerHandle } from '@slicekeeper/time';
import { kubeErrorCode } from './classify-kube-error';
import type {
  EventRegarding,
  EventSeriesWrite,
  EventWrite,
  KubeEventClient,
} from './kube-event-client';

/** One occurrence of something a user must notice about an object. */
export interface EventOccurrence {
  regarding: EventRegarding;
  type: 'Normal' | 'Warning';
  /** Why, UpperCamelCase (`InvalidInventory`). */
  reason: string;
  /** What was done or failed, UpperCamelCase (`PublishResourceSlices`). */
  action: string;
  /** Human-readable; cut to the API's 1 kB. */
  note: string;
}

/** What became of an occurrence: a new Event, a series write, a count kept for later, or lost. */
export type EventRecordOutcome = 'created' | 'series' | 'counted' | 'failed';

export interface EventRecorderOptions {
  sink: Pick<KubeEventClient, 'create' | 'patchSeries'>;
  /** `reportingController`, a qualified name (`slicekeeper.dev/slice-syncer`). */
  reportingController: string;
  /** `reportingInstance`, e.g. the pod's name; cut to 128 characters. */
  reportingInstance: string;
  /** Where failed writes are said. */
  logger: Pick<Logger, 'warn'>;
  /** The namespace of Events about cluster-scoped objects. @defaultValue 'default' */
  namespace?: string;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** How often the counts of running series are written, ms (client-go's refreshTime). @defaultValue 1800000 */
  refreshIntervalMs?: number;
  /**
   * A series with no repeat for this long ends: its final count is written and it is
   * forgotten, so the next occurrence starts a new Event (client-go's finishTime), ms.
   * @defaultValue 360000
   */
  finishAfterMs?: number;
  /**
   * How many writes may wait behind the one under way; an occurrence that finds them all taken
   * is dropped and counted `failed` (client-go's maxQueuedEvents, its broadcaster's
   * DropIfChannelFull). @defaultValue 1000
   */
  maxQueued?: number;
  /** Told of every occurrence's outcome (metrics). */
  onRecord?: (occurrence: EventOccurrence, outcome: EventRecordOutcome) => void;
}

interface CachedEvent {
  event: EventWrite;
  /** Last occurrence, ms. */
  lastAt: number;
}

/** The API server's limits (pkg/apis/core/validation/events.go). */
const NOTE_LIMIT_BYTES = 1024;
const REPORTING_INSTANCE_LIMIT = 128;

/**
 * Records Events the way client-go's `tools/events` broadcaster does, so that a key that fails
 * every minute makes one Event, not one a minute:
 *
 * - the first occurrence creates an Event;
 * - the second (same object, reason, action, type and note) patches `series` with count 2;
 * - later ones only count, and the running counts are written every `refreshIntervalMs`;
 * - a series without a repeat for `finishAfterMs` gets its final count written and ends, and a
 *   single event is forgotten after as long: the next occurrence is a new Event.
 *
 * Unlike client-go, the note is part of what makes occurrences the same: one Node carries the
 * events of all its drivers, and `InvalidInventory` of two drivers are two stories.
 *
 * Events are best effort: a failed write is logged and counted, never retried, and never holds
 * up the caller (`record` returns at once). A repeat after a failed create patches, gets 404 and
 * creates the Event with its series, as client-go does.
 */
export class EventRecorder {
  private readonly cache = new Map<string, CachedEvent>();
  private readonly clock: Clock;
  private readonly namespace: string;
  private readonly refreshIntervalMs: number;
  private readonly finishAfterMs: number;
  private readonly reportingInstance: string;
  private readonly timers = new Set<TimerHandle>();
  /**
   * The write under way, and those queued behind it: one at a time, in order, as client-go's
   * broadcaster hands Events to its sink from one goroutine. Written at once, a storm's Events
   * (a rolling restart: one per key lost, one per key back) or the final counts of every series
   * went out as that many concurrent requests, each on a socket and an HTTP parser of its own;
   * Node's pool keeps up to 1,000 parsers once freed. In the soak of 2026-12-02 19:25, jemalloc's
   * profiles held 3.5-4.5 MB from `Parser::New` in each syncer after the late storms and none
   * before (that these were the Events' parsers is our reading).
   */
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  private readonly maxQueued: number;
  /** Writes dropped since the queue last ran dry; the first drop of a backlog is logged. */
  private dropped = 0;
  private lastNanos = 0n;
  private forbiddenLogged = false;
  private closed = false;

  constructor(private readonly options: EventRecorderOptions) {
    this.clock = options.clock ?? systemClock;
    this.namespace = options.namespace ?? 'default';
    this.refreshIntervalMs = options.refreshIntervalMs ?? 30 * 60_000;
    this.finishAfterMs = options.finishAfterMs ?? 6 * 60_000;
    this.reportingInstance = options.reportingInstance.slice(0, REPORTING_INSTANCE_LIMIT);
    this.maxQueued = options.maxQueued ?? 1000;
  }

  /** Starts writing running series' counts and ending quiet series. */
  start(): void {
    this.every(this.refreshIntervalMs, () => {
      this.refresh();
    });
    this.every(this.finishAfterMs, () => {
      this.finish();
    });
  }

  /** Records one occurrence; returns at once. */
  record(occurrence: EventOccurrence): void {
    if (this.closed) return;
    const now = this.clock.now();
    const key = eventKey(occurrence);
    const cached = this.cache.get(key);
    if (cached === undefined) {
      const entry: CachedEvent = { event: this.newEvent(occurrence, now), lastAt: now };
      this.cache.set(key, entry);
      this.write(entry, occurrence, 'created');
      return;
    }
    cached.lastAt = now;
    const series = cached.event.series;
    if (series === undefined) {
      cached.event.series = { count: 2, lastObservedTime: microTime(now) };
      this.write(cached, occurrence, 'series');
      return;
    }
    series.count++;
    series.lastObservedTime = microTime(now);
    this.options.onRecord?.(occurrence, 'counted');
  }

  /** Writes the count of every running series (client-go's refreshExistingEventSeries). */
  refresh(): void {
    for (const entry of this.cache.values()) {
      if (entry.event.series !== undefined) this.write(entry, undefined, 'series');
    }
  }

  /** Ends the series and single events quiet for `finishAfterMs` (client-go's finishSeries). */
  finish(): void {
    const before = this.clock.now() - this.finishAfterMs;
    for (const [key, entry] of this.cache) {
      if (entry.lastAt > before) continue;
      this.cache.delete(key);
      // The series' final count; a single event was written when it happened.
      if (entry.event.series !== undefined) this.write(entry, undefined, 'series');
    }
  }

  /** Resolves when the writes queued (and those queued while it waits) are done. */
  async flush(): Promise<void> {
    while (this.queued > 0) await this.queue;
  }

  /** Stops the timers and waits for the writes under way. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) this.clock.clearTimer(timer);
    this.timers.clear();
    await this.flush();
  }

  private every(ms: number, run: () => void): void {
    const schedule = () => {
      if (this.closed) return;
      const timer = this.clock.setTimer(() => {
        this.timers.delete(timer);
        run();
        schedule();
      }, ms);
      this.timers.add(timer);
    };
    schedule();
  }

  private newEvent(occurrence: EventOccurrence, now: number): EventWrite {
    const { regarding, type, reason, action, note } = occurrence;
    return {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // As client-go names them: the object's name and the time in hex nanoseconds.
      metadata: {
        name: `${regarding.name}.${this.uniqueNanos(now).toString(16)}`,
        namespace: regarding.namespace ?? this.namespace,
      },
      eventTime: microTime(now),
      reportingController: this.options.reportingController,
      reportingInstance: this.reportingInstance,
      action,
      reason,
      regarding,
      note: cutToBytes(note, NOTE_LIMIT_BYTES),
      type,
    };
  }

  /** Nanoseconds since the epoch, strictly increasing: two events of one ms get two names. */
  private uniqueNanos(nowMs: number): bigint {
    const nanos = BigInt(nowMs) * 1_000_000n;
    this.lastNanos = nanos > this.lastNanos ? nanos : this.lastNanos + 1n;
    return this.lastNanos;
  }

  /**
   * Queues a write of the entry's current state after every write queued before it, or drops it
   * when `maxQueued` wait already: an API server that answers slowly (30 s timeouts, say) must
   * not make a storm's Events a backlog that grows without bound. What a dropped write loses
   * comes back as a failed one does: the entry stays cached, so its next write patches, gets 404
   * and creates the Event with its series.
   */
  private write(
    entry: CachedEvent,
    occurrence: EventOccurrence | undefined,
    kind: 'created' | 'series',
  ): void {
    if (this.queued > this.maxQueued) {
      if (this.dropped++ === 0) {
        this.options.logger.warn(
          { queued: this.maxQueued, reason: entry.event.reason },
          'events dropped: the API server is not keeping up with their writes',
        );
      }
      if (occurrence !== undefined) this.options.onRecord?.(occurrence, 'failed');
      return;
    }
    const snapshot = structuredClone(entry.event);
    this.queued++;
    this.queue = this.queue.then(async () => {
      try {
        await this.send(snapshot, kind);
        if (occurrence !== undefined) this.options.onRecord?.(occurrence, kind);
      } catch (error) {
        if (occurrence !== undefined) this.options.onRecord?.(occurrence, 'failed');
        this.reportFailure(snapshot, error);
      } finally {
        if (--this.queued === 0) this.dropped = 0;
      }
    });
  }

  private async send(event: EventWrite, kind: 'created' | 'series'): Promise<void> {
    if (kind === 'created' || event.series === undefined) {
      await this.options.sink.create(event);
      return;
    }
    const series: EventSeriesWrite = { ...event.series };
    // Gone (the server's event TTL, or the create failed): create it again, with its series.
    if (!(await this.options.sink.patchSeries(event, series))) {
      await this.options.sink.create(event);
    }
  }

  private reportFailure(event: EventWrite, error: unknown): void {
    const fields = {
      reason: event.reason,
      regarding: event.regarding.name,
      err: errorMessage(error),
    };
    if (kubeErrorCode(error) !== 'forbidden') {
      this.options.logger.warn(fields, 'event not recorded');
      return;
    }
    // Missing RBAC fails every event alike: say it once, not once per event.
    if (this.forbiddenLogged) return;
    this.forbiddenLogged = true;
    this.options.logger.warn(fields, 'events not recorded: no RBAC to create or patch events');
  }
}

/** What makes occurrences the same Event (client-go's getKey, plus type and note). */
function eventKey(occurrence: EventOccurrence): string {
  const { regarding: r, type, reason, action, note } = occurrence;
  return JSON.stringify([
    r.apiVersion,
    r.kind,
    r.namespace ?? '',
    r.name,
    r.uid,
    type,
    reason,
    action,
    note,
  ]);
}

/** MicroTime: RFC 3339 with six fractional digits, as the API server writes it. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** `text` cut to at most `limit` UTF-8 bytes, on a character boundary, marked with "…". */
function cutToBytes(text: string, limit: number): string {
  if (Buffer.byteLength(text) <= limit) return text;
  let cut = text.slice(0, limit);
  while (Buffer.byteLength(cut) > limit - 3) cut = cut.slice(0, -1);
  return `${cut}…`;
}
