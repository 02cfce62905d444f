import type {
  DriverInventory,
  Registration,
  StreamStateName,
  SyncStatus,
} from '@slicekeeper/contracts';
import { tellsNews } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { grpcErrorCode } from '@slicekeeper/proto';
import { Backoff } from '@slicekeeper/time';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/time';
import type { InventoryStream, MessageRejection, PublisherConnector } from './publisher-connector';

/** The states of one endpoint's stream (`wiped` is a key's state, not a stream's). */
export type PluginStreamState = Exclude<StreamStateName, 'wiped'> | 'closed';

export interface PluginStreamOptions {
  registration: Registration;
  connector: PublisherConnector;
  clock: Clock;
  backoff?: BackoffOptions;
  /** The stream's own child logger. */
  logger: Logger;
  /** Called after every state change, every message and every rejected message. */
  onChange: (stream: PluginStream) => void;
  /** Called for every message, before `onChange`. */
  onMessage?: (stream: PluginStream) => void;
  /**
   * Called for every message the connector rejected (see {@link PluginStream.lastRejection}),
   * before `onReconnect` and `onChange`.
   */
  onRejected?: (stream: PluginStream, problem: string) => void;
  /** Called when a reconnect is scheduled. */
  onReconnect?: (stream: PluginStream) => void;
}

/**
 * One endpoint's `WatchResources` stream, kept open as kubelet's `monitorPlugin` does:
 *
 * ```
 * connecting ──first message──▶ streaming ──message──▶ streaming
 *     │                             │
 *     ├──Unimplemented─────────────┴──▶ unimplemented   (no retry until re-registration)
 *     ├──EOF───────────────────────────▶ ended           (last inventory kept; no retry)
 *     ├──rejected, call ended ─────────▶ backoff           (message too large or undecodable)
 *     └──other error / unreachable ────▶ backoff ──delay──▶ connecting
 * ```
 *
 * A rejected message on an open call (one the mapper refused) changes no state: the previous
 * inventory stays and the next good message is used as usual.
 *
 * Backoff is 5 s doubling to 180 s with jitter and restarts from 5 s once a message arrives.
 * The stream only reports; what a state means for the key's slices is decided by `KeyWatch`.
 */
export class PluginStream {
  readonly registration: Registration;
  private readonly options: PluginStreamOptions;
  private readonly backoff: Backoff;
  private current: PluginStreamState = 'connecting';
  private call: InventoryStream | undefined;
  private timer: TimerHandle | undefined;
  private stateSince: number;
  private inventory: DriverInventory | undefined;
  private receivedAt: number | undefined;
  private failure: string | undefined;
  private rejection: string | undefined;
  private reconnectCount = 0;
  /** What this connection was last told; only news (`tellsNews`) is told again. */
  private told: SyncStatus | undefined;
  /** Whether this connection answered `NotifyPublishStatus` with Unimplemented. */
  private deaf = false;

  constructor(options: PluginStreamOptions) {
    this.options = options;
    this.registration = options.registration;
    this.backoff = new Backoff(options.backoff);
    this.stateSince = options.clock.now();
  }

  get endpoint(): string {
    return this.registration.endpoint;
  }

  get state(): PluginStreamState {
    return this.current;
  }

  /** Since when the stream is in its state, ms since the epoch. */
  get since(): number {
    return this.stateSince;
  }

  /** The latest inventory received on this stream, kept after EOF. */
  get latest(): DriverInventory | undefined {
    return this.inventory;
  }

  /** When the latest message arrived, ms since the epoch. */
  get lastMessageAt(): number | undefined {
    return this.receivedAt;
  }

  /** Reconnects scheduled since the last message. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** Why the stream last failed. */
  get error(): string | undefined {
    return this.failure;
  }

  /**
   * Why the plugin's last message was rejected: set on a rejection, also one that ended the call
   * (as the plugin answered, it is alive and buggy, not unreachable), and cleared by a valid
   * message or by a later attempt that fails for another reason (the plugin is then unreachable).
   */
  get lastRejection(): string | undefined {
    return this.rejection;
  }

