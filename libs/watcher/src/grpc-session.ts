import { connect as connectHttp2, constants as http2 } from 'node:http2';
import type {
  ClientHttp2Session,
  ClientHttp2Stream,
  ClientSessionOptions,
  OutgoingHttpHeaders,
} from 'node:http2';
import { connect as connectNet } from 'node:net';
import { status } from '@grpc/grpc-js';
import { systemClock } from '@slicekeeper/time';
import type { Clock, TimerHandle } from '@slicekeeper/time';
import { http2ErrorName } from './grpc-status';
import type { GrpcCallStatus } from './grpc-status';

export interface GrpcSessionPoolOptions {
  /** HTTP/2 session options of every dial (settings, memory limit). */
  session?: ClientSessionOptions;
  /** Times the connect and keepalive timeouts. @defaultValue the system clock */
  clock?: Clock;
  /**
   * Time from a keepalive ping's answer to the next ping, ms (grpc's
   * `GRPC_ARG_KEEPALIVE_TIME_MS`); 0 sends none. Servers limit pings: grpc-go, grpc-js and
   * C-core accept one per 5 minutes on a connection that sends no data, and close one that pings
   * sooner three times (GOAWAY ENHANCE_YOUR_CALM "too_many_pings"); the time then doubles for
   * that target, as grpc-go does. @defaultValue 300000
   */
  keepaliveTimeMs?: number;
  /**
   * How long a ping may go unanswered, ms (`GRPC_ARG_KEEPALIVE_TIMEOUT_MS`): the session is
   * then destroyed and every call on it ends UNAVAILABLE. @defaultValue 20000
   */
  keepaliveTimeoutMs?: number;
  /**
   * How long a dial may take to become an HTTP/2 connection (the server's SETTINGS received),
   * ms; the calls waiting on it end UNAVAILABLE. @defaultValue 20000 (grpc-go's minimum connect
   * timeout)
   */
  connectTimeoutMs?: number;
}

/** What every session of a pool is dialled with. */
interface SessionSettings {
  readonly http2: ClientSessionOptions;
  readonly clock: Clock;
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
  readonly connectTimeoutMs: number;
}

/**
 * One HTTP/2 connection to a gRPC target: connect timeout, keepalive pings, and why it failed
 * when it did. A class, not closures: a watcher may hold one per plugin.
 */
export class GrpcSession {
  /** The calls holding it (the pool's count). */
  users = 0;
  /**
   * Why the session failed (connect or keepalive timeout, GOAWAY with an error): every call on
   * it ends with this. Undefined while it works, and when it dropped for a reason only its
   * streams saw (their socket error).
   */
  failure: GrpcCallStatus | undefined;
  /** The server sent GOAWAY: calls already open may finish, new ones go to a new session. */
  goneAway = false;
  private readonly http2: ClientHttp2Session;
  private timer: TimerHandle | undefined;

  constructor(
    readonly target: string,
    private readonly settings: SessionSettings,
    private readonly keepaliveTimeMs: number,
    onGoaway: (session: GrpcSession, errorCode: number, debug: string) => void,
  ) {
    this.http2 = dialHttp2(target, settings.http2);
    this.setTimer(() => {
      this.fail(`connect timeout: no HTTP/2 connection within ${settings.connectTimeoutMs} ms`);
    }, settings.connectTimeoutMs);
    this.http2.once('remoteSettings', () => {
      this.schedulePing();
    });
    this.http2.on('goaway', (errorCode: number, _lastStreamId: number, data?: Buffer) => {
      this.goneAway = true;
      const debug = data === undefined ? '' : data.toString('utf8');
      if (errorCode !== http2.NGHTTP2_NO_ERROR && this.failure === undefined) {
        // Node destroys the session now: every call on it ends with this.
        this.failure = {
          code: status.UNAVAILABLE,
          details: `the server closed the connection (GOAWAY ${http2ErrorName(errorCode)}${debug === '' ? '' : ` "${debug}"`})`,
        };
      }
      onGoaway(this, errorCode, debug);
    });
    // Its calls learn of an error from their streams; without a listener it would be thrown.
    this.http2.on('error', () => undefined);
    this.http2.once('close', () => {
      this.clearTimer();
    });
  }

  /** Whether new calls may use it. */
  get usable(): boolean {
    return !this.goneAway && this.failure === undefined && !this.http2.closed && !this.destroyed;
  }

  get destroyed(): boolean {
    return this.http2.destroyed;
  }

