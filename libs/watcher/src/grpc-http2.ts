import { connect as connectHttp2, constants as http2 } from 'node:http2';
import type {
  ClientHttp2Session,
  ClientHttp2Stream,
  ClientSessionOptions,
  IncomingHttpHeaders,
  IncomingHttpStatusHeader,
  OutgoingHttpHeaders,
} from 'node:http2';
import { constants as bufferConstants } from 'node:buffer';
import { connect as connectNet } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';
import { status as grpcStatus } from '@grpc/grpc-js';
import { errorMessage } from '@slicekeeper/errors';

/**
 * A gRPC client for unary and server-streaming calls written on `node:http2`, without
 * @grpc/grpc-js's channel, subchannel, transport and five-layer call stack: those cost 60–76 KiB
 * of RSS and 28–38 KiB of heap per stream, this about 30 KiB and 5 KiB (measured alone, after a
 * forced GC, 1,000 streams). Statuses
 * carry grpc-js's codes and, where slicekeeper reads them (`rejectedMessageProblem`), its
 * details, so that errors are classified as they were.
 */

/** How a call ended: a gRPC status code of @grpc/grpc-js's `status` and its details. */
export interface GrpcCallStatus {
  readonly code: grpcStatus;
  readonly details: string;
}

/** What a call reports; nothing after `status`, and nothing after `cancel()`. */
export interface GrpcCallListener {
  /** One response message, deframed (decompressed if the server compressed it). */
  message(bytes: Buffer): void;
  /** The call is over: `OK` when the server ended it cleanly. */
  status(status: GrpcCallStatus): void;
}

export interface GrpcCallOptions {
  /** The session to open the call on: {@link GrpcSessionPool.acquire}. */
  session: ClientHttp2Session;
  /** `/<package.Service>/<Method>`. */
  path: string;
  /** The serialized request message. */
  request: Uint8Array;
  /**
   * Largest response message accepted, bytes; a larger one ends the call (RESOURCE_EXHAUSTED).
   * Negative: no limit, as grpc-js's -1.
   */
  maxMessageBytes: number;
  /** Deadline of the call, ms from now; none when undefined. */
  timeoutMs?: number;
  listener: GrpcCallListener;
}

