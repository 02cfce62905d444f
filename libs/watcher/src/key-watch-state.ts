import type {
  DriverInventory,
  Registration,
  StreamState,
  StreamStateName,
  SyncReason,
} from '@slicekeeper/contracts';
import type { SpanContext } from '@slicekeeper/telemetry';
import type { SnapshotWrite } from './coalescing-writer';
import { expireHealth, onlyHealthDiffers } from './device-health';
import type { PluginStreamState } from './plugin-stream';

/** What the key's state machine knows of one endpoint's stream (a `PluginStream`'s getters). */
export interface StreamView {
  readonly endpoint: string;
  /** The registration's sequence: the most recently registered endpoint is preferred. */
  readonly sequence: number;
  readonly state: PluginStreamState;
  /** Since when the stream is in its state, ms since the epoch. */
  readonly since: number;
  readonly reconnects: number;
  readonly error: string | undefined;
  /** Why the plugin's last message was rejected, while the plugin keeps answering that way. */
  readonly lastRejection: string | undefined;
  /** The latest inventory received (by reference: a new message is a new object). */
  readonly latest: DriverInventory | undefined;
  /** When the latest message arrived, ms since the epoch. */
  readonly lastMessageAt: number | undefined;
  /** The receive span of `latest`, when tracing is on: the store of it links to it. */
  readonly trace?: SpanContext | undefined;
}

/** The timers a key runs: the wipe delay and the next device health timeout. */
export type TimerKind = 'wipe' | 'health';

/** Everything the watcher decides for one key; changed only by {@link stepKeyWatch}. */
export interface KeyWatchState {
  /** No live stream for this long withdraws the key's slices, ms. */
  readonly wipeDelayMs: number;
  readonly streams: ReadonlyMap<string, StreamView>;
  /** When the wipe timer fires, while it runs. */
  readonly wipeAt: number | undefined;
  /** When the key's slices were withdrawn for want of a live stream; cleared by one. */
  readonly wipedAt: number | undefined;
  /** The inventory last handed to the writer (by reference), or `withdrawn`. */
  readonly published: DriverInventory | 'withdrawn' | undefined;
  /** The deciding stream's latest message (by reference) and when it arrived. */
  readonly received: { readonly inventory: DriverInventory; readonly at: number } | undefined;
  /** The next device health timeout, while its timer runs, and the endpoint to store it for. */
  readonly health: { readonly at: number; readonly endpoint: string } | undefined;
  /** Since when no stream is live after one failed, ms since the epoch. */
  readonly unreachableSince: number | undefined;
  /** The key's stream state as last recorded, once known. */
  readonly summary: StreamState | undefined;
}

export type KeyWatchEvent =
  /** The key's registrations as they stand now. */
  | { kind: 'registrations-changed'; registrations: readonly Registration[]; now: number }
  /**
   * A stream changed state (connecting, streaming, EOF, Unimplemented, failed) or received a
   * message (a new `latest`).
   */
  | { kind: 'stream-changed'; stream: StreamView; now: number }
  /** A message of a stream could not be taken (too large, undecodable, unpublishable). */
  | {
      kind: 'message-rejected';
      stream: StreamView;
      problem: string;
      now: number;
      /** The rejected message's receive span, when tracing is on. */
      trace?: SpanContext | undefined;
    }
  | { kind: 'timer-fired'; timer: TimerKind; now: number };

export type KeyWatchEffect =
  | { kind: 'open-stream'; registration: Registration }
  | { kind: 'close-stream'; endpoint: string; reason: 'deregistered' | 're-registered' }
  /** Starts (or restarts) the timer of `timer` to fire at `at`, ms since the epoch. */
  | { kind: 'set-timer'; timer: TimerKind; at: number }
  | { kind: 'clear-timer'; timer: TimerKind }
  | { kind: 'write-snapshot'; write: SnapshotWrite }
  /** The key's stream state as it stands; `changed` when it differs from the one recorded. */
  | { kind: 'record-state'; state: StreamState; changed: boolean }
  | { kind: 'sync'; reason: SyncReason }
  | { kind: 'log'; level: 'info' | 'warn'; message: string; fields?: Record<string, unknown> };

export interface KeyWatchStep {
  state: KeyWatchState;
  effects: KeyWatchEffect[];
}

export function initialKeyWatchState(options: { wipeDelayMs: number }): KeyWatchState {
  return {
    wipeDelayMs: options.wipeDelayMs,
    streams: new Map(),
    wipeAt: undefined,
    wipedAt: undefined,
    published: undefined,
    received: undefined,
    health: undefined,
    unreachableSince: undefined,
    summary: undefined,
  };
}