  /** Opens a stream; throws when the session no longer takes calls. */
  request(headers: OutgoingHttpHeaders): ClientHttp2Stream {
    return this.http2.request(headers);
  }

  /**
   * Closes the session once its calls are over; one still connecting has none worth waiting
   * for, and would otherwise keep dialling an address that does not answer.
   */
  close(): void {
    this.clearTimer();
    if (this.http2.connecting) this.http2.destroy();
    else this.http2.close();
  }

  private schedulePing(): void {
    this.clearTimer();
    if (this.keepaliveTimeMs <= 0) return;
    this.setTimer(() => {
      this.ping();
    }, this.keepaliveTimeMs);
  }

  private ping(): void {
    const timeoutMs = this.settings.keepaliveTimeoutMs;
    try {
      this.http2.ping((error) => {
        // An error: the session is gone, and its calls already know why.
        if (error === null && this.failure === undefined) this.schedulePing();
      });
    } catch {
      return;
    }
    this.setTimer(() => {
      this.fail(`keepalive timeout: a ping was not answered within ${timeoutMs} ms`);
    }, timeoutMs);
  }

  private fail(details: string): void {
    this.timer = undefined;
    if (this.failure !== undefined || this.destroyed) return;
    this.failure = { code: status.UNAVAILABLE, details };
    this.http2.destroy();
  }

  private setTimer(callback: () => void, ms: number): void {
    this.timer = this.settings.clock.setTimer(callback, ms);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.settings.clock.clearTimer(this.timer);
    this.timer = undefined;
  }
}

/**
 * The HTTP/2 sessions of one client, one per dialled target, each closed when its last holder
 * releases it, so a cancelled stream leaves no connection behind. A session that failed a call,
 * went away or dropped is not handed out again: the next dial to its target opens a fresh one
 * (the failed one closes when its other calls are over).
 */
export class GrpcSessionPool {
  private readonly settings: SessionSettings;
  private readonly sessions = new Map<string, GrpcSession>();
  /** Keepalive times doubled after a "too_many_pings" GOAWAY, by target. */
  private readonly keepaliveTimes = new Map<string, number>();

  constructor(options: GrpcSessionPoolOptions = {}) {
    this.settings = {
      http2: options.session ?? {},
      clock: options.clock ?? systemClock,
      keepaliveTimeMs: options.keepaliveTimeMs ?? 300_000,
      keepaliveTimeoutMs: options.keepaliveTimeoutMs ?? 20_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 20_000,
    };
  }

  /**
   * The session to `target` (`unix:///path`, `host:port` or `ipv6:[addr]:port`, as
   * `grpcTarget` of @slicekeeper/proto makes them), dialled if there is none usable.
   */
  acquire(target: string): GrpcSession {
    let session = this.sessions.get(target);
    if (session === undefined || !session.usable) session = this.dial(target);
    session.users++;
    return session;
  }

  /** Called once per `acquire`; `failed`: its call failed, so the session may be broken. */
  release(session: GrpcSession, failed: boolean): void {
    session.users--;
    if (failed || session.users === 0) this.forget(session);
    if (session.users === 0) session.close();
  }

  /** The keepalive time of the next session to `target`, ms. */
  keepaliveTimeMs(target: string): number {
    return this.keepaliveTimes.get(target) ?? this.settings.keepaliveTimeMs;
  }

  private dial(target: string): GrpcSession {
    const session = new GrpcSession(
      target,
      this.settings,
      this.keepaliveTimeMs(target),
      (gone, errorCode, debug) => {
        this.forget(gone);
        if (errorCode === http2.NGHTTP2_ENHANCE_YOUR_CALM && debug === 'too_many_pings') {
          this.keepaliveTimes.set(target, this.keepaliveTimeMs(target) * 2);
        }
      },
    );
    this.sessions.set(target, session);
    return session;
  }

  private forget(session: GrpcSession): void {
    if (this.sessions.get(session.target) === session) this.sessions.delete(session.target);
  }
}

/** Opens an HTTP/2 session (cleartext, prior knowledge) to a gRPC target. */
function dialHttp2(target: string, options: ClientSessionOptions): ClientHttp2Session {
  if (target.startsWith('unix://')) {
    const path = target.slice('unix://'.length);
    return connectHttp2('http://localhost', {
      ...options,
      createConnection: () => connectNet(path),
    });
  }
  const authority = target.startsWith('ipv6:') ? target.slice('ipv6:'.length) : target;
  return connectHttp2(`http://${authority}`, options);
}