/** The request headers of every call but its path (and deadline). */
const REQUEST_HEADERS: OutgoingHttpHeaders = {
  [http2.HTTP2_HEADER_METHOD]: http2.HTTP2_METHOD_POST,
  [http2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
  [http2.HTTP2_HEADER_TE]: 'trailers',
};

const FRAME_HEADER_BYTES = 5;
const MAX_BUFFER_LENGTH = bufferConstants.MAX_LENGTH;

/**
 * One gRPC call with a single request message. A class, not closures: a watcher holds one per
 * plugin. The listener is called from the stream's events only, never from the constructor.
 */
export class GrpcCall {
  private readonly listener: GrpcCallListener;
  private readonly maxMessageBytes: number;
  private readonly stream: ClientHttp2Stream | undefined;
  private ended = false;
  private responded = false;
  /** The server sent its status: the stream closes without a reset. */
  private serverEnded = false;
  private httpStatus: number | undefined;
  private encoding: string | undefined;
  private streamError: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Received bytes not yet deframed. */
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The frame being read: its compressed flag and length once its 5-byte header is in. */
  private compressed = false;
  private messageBytes = -1;

  constructor(options: GrpcCallOptions) {
    this.listener = options.listener;
    this.maxMessageBytes =
      options.maxMessageBytes < 0 ? MAX_BUFFER_LENGTH : options.maxMessageBytes;
    const headers: OutgoingHttpHeaders = {
      ...REQUEST_HEADERS,
      [http2.HTTP2_HEADER_PATH]: options.path,
    };
    if (options.timeoutMs !== undefined) {
      // At most 8 digits (the gRPC wire format); the timer below enforces the deadline anyway.
      headers['grpc-timeout'] =
        `${Math.min(Math.max(0, Math.ceil(options.timeoutMs)), 99_999_999)}m`;
    }
    let stream: ClientHttp2Stream;
    try {
      stream = options.session.request(headers);
    } catch (error) {
      // A session closed or going away since it was pooled: as grpc-js's dropped connection.
      this.stream = undefined;
      process.nextTick(() => {
        this.end(grpcStatus.UNAVAILABLE, `Connection dropped: ${errorMessage(error)}`);
      });
      return;
    }
    this.stream = stream;
    stream.on('response', (headers, flags) => {
      this.onResponse(headers, flags);
    });
    stream.on('trailers', (trailers: IncomingHttpHeaders) => {
      this.onTrailers(trailers);
    });
    stream.on('data', (chunk: Buffer) => {
      this.onData(chunk);
    });
    stream.on('error', (error: Error & { code?: unknown }) => {
      // An RST_STREAM from the server is read from `rstCode` on close; keep any other cause.
      if (error.code !== 'ERR_HTTP2_STREAM_ERROR') this.streamError = error;
    });
    const { session } = options;
    stream.on('close', () => {
      this.onClose(session);
    });
    stream.end(frame(options.request));
    if (options.timeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.end(grpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded');
      }, options.timeoutMs);
    }
  }

  /** Ends the call with RST_STREAM(CANCEL); the listener is not called again. Idempotent. */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
  }

  private onResponse(headers: IncomingHttpHeaders & IncomingHttpStatusHeader, flags: number): void {
    this.responded = true;
    this.httpStatus = headers[':status'];
    const encoding = headers['grpc-encoding'];
    this.encoding = typeof encoding === 'string' ? encoding : undefined;
    // Trailers-only: the status is in the headers.
    if ((flags & http2.NGHTTP2_FLAG_END_STREAM) !== 0) this.onTrailers(headers);
  }

  private onTrailers(trailers: IncomingHttpHeaders): void {
    if (this.ended) return;
    this.serverEnded = true;
    const code = trailers['grpc-status'];
    if (typeof code === 'string') {
      const message = trailers['grpc-message'];
      this.end(Number(code), typeof message === 'string' ? percentDecode(message) : '');
    } else if (this.httpStatus !== undefined && this.httpStatus !== 200) {
      this.end(...httpStatusToGrpc(this.httpStatus));
    } else {
      this.end(grpcStatus.UNKNOWN, 'No status information received');
    }
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.deframe();
  }

  /** Delivers every complete message received, until the call ends. */
  private deframe(): void {
    while (!this.ended) {
      if (this.messageBytes < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) return;
        const header = this.take(FRAME_HEADER_BYTES);
        this.compressed = header[0] === 1;
        this.messageBytes = header.readUInt32BE(1);
        if (this.messageBytes > this.maxMessageBytes) {
          // As grpc-js: a non-200 response is more likely an error page than a message.
          if (this.httpStatus !== undefined && this.httpStatus !== 200) {
            this.end(...httpStatusToGrpc(this.httpStatus));
          } else {
            this.end(
              grpcStatus.RESOURCE_EXHAUSTED,
              `Received message larger than max (${this.messageBytes} vs ${this.maxMessageBytes})`,
            );
          }
          return;
        }
      }
      if (this.buffered < this.messageBytes) return;
      const message = this.take(this.messageBytes);
      this.messageBytes = -1;
      const bytes = this.compressed ? this.decompress(message) : message;
      if (bytes !== undefined) this.listener.message(bytes);
    }
  }

  /** The message as sent, or undefined when the call ended because it cannot be. */
  private decompress(message: Buffer): Buffer | undefined {
    const inflate =
      this.encoding === 'gzip' ? gunzipSync : this.encoding === 'deflate' ? inflateSync : undefined;
    if (inflate === undefined) {
      this.end(
        grpcStatus.INTERNAL,
        `Received compressed message but "grpc-encoding" header was ${this.encoding ?? 'identity'}`,
      );
      return undefined;
    }
    try {
      return inflate(message, { maxOutputLength: Math.max(1, this.maxMessageBytes) });
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        this.end(
          grpcStatus.RESOURCE_EXHAUSTED,
          `Received message that decompresses to a size larger than ${this.maxMessageBytes}`,
        );
      } else {
        this.end(grpcStatus.INTERNAL, errorMessage(error));
      }
      return undefined;
    }
  }

  /** The first `count` received bytes, removed. Precondition: `count <= this.buffered`. */
  private take(count: number): Buffer {
    this.buffered -= count;
    const first = this.chunks[0];
    if (first !== undefined && first.length >= count) {
      if (first.length === count) this.chunks.shift();
      else this.chunks[0] = first.subarray(count);
      return first.subarray(0, count);
    }
    const taken = Buffer.allocUnsafe(count);
    let filled = 0;
    while (filled < count) {
      const chunk = this.chunks[0];
      if (chunk === undefined) break;
      const used = Math.min(chunk.length, count - filled);
      chunk.copy(taken, filled, 0, used);
      filled += used;
      if (used === chunk.length) this.chunks.shift();
      else this.chunks[0] = chunk.subarray(used);
    }
    return taken;
  }

  private onClose(session: ClientHttp2Session): void {
    if (this.ended) return;
    const stream = this.stream;
    if (stream === undefined) return;
    if (session.destroyed) {
      // The connection failed or dropped: grpc-js's UNAVAILABLE, with the cause if it never
      // answered (`connect ECONNREFUSED …`).
      this.end(
        grpcStatus.UNAVAILABLE,
        !this.responded && this.streamError !== undefined
          ? `No connection established: ${this.streamError.message}`
          : 'Connection dropped',
      );
      return;
    }
    this.end(...rstStreamToGrpc(stream.rstCode, this.httpStatus, this.streamError));
  }

  private end(code: grpcStatus, details: string): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
    this.listener.status({ code, details });
  }

  /** Frees the stream: RST_STREAM(CANCEL) unless the server ended it (as grpc-js). */
  private release(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.chunks = [];
    this.buffered = 0;
    const stream = this.stream;
    if (stream !== undefined && !this.serverEnded && !stream.closed && !stream.destroyed) {
      stream.close(http2.NGHTTP2_CANCEL);
    }
  }
}

