import { MAX_SNAPSHOT_TRACE_LINKS, syncPriority } from '@slicekeeper/contracts';
import type { DriverInventory, SliceKey, StreamState, SyncReason } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import type { SnapshotWriter, StoreResult, WithdrawResult } from '@slicekeeper/state';
import {
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_SLICEKEEPER_OUTCOME,
  ATTR_SLICEKEEPER_SNAPSHOT_GENERATION,
  SpanKind,
  formatTraceparent,
} from '@slicekeeper/telemetry';
import type { Span, SpanContext, Tracing } from '@slicekeeper/telemetry';
import type { Clock, TimerHandle } from '@slicekeeper/time';
import { publishSync } from './sync-enqueuer';
import type { SyncEnqueuer } from './sync-enqueuer';
import { STORE_SPAN, keyAttributes, startSpan } from './watcher-spans';
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
      /**
       * The receive span of the message that brought the inventory (tracing on); none for a
       * store no message made (a health timeout).
       */
      trace?: SpanContext | undefined;
    }
  /** A message the stream could not take: stored as rejected, the published slices stay. */
  | {
      kind: 'reject';
      endpoint: string;
      problem: string;
      receivedAt: number;
      /** The rejected message's receive span (tracing on). */
      trace?: SpanContext | undefined;
    }
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
  /** Spans of the snapshot writes and of the syncs asked for; none when unset (tracing off). */
  tracing?: Tracing;
}

