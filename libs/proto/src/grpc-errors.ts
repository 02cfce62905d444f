import { status } from '@grpc/grpc-js';
import { SlicekeeperError, TerminalError, TransientError, errorMessage } from '@slicekeeper/errors';

/** A gRPC status code: grpc-js's `status` enum, the numbers `grpc-status` carries (0–16). */
export type GrpcStatusCode = status;

/**
 * How a gRPC call ended, as a value: what slicekeeper's own client reports, and what a
 * grpc-js `ServiceError` carries. `details` is for people (logs, the status record); code
 * branches on `code` only.
 */
export interface GrpcStatus {
  readonly code: GrpcStatusCode;
  readonly details: string;
}

/** The highest status code gRPC defines (UNAUTHENTICATED). */
const MAX_STATUS_CODE = 16;

/** The code as a {@link GrpcStatusCode}; a number gRPC does not define is UNKNOWN, as gRPC says. */
export function toGrpcStatusCode(code: number): GrpcStatusCode {
  return Number.isInteger(code) && code >= 0 && code <= MAX_STATUS_CODE
    ? (code as GrpcStatusCode)
    : status.UNKNOWN;
}

/** Codes after which trying again later can succeed. */
const TRANSIENT_CODES: ReadonlySet<GrpcStatusCode> = new Set([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.RESOURCE_EXHAUSTED,
  status.ABORTED,
  status.INTERNAL,
  status.UNKNOWN,
  status.CANCELLED,
]);

/**
 * The gRPC status code of an error from @grpc/grpc-js (its numeric `code`), if it has one. A
 * Node system error's string `code` (`ECONNREFUSED`) is not one.
 */
export function grpcStatusCode(error: unknown): GrpcStatusCode | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'number') return toGrpcStatusCode(code);
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

/** The code of an error `classifyGrpcStatus` made, typed for a `switch`; undefined otherwise. */
export function grpcErrorCode(error: unknown): GrpcErrorCode | undefined {
  return error instanceof SlicekeeperError && GRPC_ERROR_CODES.has(error.code)
    ? (error.code as GrpcErrorCode)
    : undefined;
}

/** The lower-case name of a status code, as {@link GrpcErrorCode} has it. */
function errorCodeOf(code: GrpcStatusCode): GrpcErrorCode {
  return status[code].toLowerCase() as GrpcErrorCode;
}

/**
 * The one place gRPC statuses are classified. Unimplemented is terminal with code
 * `unimplemented` (the plugin does not serve that API); other client-side faults are terminal;
 * availability problems are transient. The message is `context: details` (the name of the
 * status when there are no details).
 */
export function classifyGrpcStatus(
  grpc: GrpcStatus,
  context: string,
  cause: unknown = grpc,
): SlicekeeperError {
  const code = errorCodeOf(grpc.code);
  const message = `${context}: ${grpc.details === '' ? status[grpc.code] : grpc.details}`;
  if (grpc.code !== status.UNIMPLEMENTED && TRANSIENT_CODES.has(grpc.code)) {
    return new TransientError(message, { code, cause });
  }
  return new TerminalError(message, { code, cause });
}

/**
 * {@link classifyGrpcStatus} for anything a grpc-js call rejects with: a `ServiceError` by its
 * numeric `code` and its `details`; anything without a gRPC status is a transient `error`.
 */
export function classifyGrpcError(error: unknown, context: string): SlicekeeperError {
  const code = grpcStatusCode(error);
  if (code === undefined) {
    return new TransientError(`${context}: ${errorMessage(error)}`, {
      code: 'error',
      cause: error,
    });
  }
  const details =
    typeof error === 'object' &&
    error !== null &&
    'details' in error &&
    typeof error.details === 'string'
      ? error.details
      : '';
  return classifyGrpcStatus({ code, details }, context, error);
}
