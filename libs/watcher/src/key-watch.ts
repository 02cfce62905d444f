import { syncPriority } from '@slicekeeper/contracts';
import type {
  DriverInventory,
  Registration,
  SliceKey,
  StreamState,
  StreamStateName,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/runtime';
import { expireHealth, onlyHealthDiffers } from './device-health';
import { PluginStream } from './plugin-stream';
import type { PublisherConnector } from './publisher-connector';
import type { SnapshotWriter } from '@slicekeeper/state';
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
}

type Operation =
  | {
      kind: 'store';
      endpoint: string;
      inventory: DriverInventory;
      receivedAt: number;
      /** Why the sync after this store is asked for. */
      reason: SyncReason;
    }
  /** A message the stream could not take: stored as rejected, the published slices stay. */
  | { kind: 'reject'; endpoint: string; problem: string; receivedAt: number }
  | { kind: 'withdraw' };

type StoreOperation = Extract<Operation, { kind: 'store' | 'reject' }>;

/**
 * Everything the watcher does for one key: a {@link PluginStream} per registered endpoint, the
 * choice of the endpoint to publish from, the wipe timer, and the writes to Redis.
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
 *
 * Writes are serialized and coalesced: while one is in flight only the latest wanted state is
 * kept, so a burst of messages costs a few writes and the last inventory always wins. A sync that
 * reads the stream state (unreachable, reachable) is asked for after the state is written.
 */