/**
 * One key's Redis writes, serialized and coalesced: while a write is in flight only the latest
 * wanted snapshot and stream state are kept, so a burst of messages costs a few writes and the
 * last inventory always wins. In each round the snapshot goes first, then an owed sync, then the
 * stream state, except that a sync that reads the stream state (unreachable, reachable) is asked
 * for after the state is written. A failed write is retried after `retryDelayMs`.
 *
 * With tracing on, each store (or reject) write is a `store snapshot` span: a child of the
 * receive span of the newest message it stands for, linked to the receive spans of the others
 * merged into it (the newest {@link MAX_SNAPSHOT_TRACE_LINKS} in all), whose traceparents are
 * written into the snapshot for the syncer. A failed write ends its span with status error; its
 * retry has a span of its own. The sync the store owes is asked for in a `publish sync` span,
 * its child, while the store span is still open. A store that wrote nothing but still owes a sync
 * (`unsynced`) joins the sync an earlier store is yet to ask for: that one stays its parent.
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
  /**
   * Tracing on: the receive spans of the messages the pending write stands for, oldest first
   * (those of writes it replaced, and of a failed write it follows).
   */
  private received: readonly SpanContext[] = NONE;
  /** Tracing on: the store span the owed sync is asked for under; open until the first try. */
  private owedBy: { span: Span | undefined; context: SpanContext } | undefined;

  constructor(options: CoalescingWriterOptions) {
    this.options = options;
  }

  /** Takes what a step of the key wants written and starts writing unless a write runs. */
  submit(writes: Writes): void {
    if (this.closing !== undefined) return;
    const snapshot = writes.snapshot;
    if (snapshot !== undefined) {
      this.pending = snapshot;
      if (snapshot.kind === 'withdraw') {
        this.lastStore = undefined;
        this.received = NONE;
      } else {
        this.lastStore = snapshot;
        if (snapshot.trace !== undefined) this.received = newest(this.received, [snapshot.trace]);
      }
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
    // Stands for no message: the messages were stored (and traced) when they came.
    if (this.lastStore !== undefined) this.pending ??= { ...this.lastStore, trace: undefined };
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
      this.owedBy?.span?.end();
      this.owedBy = undefined;
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
          const received = this.received;
          this.received = NONE;
          try {
            await this.apply(write, received);
          } catch (error) {
            this.pending ??= write;
            // Whatever is pending now stands for the failed write's messages as well.
            if (this.pending.kind !== 'withdraw') this.received = newest(received, this.received);
            throw error;
          }
        } else if (this.owedSync !== undefined && !(this.stateDirty && readsState(this.owedSync))) {
          const reason = this.owedSync;
          await (this.options.tracing === undefined
            ? this.options.queue.enqueue(this.options.key, reason)
            : this.publish(reason));
          if (this.owedSync === reason) {
            this.owedSync = undefined;
            this.owedBy = undefined;
          }
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

  private async apply(write: SnapshotWrite, received: readonly SpanContext[]): Promise<void> {
    const { key, writer, metrics, logger, tracing } = this.options;
    if (write.kind === 'withdraw') {
      // The state that explains the withdrawal (wiped, unimplemented) goes with it, in one step.
      const state = this.stateDirty ? this.state : undefined;
      this.stateDirty = false;
      let result: WithdrawResult;
      try {
        result = await writer.withdraw(key, state);
      } catch (error) {
        if (state !== undefined) this.stateDirty = true;
        throw error;
      }
      if (result.kind === 'withdrawn') {
        metrics?.snapshots.inc({ result: 'withdrawn' });
        logger.info('snapshot withdrawn');
        this.owe('stream-lost');
        this.owedBy?.span?.end();
        this.owedBy = undefined;
      } else if (result.kind === 'not-owner') {
        this.notOwner();
      }
      return;
    }
    if (tracing === undefined) {
      this.record(write, await this.store(write, undefined));
      return;
    }
    const parent = received.at(-1);
    const span = startSpan(tracing, STORE_SPAN, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [ATTR_DB_SYSTEM_NAME]: 'redis',
        [ATTR_DB_OPERATION_NAME]: 'EVALSHA',
        ...keyAttributes(key),
      },
      links: received.slice(0, -1).map((context) => ({ context })),
      ...(parent === undefined ? {} : { parent }),
    });
    let outcome: { result: StoreResult; owes: boolean };
    try {
      outcome = await tracing.within(span, async () => {
        const result = await this.store(write, received.map(formatTraceparent));
        span.setAttribute(ATTR_SLICEKEEPER_OUTCOME, result.kind);
        if (result.kind === 'stored') {
          span.setAttribute(ATTR_SLICEKEEPER_SNAPSHOT_GENERATION, result.generation);
        }
        return { result, owes: this.record(write, result) };
      });
    } catch (error) {
      span.end();
      throw error;
    }
    // A store that wrote nothing owes the sync an earlier store is yet to ask for, if any: that
    // one stays its parent, so the enqueue is in the trace of the change that wrote the snapshot.
    const joinsEarlier = outcome.result.kind === 'unsynced' && this.owedBy?.span !== undefined;
    if (outcome.owes && !joinsEarlier) {
      // Ended once the sync it owes is asked for (or by a later store that owes a newer one).
      this.owedBy?.span?.end();
      this.owedBy = { span, context: span.spanContext() };
    } else {
      span.end();
    }
  }

  /**
   * Writes a store or a reject, with the traceparents of the messages it stands for and the
   * latest stream state, which a stored snapshot writes in the same step (its lastMessageAt moved
   * on). A state that came while it was stored is written after.
   */
  private async store(
    write: Exclude<SnapshotWrite, { kind: 'withdraw' }>,
    traceparents: string[] | undefined,
  ): Promise<StoreResult> {
    const { key, writer } = this.options;
    const receivedAt = new Date(write.receivedAt);
    const state = this.state;
    const options = {
      ...(traceparents === undefined ? {} : { traceparents }),
      ...(state === undefined ? {} : { state }),
    };
    const result = await (write.kind === 'store'
      ? writer.store(key, write.endpoint, write.inventory, receivedAt, options)
      : writer.reject(key, write.endpoint, write.problem, receivedAt, options));
    if (result.kind === 'stored' && state !== undefined) this.stateDirty = this.state !== state;
    return result;
  }

  /** Takes in what a store did; true when it owes a sync. */
  private record(write: SnapshotWrite, result: StoreResult): boolean {
    const { metrics, logger } = this.options;
    switch (result.kind) {
      case 'stored':
        metrics?.snapshots.inc({ result: 'stored' });
        metrics?.snapshotBytes.observe(result.bytes);
        logger.debug({ generation: result.generation }, 'snapshot stored');
        this.owe(storedReason(write, result.generation));
        return true;
      case 'unsynced':
        metrics?.snapshots.inc({ result: 'unchanged' });
        this.owe(storedReason(write, 0));
        return true;
      case 'unchanged':
        metrics?.snapshots.inc({ result: 'unchanged' });
        return false;
      case 'unregistered':
        // Removed: the registration follower closes this watch. Nothing of it is published.
        logger.debug('not registered, snapshot not stored');
        return false;
      case 'not-owner':
        this.notOwner();
        return false;
    }
  }

  /**
   * Asks for the owed sync; with tracing on, as a child of the store that owes it, whose span
   * ends with this first try.
   */
  private async publish(reason: SyncReason): Promise<void> {
    const { queue, key, tracing } = this.options;
    const owedBy = this.owedBy;
    if (owedBy?.span === undefined) {
      await publishSync(queue, key, reason, tracing, owedBy?.context);
      return;
    }
    try {
      await publishSync(queue, key, reason, tracing, owedBy.context);
    } finally {
      owedBy.span.end();
      owedBy.span = undefined;
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

/** No receive spans; never changed in place (nor is any list of them). */
const NONE: readonly SpanContext[] = [];

/** `older` then `newer`, the newest {@link MAX_SNAPSHOT_TRACE_LINKS} kept. */
function newest(
  older: readonly SpanContext[],
  newer: readonly SpanContext[],
): readonly SpanContext[] {
  const all = older.length === 0 ? newer : [...older, ...newer];
  return all.length > MAX_SNAPSHOT_TRACE_LINKS ? all.slice(-MAX_SNAPSHOT_TRACE_LINKS) : all;
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