/**
 * The per-key state machine of the plugin-watcher: no timers, no I/O, no clock (time comes in
 * the events). The driver (`KeyWatch`) executes the effects.
 *
 * Which endpoint publishes: the most recently registered one that is streaming (rolling driver
 * updates register the new plugin beside the old one). When none is streaming, the most recent
 * registration decides: EOF keeps the last inventory, Unimplemented withdraws it at once,
 * connecting/backoff starts the wipe timer, which withdraws it after `wipeDelayMs` unless a
 * stream comes back first.
 *
 * A stream that fails (an error, not EOF) makes the key unreachable until a stream streams
 * again: the recorded state carries `unreachableSince`, and a sync taints the key's devices at
 * once; a stream that comes back in time removes the taint, the wipe timer the slices.
 *
 * Device health with a timeout is kept here, where the messages arrive: when a device's timeout
 * passes without a new message, the snapshot is stored again with that device's health
 * `unknown`; the next message puts back what the driver says.
 */
export function stepKeyWatch(state: KeyWatchState, event: KeyWatchEvent): KeyWatchStep {
  const step = new Step(state, event.now);
  switch (event.kind) {
    case 'registrations-changed':
      step.setRegistrations(event.registrations);
      break;
    case 'stream-changed':
      step.see(event.stream);
      step.evaluate();
      break;
    case 'message-rejected':
      step.see(event.stream);
      step.rejected(event.stream.endpoint, event.problem, event.trace);
      break;
    case 'timer-fired':
      if (event.timer === 'wipe') step.wipe();
      else step.healthTimeout();
      break;
  }
  return { state: step.state, effects: step.effects };
}

type Draft = { -readonly [K in keyof KeyWatchState]: KeyWatchState[K] };

/** One transition: a copy of the state to change and the effects it asks for. */
class Step {
  readonly state: Draft;
  readonly effects: KeyWatchEffect[] = [];
  private readonly streams: Map<string, StreamView>;

  constructor(
    state: KeyWatchState,
    private readonly now: number,
  ) {
    this.streams = new Map(state.streams);
    this.state = { ...state, streams: this.streams };
  }

  setRegistrations(registrations: readonly Registration[]): void {
    const wanted = new Map(registrations.map((r) => [r.endpoint, r]));
    for (const [endpoint, stream] of this.streams) {
      const registration = wanted.get(endpoint);
      if (registration === undefined) this.closeStream(endpoint, 'deregistered');
      else if (registration.sequence !== stream.sequence) {
        this.closeStream(endpoint, 're-registered');
      }
    }
    for (const registration of wanted.values()) {
      if (this.streams.has(registration.endpoint)) continue;
      this.streams.set(registration.endpoint, {
        endpoint: registration.endpoint,
        sequence: registration.sequence,
        state: 'connecting',
        since: this.now,
        reconnects: 0,
        error: undefined,
        lastRejection: undefined,
        latest: undefined,
        lastMessageAt: undefined,
      });
      this.effects.push({ kind: 'open-stream', registration });
    }
    this.evaluate();
  }

  /** Takes in what a stream reports, unless it is no longer one of the key's. */
  see(stream: StreamView): void {
    if (this.streams.get(stream.endpoint)?.sequence !== stream.sequence) return;
    this.streams.set(stream.endpoint, stream);
  }

  /** Decides what the key's streams mean for its snapshot; runs after every stream event. */
  evaluate(): void {
    const ordered = this.ordered();
    const active = ordered.find((s) => s.state === 'streaming');
    const decider = active ?? ordered[0];
    if (decider === undefined) return;
    if (active !== undefined) {
      this.stopWipeTimer();
      this.state.wipedAt = undefined;
      this.setReachable();
      const inventory = active.latest;
      if (inventory !== undefined && inventory !== this.state.received?.inventory) {
        this.state.received = { inventory, at: active.lastMessageAt ?? this.now };
        this.publishReceived(active.endpoint, active.trace);
      }
    } else if (decider.state === 'ended') {
      // The health clock keeps running: a stream that stopped sends no updates either.
      this.stopWipeTimer();
      this.setReachable();
    } else if (decider.state === 'unimplemented') {
      this.stopWipeTimer();
      this.setReachable();
      this.withdraw();
    } else if (decider.lastRejection !== undefined) {
      // The driver answers but sends what cannot be taken (too large, undecodable): its bug,
      // reported as such, not an outage; its last valid slices stay.
      this.stopWipeTimer();
      this.setReachable();
    } else {
      // A stream in backoff failed; one connecting again keeps what the key was.
      if (decider.state === 'backoff') this.setUnreachable(decider.since);
      if (this.state.wipedAt === undefined) this.startWipeTimer();
    }
    this.recordState(decider, active !== undefined);
  }

  /** A message of the stream at `endpoint` was rejected: stored if that stream decides the key. */
  rejected(endpoint: string, problem: string, trace: SpanContext | undefined): void {
    const ordered = this.ordered();
    const decider = ordered.find((s) => s.state === 'streaming') ?? ordered[0];
    if (decider?.endpoint !== endpoint) return;
    this.log('warn', 'message rejected', { problem });
    this.state.published = undefined;
    this.effects.push({
      kind: 'write-snapshot',
      write: { kind: 'reject', endpoint, problem, receivedAt: this.now, trace },
    });
  }