  /** Opens the stream. */
  start(): void {
    this.connect();
  }

  /** Cancels the stream and any scheduled reconnect; `reason` is logged. Idempotent. */
  close(reason: string): void {
    if (this.current === 'closed') return;
    this.cancelCall();
    if (this.timer !== undefined) this.options.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.options.logger.info({ reason }, 'stream closed');
    this.current = 'closed';
  }

  /**
   * Tells the plugin a sync outcome of its key (`NotifyPublishStatus`), unless this connection
   * was told the same already, or answered Unimplemented before: such a plugin is never asked
   * again on this connection. A failed call is logged; the next outcome is sent as usual.
   */
  notify(status: SyncStatus): void {
    const call = this.call;
    if (call === undefined || this.deaf) return;
    if (!tellsNews(this.told, status)) return;
    this.told = status;
    void call.notify(this.registration.node, status).then((result) => {
      if (this.call !== call) return;
      if (result === 'unimplemented') {
        this.deaf = true;
        this.options.logger.info('plugin does not take publish feedback (Unimplemented)');
      } else if (result === 'failed' && this.told === status) {
        this.told = undefined;
      }
    });
  }

  private connect(): void {
    this.timer = undefined;
    this.told = undefined;
    this.deaf = false;
    this.setState('connecting');
    this.options.logger.debug({ attempt: this.backoff.attempts }, 'connecting');
    const call = this.options.connector(
      {
        endpoint: this.endpoint,
        nodeName: this.registration.node,
        version: this.registration.version,
      },
      {
        message: (inventory) => {
          if (this.call === call) this.onMessage(inventory);
        },
        rejected: (rejection) => {
          if (this.call !== call) return;
          if (rejection.callEnded) this.call = undefined;
          this.onRejected(rejection);
        },
        end: () => {
          if (this.call !== call) return;
          this.call = undefined;
          this.options.logger.info('stream ended by plugin');
          this.setState('ended');
        },
        error: (error) => {
          if (this.call !== call) return;
          this.call = undefined;
          this.onError(error);
        },
      },
    );
    this.call = call;
  }

  private onMessage(inventory: DriverInventory): void {
    this.inventory = inventory;
    this.receivedAt = this.options.clock.now();
    this.rejection = undefined;
    this.options.onMessage?.(this);
    if (this.current !== 'streaming') {
      this.backoff.reset();
      this.reconnectCount = 0;
      this.failure = undefined;
      this.options.logger.info('streaming');
      this.setState('streaming');
    } else {
      this.options.onChange(this);
    }
  }

  private onRejected({ problem, callEnded }: MessageRejection): void {
    this.rejection = problem;
    this.options.logger.warn({ problem, callEnded }, 'message rejected');
    this.options.onRejected?.(this, problem);
    if (this.current === 'closed') return;
    if (callEnded) {
      this.failure = problem;
      this.scheduleReconnect();
    } else {
      this.options.onChange(this);
    }
  }

  private onError(error: SlicekeeperError): void {
    this.failure = errorMessage(error);
    this.rejection = undefined;
    if (grpcErrorCode(error) === 'unimplemented') {
      this.options.logger.warn({ err: this.failure }, 'plugin does not publish (Unimplemented)');
      this.setState('unimplemented');
      return;
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const delayMs = this.backoff.next();
    this.reconnectCount++;
    this.options.logger.warn(
      { err: this.failure, delayMs, attempt: this.backoff.attempts },
      'stream failed, reconnecting',
    );
    this.timer = this.options.clock.setTimer(() => {
      this.connect();
    }, delayMs);
    this.options.onReconnect?.(this);
    this.setState('backoff');
  }

  private cancelCall(): void {
    const call = this.call;
    this.call = undefined;
    call?.cancel();
  }

  private setState(state: PluginStreamState): void {
    if (this.current === 'closed') return;
    if (state !== this.current) this.stateSince = this.options.clock.now();
    this.current = state;
    this.options.onChange(this);
  }
}
