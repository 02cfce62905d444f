import type {
  Registration,
  SliceKey,
  StreamState,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import type { Logger } from '@slicekeeper/observability';
import type { SnapshotWriter } from '@slicekeeper/state';
import type { Tracing } from '@slicekeeper/telemetry';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/time';
import { CoalescingWriter } from './coalescing-writer';
import type { Writes } from './coalescing-writer';
import { initialKeyWatchState, stepKeyWatch } from './key-watch-state';
import type {
  KeyWatchEffect,
  KeyWatchEvent,
  KeyWatchState,
  StreamView,
  TimerKind,
} from './key-watch-state';
import { PluginStream } from './plugin-stream';
import type { PublisherConnector } from './publisher-connector';
import type { SyncEnqueuer } from './sync-enqueuer';
import type { WatcherMetrics } from './watcher-metrics';

export interface KeyWatchOptions {
  key: SliceKey;
  writer: Pick<SnapshotWriter, 'store' | 'reject' | 'withdraw' | 'writeState'>;
  queue: SyncEnqueuer;
  connector: PublisherConnector;
  clock: Clock;
  backoff?: BackoffOptions;
  /** No live stream for this long withdraws the key's slices, ms. */
  wipeDelayMs: number;
  /** Wait before retrying a failed Redis write, ms. @defaultValue 1000 */
  retryDelayMs?: number;
  /** The key's child logger; each stream gets its own child of it. */
  logger: Logger;
  /** None when unset. */
  metrics?: WatcherMetrics;
  /** Called when a write found the key's lease held by another replica. */
  onNotOwner?: () => void;
  /**
   * Spans of each message, each snapshot write and each sync asked for; see {@link PluginStream}
   * and {@link CoalescingWriter}. None when unset (tracing off).
   */
  tracing?: Tracing;
}

/**
 * Everything the watcher does for one key: a {@link PluginStream} per registered endpoint, and
 * the driver of the key's state machine ({@link stepKeyWatch}, which decides what the streams
 * mean for the key's snapshot): it turns stream callbacks and timers into events, and executes
 * the effects: streams opened and closed, timers on the injected clock, writes handed to a
 * {@link CoalescingWriter}.
 */
export class KeyWatch {
  readonly key: SliceKey;
  private readonly options: KeyWatchOptions;
  private readonly streams = new Map<string, PluginStream>();
  private readonly timers = new Map<TimerKind, TimerHandle>();
  private readonly writer: CoalescingWriter;
  private machine: KeyWatchState;
  /** Events raised while a step's effects run (a stream opened reports at once): run next. */
  private readonly inbox: KeyWatchEvent[] = [];
  private stepping = false;
  private closing: Promise<void> | undefined;

  constructor(options: KeyWatchOptions) {
    this.options = options;
    this.key = options.key;
    this.machine = initialKeyWatchState({ wipeDelayMs: options.wipeDelayMs });
    this.writer = new CoalescingWriter({
      key: options.key,
      writer: options.writer,
      queue: options.queue,
      clock: options.clock,
      logger: options.logger,
      ...(options.retryDelayMs === undefined ? {} : { retryDelayMs: options.retryDelayMs }),
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      ...(options.onNotOwner === undefined ? {} : { onNotOwner: options.onNotOwner }),
      ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
    });
  }

  /** The key's state as recorded in Redis, once known. */
  get state(): StreamState | undefined {
    return this.machine.summary;
  }

  /** The key's streams, most recently registered first. */
  get pluginStreams(): PluginStream[] {
    return [...this.streams.values()].sort(
      (a, b) => b.registration.sequence - a.registration.sequence,
    );
  }

  /**
   * Makes the streams match the key's registrations: opens new endpoints, closes removed ones,
   * and replaces the stream of an endpoint that registered again (a restarted plugin).
   */
  setRegistrations(registrations: readonly Registration[]): void {
    this.dispatch({ kind: 'registrations-changed', registrations, now: this.options.clock.now() });
  }

  /**
   * Stores the current inventory again (a no-op when Redis still has it). Called after Redis
   * reconnects: if it came back empty, the live snapshots are rewritten.
   */
  republish(): void {
    if (this.closing !== undefined) return;
    this.writer.republish();
  }

  /**
   * Passes a sync outcome on to the driver (`NotifyPublishStatus`) over the stream that
   * publishes the key, when it is live; see {@link PluginStream.notify}.
   */
  notify(status: SyncStatus): void {
    if (this.closing !== undefined) return;
    this.pluginStreams.find((s) => s.state === 'streaming')?.notify(status);
  }

  /** Cancels every stream and timer and waits for an in-flight write. Idempotent. */
  close(reason: string): Promise<void> {
    this.closing ??= (async () => {
      for (const stream of this.streams.values()) stream.close(reason);
      this.streams.clear();
      for (const handle of this.timers.values()) this.options.clock.clearTimer(handle);
      this.timers.clear();
      this.inbox.length = 0;
      await this.writer.close();
    })();
    return this.closing;
  }

  private dispatch(event: KeyWatchEvent): void {
    if (this.closing !== undefined) return;
    this.inbox.push(event);
    if (this.stepping) return;
    this.stepping = true;
    try {
      // close() empties the inbox: nothing is stepped after it.
      for (let next = this.inbox.shift(); next !== undefined; next = this.inbox.shift()) {
        const { state, effects } = stepKeyWatch(this.machine, next);
        this.machine = state;
        this.execute(effects);
      }
    } finally {
      this.stepping = false;
    }
  }

  /**
   * Runs a step's effects. Its writes go to the writer in one submission, so that the writer
   * orders them as a whole (a sync that reads the stream state after the state it reads).
   */
  private execute(effects: readonly KeyWatchEffect[]): void {
    const writes: Writes = {};
    const syncs: SyncReason[] = [];
    for (const effect of effects) {
      switch (effect.kind) {
        case 'open-stream':
          this.open(effect.registration);
          break;
        case 'close-stream':
          this.streams.get(effect.endpoint)?.close(effect.reason);
          this.streams.delete(effect.endpoint);
          break;
        case 'set-timer':
          this.setTimer(effect.timer, effect.at);
          break;
        case 'clear-timer':
          this.clearTimer(effect.timer);
          break;
        case 'write-snapshot':
          writes.snapshot = effect.write;
          break;
        case 'record-state':
          writes.state = {
            value: effect.state,
            changed: effect.changed || writes.state?.changed === true,
          };
          break;
        case 'sync':
          syncs.push(effect.reason);
          break;
        case 'log':
          this.options.logger[effect.level](effect.fields ?? {}, effect.message);
          break;
      }
    }
    this.writer.submit({ ...writes, syncs });
  }

  private open(registration: Registration): void {
    const stream = new PluginStream({
      registration,
      connector: this.options.connector,
      clock: this.options.clock,
      ...(this.options.backoff === undefined ? {} : { backoff: this.options.backoff }),
      ...(this.options.tracing === undefined ? {} : { tracing: this.options.tracing }),
      logger: this.options.logger.child({
        endpoint: registration.endpoint,
        sequence: registration.sequence,
      }),
      onChange: (changed) => {
        if (this.streams.get(changed.endpoint) !== changed) return;
        this.dispatch({ kind: 'stream-changed', stream: viewOf(changed), now: this.now() });
      },
      onMessage: () => {
        this.options.metrics?.messages.inc();
      },
      onReconnect: () => {
        this.options.metrics?.reconnects.inc();
      },
      onRejected: (rejecting, problem, trace) => {
        if (this.streams.get(rejecting.endpoint) !== rejecting) return;
        const stream = viewOf(rejecting);
        this.dispatch({ kind: 'message-rejected', stream, problem, now: this.now(), trace });
      },
    });
    this.streams.set(registration.endpoint, stream);
    stream.start();
  }

  private setTimer(timer: TimerKind, at: number): void {
    this.clearTimer(timer);
    const handle = this.options.clock.setTimer(() => {
      this.timers.delete(timer);
      this.dispatch({ kind: 'timer-fired', timer, now: this.now() });
    }, at - this.now());
    this.timers.set(timer, handle);
  }

  private clearTimer(timer: TimerKind): void {
    const handle = this.timers.get(timer);
    if (handle === undefined) return;
    this.options.clock.clearTimer(handle);
    this.timers.delete(timer);
  }

  private now(): number {
    return this.options.clock.now();
  }
}

/** What the state machine is told of a stream. */
function viewOf(stream: PluginStream): StreamView {
  return {
    endpoint: stream.endpoint,
    sequence: stream.registration.sequence,
    state: stream.state,
    since: stream.since,
    reconnects: stream.reconnects,
    error: stream.error,
    lastRejection: stream.lastRejection,
    latest: stream.latest,
    lastMessageAt: stream.lastMessageAt,
    trace: stream.latestTrace,
  };
}
