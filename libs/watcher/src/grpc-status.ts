import { constants as http2 } from 'node:http2';
import type { IncomingHttpHeaders, IncomingHttpStatusHeader } from 'node:http2';
import { status } from '@grpc/grpc-js';
import { toGrpcStatusCode } from '@slicekeeper/proto';
import type { GrpcStatus } from '@slicekeeper/proto';

/**
 * How the client's gRPC calls end, as values: the mappings of the gRPC HTTP/2 protocol
 * (PROTOCOL-HTTP2.md, http-grpc-status-mapping.md) from what the server sent to a status.
 */

/** A message the client refused: the server answered, so this is its bug, not an outage. */
export type MessageRefusal =
  | { readonly kind: 'too-large'; readonly bytes: number; readonly limit: number }
  | { readonly kind: 'too-large-decompressed'; readonly limit: number };

/** How a call ended; `refused` when the client ended it over a message the server sent. */
export interface GrpcCallStatus extends GrpcStatus {
  readonly refused?: MessageRefusal;
}

export const OK_STATUS: GrpcCallStatus = { code: status.OK, details: '' };

/** The names of the HTTP/2 error codes (RFC 9113 §7), for details a person reads. */
const HTTP2_ERROR_NAMES = [
  'NO_ERROR',
  'PROTOCOL_ERROR',
  'INTERNAL_ERROR',
  'FLOW_CONTROL_ERROR',
  'SETTINGS_TIMEOUT',
  'STREAM_CLOSED',
  'FRAME_SIZE_ERROR',
  'REFUSED_STREAM',
  'CANCEL',
  'COMPRESSION_ERROR',
  'CONNECT_ERROR',
  'ENHANCE_YOUR_CALM',
  'INADEQUATE_SECURITY',
  'HTTP_1_1_REQUIRED',
];

export function http2ErrorName(code: number): string {
  return HTTP2_ERROR_NAMES[code] ?? `error code ${code}`;
}

/**
 * The status of a response without `grpc-status`, from its HTTP status (the gRPC table; 200 is
 * UNKNOWN, as a real OK carries a `grpc-status`).
 */
export function httpStatusToGrpc(httpStatus: number): GrpcStatus['code'] {
  switch (httpStatus) {
    case 400:
      return status.INTERNAL;
    case 401:
      return status.UNAUTHENTICATED;
    case 403:
      return status.PERMISSION_DENIED;
    case 404:
      return status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return status.UNAVAILABLE;
    default:
      return status.UNKNOWN;
  }
}

/** `application/grpc`, optionally `+proto`, optionally with parameters (`;charset=…`). */
const GRPC_CONTENT_TYPE = /^application\/grpc(\+proto)?(;.*)?$/;

/**
 * The failure a response's headers already decide, or undefined when the call goes on: a
 * `content-type` that is not gRPC (an error page, a proxy that does not speak gRPC) fails with
 * the status its HTTP status maps to, as grpc-go does; so does a non-200 response without a
 * `grpc-status`.
 */
export function responseHeadersFailure(
  headers: IncomingHttpHeaders & IncomingHttpStatusHeader,
): GrpcCallStatus | undefined {
  const httpStatus = headers[':status'];
  const header = headers[http2.HTTP2_HEADER_CONTENT_TYPE];
  const contentType = Array.isArray(header) ? header.join(', ') : header;
  if (contentType === undefined || !GRPC_CONTENT_TYPE.test(contentType.toLowerCase())) {
    return {
      code: httpStatus === undefined ? status.INTERNAL : httpStatusToGrpc(httpStatus),
      details:
        `not a gRPC response: HTTP status ${httpStatus ?? 'missing'}, ` +
        (contentType === undefined ? 'no content-type' : `content-type "${contentType}"`),
    };
  }
  if (httpStatus !== undefined && httpStatus !== 200 && !('grpc-status' in headers)) {
    return {
      code: httpStatusToGrpc(httpStatus),
      details: `HTTP status ${httpStatus} without a gRPC status`,
    };
  }
  return undefined;
}

/**
 * The status in trailers (or trailers-only headers). A `grpc-status` that is not a number is
 * INTERNAL, as grpc-go has it; a number gRPC does not define is UNKNOWN; none at all is
 * INTERNAL (the stream ended without a status).
 */
export function trailersStatus(trailers: IncomingHttpHeaders): GrpcCallStatus {
  const code = trailers['grpc-status'];
  if (code === undefined) {
    return { code: status.INTERNAL, details: 'the stream ended without a gRPC status' };
  }
  const value = Array.isArray(code) ? code[0] : code;
  if (value === undefined || !/^\d{1,10}$/.test(value)) {
    return { code: status.INTERNAL, details: `malformed grpc-status "${String(value)}"` };
  }
  const message = trailers['grpc-message'];
  return {
    code: toGrpcStatusCode(Number(value)),
    details: typeof message === 'string' ? percentDecode(message) : '',
  };
}

/**
 * The status of a stream the server reset before its status (RST_STREAM), by the gRPC table of
 * HTTP/2 error codes: REFUSED_STREAM is UNAVAILABLE (nothing was processed), CANCEL CANCELLED,
 * ENHANCE_YOUR_CALM RESOURCE_EXHAUSTED, INADEQUATE_SECURITY PERMISSION_DENIED, anything else
 * (NO_ERROR included: the status should have come first) INTERNAL. A reset the client's own socket error caused (a connection
 * reset or timed out) is UNAVAILABLE.
 */
export function rstStreamStatus(rstCode: number, cause: Error | undefined): GrpcCallStatus {
  const reset = `the server reset the stream (${http2ErrorName(rstCode)})`;
  switch (rstCode) {
    case http2.NGHTTP2_NO_ERROR:
      // Also how a stream that ended (END_STREAM) without trailers closes.
      return { code: status.INTERNAL, details: 'the stream ended without a gRPC status' };
    case http2.NGHTTP2_REFUSED_STREAM:
      return { code: status.UNAVAILABLE, details: reset };
    case http2.NGHTTP2_CANCEL:
      return { code: status.CANCELLED, details: reset };
    case http2.NGHTTP2_ENHANCE_YOUR_CALM:
      return { code: status.RESOURCE_EXHAUSTED, details: reset };
    case http2.NGHTTP2_INADEQUATE_SECURITY:
      return { code: status.PERMISSION_DENIED, details: reset };
    default:
      if (cause !== undefined && isConnectionReset(cause)) {
        return { code: status.UNAVAILABLE, details: `connection lost: ${cause.message}` };
      }
      return {
        code: status.INTERNAL,
        details: cause === undefined ? reset : `${reset}: ${cause.message}`,
      };
  }
}

/** A connection reset or timed out under the stream. */
function isConnectionReset(cause: Error & { code?: unknown }): boolean {
  const { code } = cause;
  return code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE';
}

/** `grpc-message` as sent: percent-encoded (the raw value when it is not valid encoding). */
function percentDecode(message: string): string {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
}