  wipe(): void {
    if (this.state.wipeAt === undefined) return;
    this.state.wipeAt = undefined;
    this.state.wipedAt = this.now;
    this.log('warn', 'no live stream, withdrawing slices', { wipeDelayMs: this.state.wipeDelayMs });
    this.withdraw();
    this.evaluate();
  }

  healthTimeout(): void {
    const health = this.state.health;
    if (health === undefined) return;
    this.state.health = undefined;
    this.publishReceived(health.endpoint, undefined);
  }

  /** The key's streams, most recently registered first. */
  private ordered(): StreamView[] {
    return [...this.streams.values()].sort((a, b) => b.sequence - a.sequence);
  }

  private closeStream(endpoint: string, reason: 'deregistered' | 're-registered'): void {
    this.streams.delete(endpoint);
    this.effects.push({ kind: 'close-stream', endpoint, reason });
  }

  /**
   * Stores the received inventory as it stands now (devices whose health timed out become
   * `unknown`), and sets the timer of the next health timeout. `trace`: the receive span of the
   * message that brought it; none for a store no message made (a health timeout).
   */
  private publishReceived(endpoint: string, trace: SpanContext | undefined): void {
    const received = this.state.received;
    if (received === undefined) return;
    const { inventory, nextDeadline } = expireHealth(received.inventory, received.at, this.now);
    this.stopHealthTimer();
    if (nextDeadline !== undefined) {
      this.state.health = { at: nextDeadline, endpoint };
      this.effects.push({ kind: 'set-timer', timer: 'health', at: nextDeadline });
    }
    const previous = this.state.published;
    if (inventory === previous) return;
    this.state.published = inventory;
    const healthOnly =
      previous !== undefined && previous !== 'withdrawn' && onlyHealthDiffers(previous, inventory);
    this.effects.push({
      kind: 'write-snapshot',
      write: {
        kind: 'store',
        endpoint,
        inventory,
        receivedAt: inventory === received.inventory ? received.at : this.now,
        reason: healthOnly ? 'health' : 'snapshot',
        trace,
      },
    });
  }

  private withdraw(): void {
    this.stopHealthTimer();
    this.state.received = undefined;
    if (this.state.published === 'withdrawn') return;
    this.state.published = 'withdrawn';
    this.effects.push({ kind: 'write-snapshot', write: { kind: 'withdraw' } });
  }

  private setUnreachable(since: number): void {
    if (this.state.unreachableSince !== undefined) return;
    this.state.unreachableSince = since;
    this.log('warn', "stream lost, tainting the key's devices driver-unreachable");
    this.effects.push({ kind: 'sync', reason: 'unreachable' });
  }

  private setReachable(): void {
    if (this.state.unreachableSince === undefined) return;
    this.state.unreachableSince = undefined;
    this.log('info', 'stream back, removing the driver-unreachable taint');
    this.effects.push({ kind: 'sync', reason: 'reachable' });
  }

  private startWipeTimer(): void {
    if (this.state.wipeAt !== undefined) return;
    this.state.wipeAt = this.now + this.state.wipeDelayMs;
    this.effects.push({ kind: 'set-timer', timer: 'wipe', at: this.state.wipeAt });
  }

  private stopWipeTimer(): void {
    if (this.state.wipeAt === undefined) return;
    this.state.wipeAt = undefined;
    this.effects.push({ kind: 'clear-timer', timer: 'wipe' });
  }

  private stopHealthTimer(): void {
    if (this.state.health === undefined) return;
    this.state.health = undefined;
    this.effects.push({ kind: 'clear-timer', timer: 'health' });
  }

  private recordState(decider: StreamView, live: boolean): void {
    const wipedAt = live ? undefined : this.state.wipedAt;
    const state: StreamStateName =
      wipedAt !== undefined ? 'wiped' : decider.state === 'closed' ? 'ended' : decider.state;
    const summary: StreamState = {
      state,
      endpoint: decider.endpoint,
      since: new Date(wipedAt ?? decider.since).toISOString(),
      reconnects: decider.reconnects,
    };
    if (decider.lastMessageAt !== undefined) {
      summary.lastMessageAt = new Date(decider.lastMessageAt).toISOString();
    }
    if (decider.error !== undefined && state !== 'streaming') summary.error = decider.error;
    if (this.state.unreachableSince !== undefined) {
      summary.unreachableSince = new Date(this.state.unreachableSince).toISOString();
    }
    const changed =
      this.state.summary === undefined || identity(summary) !== identity(this.state.summary);
    this.state.summary = summary;
    this.effects.push({ kind: 'record-state', state: summary, changed });
  }

  private log(level: 'info' | 'warn', message: string, fields?: Record<string, unknown>): void {
    this.effects.push(
      fields === undefined
        ? { kind: 'log', level, message }
        : { kind: 'log', level, message, fields },
    );
  }
}

/** What of a stream state is worth a write: not `lastMessageAt`, which every message moves. */
function identity(state: StreamState): string {
  return `${state.state} ${state.endpoint} ${state.since} ${state.reconnects} ${state.unreachableSince ?? ''}`;
}
