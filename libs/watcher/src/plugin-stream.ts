import type {
  DriverInventory,
  Registration,
  StreamStateName,
  SyncStatus,
} from '@slicekeeper/contracts';
import { TRACEPARENT_RULE, tellsNews } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { grpcErrorCode } from '@slicekeeper/proto';
import {
  ATTR_RPC_METHOD,
  ATTR_RPC_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  SpanKind,
  failSpan,
  parseTraceparent,
} from '@slicekeeper/telemetry';
import type { Span, SpanContext, Tracing } from '@slicekeeper/telemetry';
import { Backoff } from '@slicekeeper/time';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/time';
import { inventoryMethod } from './grpc-connector';
import type { InventoryStream, MessageRejection, PublisherConnector } from './publisher-connector';
import { RECEIVE_SPAN, keyAttributes, startSpan } from './watcher-spans';

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
   * before `onReconnect` and `onChange`; `trace` is its receive span's (tracing on).
   */
  onRejected?: (stream: PluginStream, problem: string, trace: SpanContext | undefined) => void;
  /**
   * Spans: each message gets a `receive inventory` span, a child of the driver's `traceparent`
   * when it sent a valid one. None when unset (tracing off): no span, and the message's
   * traceparent is not looked at.
   */
  tracing?: Tracing;
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
  /** The receive span of `latest` (tracing on). */
  private received: SpanContext | undefined;
  /** Whether this connection sent a traceparent that is not one, which is logged once. */
  private badTraceparent = false;
  /** Tracing on: the tracing, and the attributes of every receive span of this stream. */
  private readonly receiving: { tracing: Tracing; attributes: Record<string, string> } | undefined;

  constructor(options: PluginStreamOptions) {
    this.options = options;
    this.registration = options.registration;
    this.backoff = new Backoff(options.backoff);
    this.stateSince = options.clock.now();
    if (options.tracing !== undefined) {
      const { registration } = options;
      this.receiving = {
        tracing: options.tracing,
        attributes: {
          [ATTR_RPC_SYSTEM_NAME]: 'grpc',
          [ATTR_RPC_METHOD]: inventoryMethod(registration.version),
          [ATTR_SERVER_ADDRESS]: registration.endpoint,
          ...keyAttributes(registration),
        },
      };
    }
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

  /** The receive span of the latest message, when tracing is on. */
  get latestTrace(): SpanContext | undefined {
    return this.received;
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
    this.badTraceparent = false;
    this.setState('connecting');
    this.options.logger.debug({ attempt: this.backoff.attempts }, 'connecting');
    const call = this.options.connector(
      {
        endpoint: this.endpoint,
        nodeName: this.registration.node,
        version: this.registration.version,
      },
      {
        message: (inventory, traceparent) => {
          if (this.call === call) this.onMessage(inventory, traceparent);
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

  /**
   * Hands a message on to the key (`onMessage`, `onChange`) inside its receive span, which ends
   * once the message is handed on: the key's Redis write, which may merge several messages, has a
   * span of its own. The receive span is not made active: timers and writes started while handing
   * on outlive it.
   */
  private onMessage(inventory: DriverInventory, traceparent: string | undefined): void {
    const span = this.startReceive(traceparent);
    try {
      this.inventory = inventory;
      this.received = span?.spanContext();
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
    } finally {
      span?.end();
    }
  }

  private onRejected({ problem, callEnded, traceparent }: MessageRejection): void {
    const span = this.startReceive(traceparent);
    try {
      if (span !== undefined) failSpan(span, problem);
      this.rejection = problem;
      this.options.logger.warn({ problem, callEnded }, 'message rejected');
      this.options.onRejected?.(this, problem, span?.spanContext());
      if (this.current === 'closed') return;
      if (callEnded) {
        this.failure = problem;
        this.scheduleReconnect();
      } else {
        this.options.onChange(this);
      }
    } finally {
      span?.end();
    }
  }

  /**
   * A message's receive span (tracing on): a child of the driver's span when its traceparent is
   * valid, else a root. One that is not a traceparent is ignored, as W3C trace context says, and logged once
   * per connection.
   */
  private startReceive(traceparent: string | undefined): Span | undefined {
    const receiving = this.receiving;
    if (receiving === undefined) return undefined;
    let parent: SpanContext | undefined;
    if (traceparent !== undefined && traceparent !== '') {
      parent = parseTraceparent(traceparent);
      if (parent === undefined && !this.badTraceparent) {
        this.badTraceparent = true;
        this.options.logger.warn(
          { traceparent: traceparent.slice(0, 80), rule: TRACEPARENT_RULE },
          'traceparent ignored',
        );
      }
    }
    return startSpan(receiving.tracing, RECEIVE_SPAN, {
      kind: SpanKind.CONSUMER,
      attributes: receiving.attributes,
      ...(parent === undefined ? {} : { parent }),
    });
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
