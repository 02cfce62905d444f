import { syncPriority } from '@slicekeeper/contracts';
import type { DriverInventory, SliceKey, StreamState, SyncReason } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import type { SnapshotWriter } from '@slicekeeper/state';
import type { Clock, TimerHandle } from '@slicekeeper/time';
import type { SyncEnqueuer } from './sync-enqueuer';
import type { WatcherMetrics } from './watcher-metrics';

/** A write of the key's snapshot. */
export type SnapshotWrite =
  | {
      kind: 'store';
      endpoint: string;
      inventory: DriverInventory;
      /** ms since the epoch. */
      receivedAt: number;
      /** Why the sync after this store is asked for: `health` when only device health changed. */
      reason: 'snapshot' | 'health';
    }
  /** A message the stream could not take: stored as rejected, the published slices stay. */
  | { kind: 'reject'; endpoint: string; problem: string; receivedAt: number }
  | { kind: 'withdraw' };

/** What one step of the key asks to be written. */
export interface Writes {
  /** The snapshot write wanted now; replaces one that has not started yet. */
  snapshot?: SnapshotWrite;
  /**
   * The key's stream state as it stands, always kept as the one to write next; `changed` marks
   * it for writing (a new message alone changes only `lastMessageAt`, written with the next
   * stored snapshot).
   */
  state?: { value: StreamState; changed: boolean };
  /** Syncs to ask for; of several owed at once, the one of the highest priority is asked for. */
  syncs?: readonly SyncReason[];
}

export interface CoalescingWriterOptions {
  key: SliceKey;
  writer: Pick<SnapshotWriter, 'store' | 'reject' | 'withdraw' | 'writeState'>;
  queue: SyncEnqueuer;
  clock: Clock;
  /** Wait before retrying a failed Redis write, ms. @defaultValue 1000 */
  retryDelayMs?: number;
  logger: Logger;
  /** None when unset. */
  metrics?: WatcherMetrics;
  /** Called when a write found the key's lease held by another replica. */
  onNotOwner?: () => void;
}

/**
 * One key's Redis writes, serialized and coalesced: while a write is in flight only the latest
 * wanted snapshot and stream state are kept, so a burst of messages costs a few writes and the
 * last inventory always wins. In each round the snapshot goes first, then an owed sync, then the
 * stream state, except that a sync that reads the stream state (unreachable, reachable) is asked
 * for after the state is written. A failed write is retried after `retryDelayMs`.
 */
export class CoalescingWriter {
  private readonly options: CoalescingWriterOptions;
  private pending: SnapshotWrite | undefined;
  /** The last store or reject handed in, for {@link republish}; undefined after a withdrawal. */
  private lastStore: Exclude<SnapshotWrite, { kind: 'withdraw' }> | undefined;
  private owedSync: SyncReason | undefined;
  private state: StreamState | undefined;
  private stateDirty = false;
  private draining: Promise<void> | undefined;
  private retryTimer: { handle: TimerHandle; resolve: () => void } | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: CoalescingWriterOptions) {
    this.options = options;
  }

  /** Takes what a step of the key wants written and starts writing unless a write runs. */
  submit(writes: Writes): void {
    if (this.closing !== undefined) return;
    if (writes.snapshot !== undefined) {
      this.pending = writes.snapshot;
      this.lastStore = writes.snapshot.kind === 'withdraw' ? undefined : writes.snapshot;
    }
    if (writes.state !== undefined) {
      this.state = writes.state.value;
      if (writes.state.changed) this.stateDirty = true;
    }
    for (const reason of writes.syncs ?? []) this.owe(reason);
    this.kick();
  }

  /**
   * Writes the latest snapshot (unless withdrawn) and state again: a no-op store when Redis still
   * has them. Called after Redis reconnects: if it came back empty, they are rewritten.
   */
  republish(): void {
    if (this.closing !== undefined) return;
    if (this.lastStore !== undefined) this.pending ??= this.lastStore;
    this.stateDirty = true;
    this.kick();
  }

  /** Drops what is not written yet and waits for an in-flight write. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
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

  private owe(reason: SyncReason): void {
    if (this.owedSync === undefined || syncPriority(reason) < syncPriority(this.owedSync)) {
      this.owedSync = reason;
    }
  }

  private kick(): void {
    if (this.draining !== undefined || this.closing !== undefined || !this.hasWork()) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      // Work handed in after the drain's last look, before it settled.
      this.kick();
    });
  }

  private hasWork(): boolean {
    return (
      this.pending !== undefined ||
      this.owedSync !== undefined ||
      (this.stateDirty && this.state !== undefined)
    );
  }

  /** Applies the wanted writes one at a time until none is left; retries Redis failures. */
  private async drain(): Promise<void> {
    while (this.closing === undefined) {
      try {
        const write = this.pending;
        if (write !== undefined) {
          this.pending = undefined;
          try {
            await this.apply(write);
          } catch (error) {
            this.pending ??= write;
            throw error;
          }
        } else if (this.owedSync !== undefined && !(this.stateDirty && readsState(this.owedSync))) {
          const reason = this.owedSync;
          await this.options.queue.enqueue(this.options.key, reason);
          if (this.owedSync === reason) this.owedSync = undefined;
        } else if (this.stateDirty && this.state !== undefined) {
          this.stateDirty = false;
          try {
            await this.options.writer.writeState(this.options.key, this.state);
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

  private async apply(write: SnapshotWrite): Promise<void> {
    const { key, writer, metrics, logger } = this.options;
    if (write.kind === 'withdraw') {
      const result = await writer.withdraw(key);
      if (result.kind === 'withdrawn') {
        metrics?.snapshots.inc({ result: 'withdrawn' });
        logger.info('snapshot withdrawn');
        this.owe('stream-lost');
      } else if (result.kind === 'not-owner') {
        this.notOwner();
      }
      return;
    }
    const receivedAt = new Date(write.receivedAt);
    const result =
      write.kind === 'store'
        ? await writer.store(key, write.endpoint, write.inventory, receivedAt)
        : await writer.reject(key, write.endpoint, write.problem, receivedAt);
    switch (result.kind) {
      case 'stored':
        metrics?.snapshots.inc({ result: 'stored' });
        metrics?.snapshotBytes.observe(result.bytes);
        logger.debug({ generation: result.generation }, 'snapshot stored');
        this.owe(storedReason(write, result.generation));
        // Written again with the snapshot: its lastMessageAt moved on.
        this.stateDirty = true;
        return;
      case 'unsynced':
        metrics?.snapshots.inc({ result: 'unchanged' });
        this.owe(storedReason(write, 0));
        return;
      case 'unchanged':
        metrics?.snapshots.inc({ result: 'unchanged' });
        return;
      case 'unregistered':
        // Removed: the registration follower closes this watch. Nothing of it is published.
        logger.debug('not registered, snapshot not stored');
        return;
      case 'not-owner':
        this.notOwner();
        return;
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
function storedReason(write: SnapshotWrite, generation: number): SyncReason {
  if (write.kind === 'store' && write.reason === 'health') return 'health';
  return generation === 1 ? 'first-snapshot' : 'snapshot';
}
