import { constants as http2 } from 'node:http2';
import type {
  ClientHttp2Stream,
  IncomingHttpHeaders,
  IncomingHttpStatusHeader,
  OutgoingHttpHeaders,
} from 'node:http2';
import { constants as bufferConstants } from 'node:buffer';
import { gunzipSync, inflateSync } from 'node:zlib';
import { status as grpcStatus } from '@grpc/grpc-js';
import { errorMessage } from '@slicekeeper/errors';
import type { GrpcSession } from './grpc-session';
import { responseHeadersFailure, rstStreamStatus, trailersStatus } from './grpc-status';
import type { GrpcCallStatus } from './grpc-status';

/**
 * A gRPC client for unary and server-streaming calls written on `node:http2`, without
 * @grpc/grpc-js's channel, subchannel, transport and five-layer call stack: those cost 60–76 KiB
 * of RSS and 28–38 KiB of heap per stream, this about 30 KiB and 5 KiB (measured alone, after a
 * forced GC, 1,000 streams). A call ends with a typed status (`GrpcCallStatus`): a gRPC code,
 * details for people, and what the client refused when it ended the call over a message.
 */

/** What a call reports; nothing after `status`, and nothing after `cancel()`. */
export interface GrpcCallListener {
  /** One response message, deframed (decompressed if the server compressed it). */
  message(bytes: Buffer): void;
  /** The call is over: `OK` when the server ended it cleanly. */
  status(status: GrpcCallStatus): void;
}

export interface GrpcCallOptions {
  /** The session to open the call on: {@link GrpcSessionPool.acquire}. */
  session: GrpcSession;
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
    const { session, timeoutMs } = options;
    const headers: OutgoingHttpHeaders = {
      ...REQUEST_HEADERS,
      [http2.HTTP2_HEADER_PATH]: options.path,
    };
    if (timeoutMs !== undefined) {
      // At most 8 digits (the gRPC wire format); the timer below enforces the deadline anyway.
      headers['grpc-timeout'] = `${Math.min(Math.max(0, Math.ceil(timeoutMs)), 99_999_999)}m`;
    }
    try {
      this.stream = session.request(headers);
    } catch (error) {
      // A session closed or gone away since it was pooled.
      this.stream = undefined;
      this.endSoon(session, `connection lost: ${errorMessage(error)}`);
      return;
    }
    this.listen(this.stream, session);
    this.stream.end(frame(options.request));
    if (timeoutMs !== undefined) this.startDeadline(timeoutMs);
  }

  /** Ends the call with RST_STREAM(CANCEL); the listener is not called again. Idempotent. */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
  }

  /**
   * The stream's listeners. They, the deadline and `endSoon` are made in methods, not in the
   * constructor: a closure made there shares its scope and would keep `options` reachable for as
   * long as the call lasts, and with it the request's bytes, usually a slice of Node's Buffer
   * pool (64 KiB slabs since Node 26). A watch lasts as long as its plugin: 1,000 watches pinned
   * up to a slab each, RSS that grew at every rolling restart of the drivers.
   */
  private listen(stream: ClientHttp2Stream, session: GrpcSession): void {
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
    stream.on('close', () => {
      this.onClose(session);
    });
  }

  private startDeadline(timeoutMs: number): void {
    this.timer = setTimeout(() => {
      this.end({ code: grpcStatus.DEADLINE_EXCEEDED, details: 'deadline exceeded' });
    }, timeoutMs);
  }

  /** Ends a call that could not be opened, on the next tick: never from the constructor. */
  private endSoon(session: GrpcSession, details: string): void {
    process.nextTick(() => {
      this.end(session.failure ?? { code: grpcStatus.UNAVAILABLE, details });
    });
  }

  private onResponse(headers: IncomingHttpHeaders & IncomingHttpStatusHeader, flags: number): void {
    this.responded = true;
    const failure = responseHeadersFailure(headers);
    if (failure !== undefined) {
      this.end(failure);
      return;
    }
    const encoding = headers['grpc-encoding'];
    this.encoding = typeof encoding === 'string' ? encoding : undefined;
    // Trailers-only: the status is in the headers.
    if ((flags & http2.NGHTTP2_FLAG_END_STREAM) !== 0) this.onTrailers(headers);
  }

  private onTrailers(trailers: IncomingHttpHeaders): void {
    if (this.ended) return;
    this.serverEnded = true;
    this.end(trailersStatus(trailers));
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
          const [bytes, limit] = [this.messageBytes, this.maxMessageBytes];
          this.end({
            code: grpcStatus.RESOURCE_EXHAUSTED,
            details: `message of ${bytes} bytes exceeds the limit of ${limit} bytes`,
            refused: { kind: 'too-large', bytes, limit },
          });
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
      this.end({
        code: grpcStatus.INTERNAL,
        details: `compressed message with grpc-encoding "${this.encoding ?? 'identity'}"`,
      });
      return undefined;
    }
    try {
      return inflate(message, { maxOutputLength: Math.max(1, this.maxMessageBytes) });
    } catch (error) {
      const limit = this.maxMessageBytes;
      if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') {
        this.end({
          code: grpcStatus.RESOURCE_EXHAUSTED,
          details: `message exceeds the limit of ${limit} bytes once decompressed`,
          refused: { kind: 'too-large-decompressed', limit },
        });
      } else {
        this.end({
          code: grpcStatus.INTERNAL,
          details: `message does not decompress: ${errorMessage(error)}`,
        });
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

  private onClose(session: GrpcSession): void {
    if (this.ended) return;
    const stream = this.stream;
    if (stream === undefined) return;
    if (session.destroyed) {
      // The connection failed or dropped: why, when the session knows (a timeout, GOAWAY), or
      // the socket's error if the server never answered (`connect ECONNREFUSED …`).
      const cause = this.streamError;
      this.end(
        session.failure ?? {
          code: grpcStatus.UNAVAILABLE,
          details:
            !this.responded && cause !== undefined
              ? `no connection: ${cause.message}`
              : 'connection lost',
        },
      );
      return;
    }
    this.end(rstStreamStatus(stream.rstCode, this.streamError));
  }

  private end(status: GrpcCallStatus): void {
    if (this.ended) return;
    this.ended = true;
    this.release();
    this.listener.status(status);
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

/** A message as gRPC frames it: uncompressed flag, 4-byte big-endian length, the bytes. */
function frame(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(FRAME_HEADER_BYTES + message.length);
  framed.writeUInt8(0, 0);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, FRAME_HEADER_BYTES);
  return framed;
}