/** A pooled session and the number of calls holding it. */
export interface PooledSession {
  readonly target: string;
  readonly session: ClientHttp2Session;
  users: number;
}

export interface GrpcSessionPoolOptions {
  /** HTTP/2 session options of every dial (settings, memory limit). */
  session?: ClientSessionOptions;
}

/**
 * The HTTP/2 sessions of one client, one per dialled target, each closed when its last holder
 * releases it, so a cancelled stream leaves no connection behind. A session that failed a call,
 * went away or dropped is not handed out again: the next dial to its target opens a fresh one
 * (the failed one closes when its other calls are over).
 */
export class GrpcSessionPool {
  private readonly options: ClientSessionOptions;
  private readonly sessions = new Map<string, PooledSession>();

  constructor(options: GrpcSessionPoolOptions = {}) {
    this.options = options.session ?? {};
  }

  /**
   * The session to `target` (`unix:///path`, `host:port` or `ipv6:[addr]:port`, as
   * `grpcTarget` of @slicekeeper/proto makes them), dialled if there is none usable.
   */
  acquire(target: string): PooledSession {
    let pooled = this.sessions.get(target);
    if (pooled === undefined || pooled.session.closed || pooled.session.destroyed) {
      pooled = this.dial(target);
    }
    pooled.users++;
    return pooled;
  }

  /** Called once per `acquire`; `failed`: its call failed, so the session may be broken. */
  release(pooled: PooledSession, failed: boolean): void {
    pooled.users--;
    if (failed || pooled.users === 0) this.forget(pooled);
    if (pooled.users > 0) return;
    // Closed once its calls are over; one still connecting has none worth waiting for, and
    // would otherwise keep dialling an address that does not answer.
    if (pooled.session.connecting) pooled.session.destroy();
    else pooled.session.close();
  }

