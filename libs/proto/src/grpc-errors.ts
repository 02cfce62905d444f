import { status } from '@grpc/grpc-js';
import { SlicekeeperError, TerminalError, TransientError, errorMessage } from '@slicekeeper/errors';

/** Codes after which trying again later can succeed. */
const TRANSIENT_CODES = new Set<number>([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.RESOURCE_EXHAUSTED,
  status.ABORTED,
  status.INTERNAL,
  status.UNKNOWN,
  status.CANCELLED,
]);

/** The gRPC status code of an error from @grpc/grpc-js, if it has one. */
export function grpcStatusCode(error: unknown): number | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

/**
 * The `code` of a classified gRPC error: the status name in lower case (`unavailable`,
 * `unimplemented`, …), or `error` for a failure without a gRPC status. Callers branch on it
 * through {@link grpcErrorCode}, never on strings.
 */
export type GrpcErrorCode = Lowercase<Exclude<keyof typeof status, number>> | 'error';

const GRPC_ERROR_CODES: ReadonlySet<string> = new Set<string>([
  'error',
  ...Object.keys(status)
    .filter((name) => Number.isNaN(Number(name)))
    .map((name) => name.toLowerCase()),
]);

/** The code of an error `classifyGrpcError` made, typed for a `switch`; undefined otherwise. */
export function grpcErrorCode(error: unknown): GrpcErrorCode | undefined {
  return error instanceof SlicekeeperError && GRPC_ERROR_CODES.has(error.code)
    ? (error.code as GrpcErrorCode)
    : undefined;
}

/**
 * The one place gRPC errors are classified. Unimplemented is terminal with code
 * `unimplemented` (the plugin does not serve that API); other client-side faults are terminal;
 * availability problems are transient.
 */
export function classifyGrpcError(error: unknown, context: string): SlicekeeperError {
  const code = grpcStatusCode(error);
  const name: GrpcErrorCode =
    code === undefined ? 'error' : ((status[code]?.toLowerCase() ?? 'unknown') as GrpcErrorCode);
  const details =
    typeof error === 'object' &&
    error !== null &&
    'details' in error &&
    typeof error.details === 'string' &&
    error.details !== ''
      ? error.details
      : errorMessage(error);
  const message = `${context}: ${details}`;
  if (code === status.UNIMPLEMENTED)
    return new TerminalError(message, { code: name, cause: error });
  if (code === undefined || TRANSIENT_CODES.has(code)) {
    return new TransientError(message, { code: name, cause: error });
  }
  return new TerminalError(message, { code: name, cause: error });
}

/**
 * What grpc-js reports (status and details, as of @grpc/grpc-js 1.14) when the client itself
 * refuses a message the server sent: over `grpc.max_receive_message_length` (subchannel-call's
 * stream decoder, or the decompression filter), or not decodable by the response deserializer
 * (client-interceptors). grpc-js ends the call with these.
 */
const TOO_LARGE = /^Received message larger than max \((\d+) vs\.? (\d+)\)$/;
const TOO_LARGE_DECOMPRESSED = /^Received message that decompresses to a size larger than (\d+)$/;
const UNDECODABLE = 'Response message parsing error: ';

/**
 * The problem with the message, when `error` is grpc-js refusing a message the plugin sent
 * rather than a failure of the call: `message of N bytes exceeds the limit of M bytes`, or
 * `message does not decode: …`. Undefined for every other error. The plugin answered, so this
 * is its bug, not an outage.
 */
export function rejectedMessageProblem(error: unknown): string | undefined {
  const code = grpcStatusCode(error);
  if (code !== status.RESOURCE_EXHAUSTED && code !== status.INTERNAL) return undefined;
  const details =
    typeof error === 'object' && error !== null && 'details' in error ? error.details : undefined;
  if (typeof details !== 'string') return undefined;
  if (code === status.INTERNAL) {
    return details.startsWith(UNDECODABLE)
      ? `message does not decode: ${details.slice(UNDECODABLE.length)}`
      : undefined;
  }
  const tooLarge = TOO_LARGE.exec(details);
  if (tooLarge !== null) {
    return `message of ${tooLarge[1] ?? '?'} bytes exceeds the limit of ${tooLarge[2] ?? '?'} bytes`;
  }
  const decompressed = TOO_LARGE_DECOMPRESSED.exec(details);
  if (decompressed !== null) {
    return `message exceeds the limit of ${decompressed[1] ?? '?'} bytes once decompressed`;
  }
  return undefined;
}