export class KeyWatch {
  readonly key: SliceKey;
  private readonly options: KeyWatchOptions;
  private readonly streams = new Map<string, PluginStream>();
  private wipeTimer: TimerHandle | undefined;
  private wiped: { at: number } | undefined;
  /** The inventory last handed to the writer (by reference), or `withdrawn`. */
  private published: DriverInventory | 'withdrawn' | undefined;
  /** The active stream's latest message (by reference) and when it arrived. */
  private received: { inventory: DriverInventory; at: number } | undefined;
  private healthTimer: TimerHandle | undefined;
  /** Since when no stream is live after one failed, ms since the epoch. */
  private unreachableSince: number | undefined;
  private pending: Operation | undefined;
  private lastStore: StoreOperation | undefined;
  private owedSync: SyncReason | undefined;
  private stateDirty = false;
  private recordedState = '';
  private summary: StreamState | undefined;
  private draining: Promise<void> | undefined;
  private retryTimer: { handle: TimerHandle; resolve: () => void } | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: KeyWatchOptions) {
    this.options = options;
    this.key = options.key;
  }

  /** The key's state as recorded in Redis, once known. */
  get state(): StreamState | undefined {
    return this.summary;
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
    if (this.closing !== undefined) return;
    const wanted = new Map(registrations.map((r) => [r.endpoint, r]));
    for (const [endpoint, stream] of this.streams) {
      const registration = wanted.get(endpoint);
      if (registration === undefined) {
        stream.close('deregistered');
        this.streams.delete(endpoint);
      } else if (registration.sequence !== stream.registration.sequence) {
        stream.close('re-registered');
        this.streams.delete(endpoint);
      }
    }
    for (const registration of wanted.values()) {
      if (!this.streams.has(registration.endpoint)) this.open(registration);
    }
    this.evaluate();
  }

  /**
   * Stores the current inventory again (a no-op when Redis still has it). Called after Redis
   * reconnects: if it came back empty, the live snapshots are rewritten.
   */
  republish(): void {
    if (this.closing !== undefined) return;
    if (this.published !== 'withdrawn' && this.lastStore) this.pending ??= this.lastStore;
    this.stateDirty = true;
    this.kick();
  }

  /** Cancels every stream and timer and waits for an in-flight write. Idempotent. */
  close(reason: string): Promise<void> {
    this.closing ??= (async () => {
      for (const stream of this.streams.values()) stream.close(reason);
      this.streams.clear();
      this.stopWipeTimer();
      this.stopHealthTimer();
      this.pending = undefined;
      this.owedSync = undefined;
      this.stateDirty = false;
      if (this.retryTimer !== undefined) {
        this.options.clock.clearTimer(this.retryTimer.handle);
        this.retryTimer.resolve();
      }
      await this.draining;
    })();
    return this.closing;
  }

  private open(registration: Registration): void {
    const stream = new PluginStream({
      registration,
      connector: this.options.connector,
      clock: this.options.clock,
      ...(this.options.backoff === undefined ? {} : { backoff: this.options.backoff }),
      logger: this.options.logger.child({
        endpoint: registration.endpoint,
        sequence: registration.sequence,
      }),
      onChange: () => {
        this.evaluate();
      },
      onMessage: () => {
        this.options.metrics?.messages.inc();
      },
      onReconnect: () => {
        this.options.metrics?.reconnects.inc();
      },
      onRejected: (rejecting, problem) => {
        this.rejected(rejecting, problem);
      },
    });
    this.streams.set(registration.endpoint, stream);
    stream.start();
  }

  /** Decides what the key's streams mean for its snapshot; runs after every stream event. */
  private evaluate(): void {
    if (this.closing !== undefined) return;
    const ordered = this.pluginStreams;
    const active = ordered.find((s) => s.state === 'streaming');
    const decider = active ?? ordered[0];
    if (decider === undefined) return;
    if (active !== undefined) {
      this.stopWipeTimer();
      this.wiped = undefined;
      this.setReachable();
      const inventory = active.latest;
      if (inventory !== undefined && inventory !== this.received?.inventory) {
        this.received = { inventory, at: active.lastMessageAt ?? this.options.clock.now() };
        this.publishReceived(active.endpoint);
      }
    } else {
      // The health clock keeps running: a stream that stopped sends no updates either.
      if (decider.state === 'ended') {
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
        if (this.wiped === undefined) this.startWipeTimer();
      }
    }
    this.updateSummary(decider, active !== undefined);
  }

  /**
   * Passes a sync outcome on to the driver (`NotifyPublishStatus`) over the stream that
   * publishes the key, when it is live; see {@link PluginStream.notify}.
   */
  notify(status: SyncStatus): void {
    if (this.closing !== undefined) return;
    this.pluginStreams.find((s) => s.state === 'streaming')?.notify(status);
  }

  /**
   * Stores the received inventory as it stands now (devices whose health timed out become
   * `unknown`), and sets the timer of the next health timeout.
   */
  private publishReceived(endpoint: string): void {
    const received = this.received;
    if (received === undefined) return;
    const now = this.options.clock.now();
    const { inventory, nextDeadline } = expireHealth(received.inventory, received.at, now);
    this.stopHealthTimer();
    if (nextDeadline !== undefined) {
      this.healthTimer = this.options.clock.setTimer(() => {
        this.healthTimer = undefined;
        this.publishReceived(endpoint);
      }, nextDeadline - now);
    }
    if (inventory === this.published) return;
    const previous = this.published;
    this.published = inventory;
    const healthOnly =
      previous !== undefined && previous !== 'withdrawn' && onlyHealthDiffers(previous, inventory);
    this.enqueueOperation({
      kind: 'store',
      endpoint,
      inventory,
      receivedAt: inventory === received.inventory ? received.at : now,
      reason: healthOnly ? 'health' : 'snapshot',
    });
  }

  private stopHealthTimer(): void {
    if (this.healthTimer === undefined) return;
    this.options.clock.clearTimer(this.healthTimer);
    this.healthTimer = undefined;
  }

  private setUnreachable(since: number): void {
    if (this.unreachableSince !== undefined) return;
    this.unreachableSince = since;
    this.options.logger.warn("stream lost, tainting the key's devices driver-unreachable");
    this.owe('unreachable');
  }

  private setReachable(): void {
    if (this.unreachableSince === undefined) return;
    this.unreachableSince = undefined;
    this.options.logger.info('stream back, removing the driver-unreachable taint');
    this.owe('reachable');
  }

  /**
   * Asks for a sync (the caller kicks the writes); of several owed at once, the one of the
   * highest priority is asked for.
   */
  private owe(reason: SyncReason): void {
    if (this.owedSync === undefined || syncPriority(reason) < syncPriority(this.owedSync)) {
      this.owedSync = reason;
    }
  }

  /** A message of `stream` was rejected: report it if that stream decides the key. */
  private rejected(stream: PluginStream, problem: string): void {
    if (this.closing !== undefined) return;
    const ordered = this.pluginStreams;
    const decider = ordered.find((s) => s.state === 'streaming') ?? ordered[0];
    if (decider !== stream) return;
    this.options.logger.warn({ problem }, 'message rejected');
    this.published = undefined;
    this.enqueueOperation({
      kind: 'reject',
      endpoint: stream.endpoint,
      problem,
      receivedAt: this.options.clock.now(),
    });
  }

  private withdraw(): void {
    this.stopHealthTimer();
    this.received = undefined;
    if (this.published === 'withdrawn') return;
    this.published = 'withdrawn';
    this.enqueueOperation({ kind: 'withdraw' });
  }

  private startWipeTimer(): void {
    if (this.wipeTimer !== undefined) return;
    this.wipeTimer = this.options.clock.setTimer(() => {
      this.wipeTimer = undefined;
      this.wiped = { at: this.options.clock.now() };
      this.options.logger.warn(
        { wipeDelayMs: this.options.wipeDelayMs },
        'no live stream, withdrawing slices',
      );
      this.withdraw();
      this.evaluate();
    }, this.options.wipeDelayMs);
  }

  private stopWipeTimer(): void {
    if (this.wipeTimer === undefined) return;
    this.options.clock.clearTimer(this.wipeTimer);
    this.wipeTimer = undefined;
  }

  private updateSummary(decider: PluginStream, live: boolean): void {
    const state: StreamStateName =
      !live && this.wiped !== undefined
        ? 'wiped'
        : decider.state === 'closed'
          ? 'ended'
          : decider.state;
    const since = state === 'wiped' && this.wiped !== undefined ? this.wiped.at : decider.since;
    const summary: StreamState = {
      state,
      endpoint: decider.endpoint,
      since: new Date(since).toISOString(),
      reconnects: decider.reconnects,
    };
    if (decider.lastMessageAt !== undefined) {
      summary.lastMessageAt = new Date(decider.lastMessageAt).toISOString();
    }
    if (decider.error !== undefined && state !== 'streaming') summary.error = decider.error;
    if (this.unreachableSince !== undefined) {
      summary.unreachableSince = new Date(this.unreachableSince).toISOString();
    }
    this.summary = summary;
    const identity = `${state} ${summary.endpoint} ${summary.since} ${summary.reconnects} ${summary.unreachableSince ?? ''}`;
    if (identity !== this.recordedState) {
      this.recordedState = identity;
      this.stateDirty = true;
      this.kick();
    }
  }

  private enqueueOperation(operation: Operation): void {
    this.pending = operation;
    if (operation.kind !== 'withdraw') this.lastStore = operation;
    this.kick();
  }

  private kick(): void {
    if (this.draining !== undefined || this.closing !== undefined) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** Applies the wanted writes one at a time until none is left; retries Redis failures. */
  private async drain(): Promise<void> {
    while (this.closing === undefined) {
      try {
        const operation = this.pending;
        if (operation !== undefined) {
          this.pending = undefined;
          try {
            await this.apply(operation);
          } catch (error) {
            this.pending ??= operation;
            throw error;
          }
        } else if (this.owedSync !== undefined && !(this.stateDirty && readsState(this.owedSync))) {
          const reason = this.owedSync;
          await this.options.queue.enqueue(this.key, reason);
          if (this.owedSync === reason) this.owedSync = undefined;
        } else if (this.stateDirty && this.summary !== undefined) {
          this.stateDirty = false;
          try {
            await this.options.writer.writeState(this.key, this.summary);
          } catch (error) {
            this.stateDirty = true;
            throw error;
          }
        } else {
          return;
        }
      } catch (error) {
        this.options.logger.warn({ err: errorMessage(error) }, 'redis write failed, retrying');
        await this.retryDelay();
      }
    }
  }

  private async apply(operation: Operation): Promise<void> {
    if (operation.kind !== 'withdraw') {
      const { writer } = this.options;
      const receivedAt = new Date(operation.receivedAt);
      const result =
        operation.kind === 'store'
          ? await writer.store(this.key, operation.endpoint, operation.inventory, receivedAt)
          : await writer.reject(this.key, operation.endpoint, operation.problem, receivedAt);
      switch (result.kind) {
        case 'stored':
          this.options.metrics?.snapshots.inc({ result: 'stored' });
          this.options.metrics?.snapshotBytes.observe(result.bytes);
          this.options.logger.debug({ generation: result.generation }, 'snapshot stored');
          this.owe(storedReason(operation, result.generation));
          this.stateDirty = true;
          return;
        case 'unsynced':
          this.options.metrics?.snapshots.inc({ result: 'unchanged' });
          this.owe(storedReason(operation, 0));
          return;
        case 'unchanged':
          this.options.metrics?.snapshots.inc({ result: 'unchanged' });
          return;
        case 'unregistered':
          // Removed: the registration follower closes this watch. Nothing of it is published.
          this.options.logger.debug('not registered, snapshot not stored');
          return;
        case 'not-owner':
          this.notOwner();
          return;
      }
    }
    const result = await this.options.writer.withdraw(this.key);
    if (result.kind === 'withdrawn') {
      this.options.metrics?.snapshots.inc({ result: 'withdrawn' });
      this.options.logger.info('snapshot withdrawn');
      this.owe('stream-lost');
    } else if (result.kind === 'not-owner') {
      this.notOwner();
    }
  }

  private notOwner(): void {
    this.options.logger.warn('lease held by another replica, letting go');
    this.options.onNotOwner?.();
  }

  private retryDelay(): Promise<void> {
    return new Promise<void>((resolve) => {
      const handle = this.options.clock.setTimer(() => {
        this.retryTimer = undefined;
        resolve();
      }, this.options.retryDelayMs ?? 1000);
      this.retryTimer = { handle, resolve };
    });
  }
}

/** Whether a sync asked for `reason` depends on the stream state: it is asked for after it. */
function readsState(reason: SyncReason): boolean {
  return reason === 'unreachable' || reason === 'reachable';
}

/** Why the sync after a store is asked for: a key's very first snapshot is a new node's. */
function storedReason(operation: StoreOperation, generation: number): SyncReason {
  if (operation.kind === 'store' && operation.reason === 'health') return 'health';
  return generation === 1 ? 'first-snapshot' : 'snapshot';
}