  private dial(target: string): PooledSession {
    const session = dialHttp2(target, this.options);
    const pooled: PooledSession = { target, session, users: 0 };
    this.sessions.set(target, pooled);
    const forget = () => {
      this.forget(pooled);
    };
    // An 'error' listener also keeps a failed dial from being an uncaught exception; the calls
    // on the session learn of it from their streams.
    session.on('error', forget).once('goaway', forget).once('close', forget);
    return pooled;
  }

  private forget(pooled: PooledSession): void {
    if (this.sessions.get(pooled.target) === pooled) this.sessions.delete(pooled.target);
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

/** A message as gRPC frames it: uncompressed flag, 4-byte big-endian length, the bytes. */
function frame(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(FRAME_HEADER_BYTES + message.length);
  framed.writeUInt8(0, 0);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, FRAME_HEADER_BYTES);
  return framed;
}

/** `grpc-message` as sent: percent-encoded (the raw value when it is not valid encoding). */
function percentDecode(message: string): string {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
}

/** The status of a response without `grpc-status`, from its HTTP status, as grpc-js maps it. */
export function httpStatusToGrpc(httpStatus: number): [grpcStatus, string] {
  const details = `Received HTTP status code ${httpStatus}`;
  switch (httpStatus) {
    case 400:
      return [grpcStatus.INTERNAL, details];
    case 401:
      return [grpcStatus.UNAUTHENTICATED, details];
    case 403:
      return [grpcStatus.PERMISSION_DENIED, details];
    case 404:
      return [grpcStatus.UNIMPLEMENTED, details];
    case 429:
    case 502:
    case 503:
    case 504:
      return [grpcStatus.UNAVAILABLE, details];
    default:
      return [grpcStatus.UNKNOWN, details];
  }
}

/** The status of a stream that closed without trailers, by its RST_STREAM code, as grpc-js. */
function rstStreamToGrpc(
  rstCode: number,
  httpStatus: number | undefined,
  cause: Error | undefined,
): [grpcStatus, string] {
  switch (rstCode) {
    case http2.NGHTTP2_NO_ERROR:
      return httpStatus !== undefined && httpStatus !== 200
        ? httpStatusToGrpc(httpStatus)
        : [
            grpcStatus.INTERNAL,
            `Received RST_STREAM with code ${rstCode} (Call ended without gRPC status)`,
          ];
    case http2.NGHTTP2_REFUSED_STREAM:
      return [grpcStatus.UNAVAILABLE, 'Stream refused by server'];
    case http2.NGHTTP2_CANCEL:
      return [grpcStatus.CANCELLED, 'Call cancelled'];
    case http2.NGHTTP2_ENHANCE_YOUR_CALM:
      return [grpcStatus.RESOURCE_EXHAUSTED, 'Bandwidth exhausted or memory limit exceeded'];
    case http2.NGHTTP2_INADEQUATE_SECURITY:
      return [grpcStatus.PERMISSION_DENIED, 'Protocol not secure enough'];
    case http2.NGHTTP2_INTERNAL_ERROR:
      if (cause !== undefined && isConnectionReset(cause))
        return [grpcStatus.UNAVAILABLE, cause.message];
      return cause === undefined
        ? [grpcStatus.INTERNAL, `Received RST_STREAM with code ${rstCode} (Internal server error)`]
        : [
            grpcStatus.INTERNAL,
            `Received RST_STREAM with code ${rstCode} triggered by internal client error: ${cause.message}`,
          ];
    default:
      return [grpcStatus.INTERNAL, `Received RST_STREAM with code ${rstCode}`];
  }
}

/** A connection reset or timed out under the stream: grpc-js reports those as UNAVAILABLE. */
function isConnectionReset(cause: Error & { code?: unknown }): boolean {
  const { code } = cause;
  return code === 'ECONNRESET' || code === 'ETIMEDOUT';
}
