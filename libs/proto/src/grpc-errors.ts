import { status } from '@grpc/grpc-js';
import { TerminalError, TransientError, errorMessage } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';

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
 * The one place gRPC errors are classified. Unimplemented is terminal with code
 * `unimplemented` (the plugin does not serve that API); other client-side faults are terminal;
 * availability problems are transient.
 */
export function classifyGrpcError(error: unknown, context: string): SlicekeeperError {
  const code = grpcStatusCode(error);
  const name = code === undefined ? 'error' : (status[code] ?? String(code)).toLowerCase();
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
    return new TerminalError(message, { code: 'unimplemented', cause: error });
  if (code === undefined || TRANSIENT_CODES.has(code)) {
    return new TransientError(message, { code: name, cause: error });
  }
  return new TerminalError(message, { code: name, cause: error });
}
