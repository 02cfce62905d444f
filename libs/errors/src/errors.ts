import { inspect } from 'node:util';

/**
 * The one error hierarchy of slicekeeper. Every failure ends up as one of two outcomes:
 * - transient: worth retrying with backoff (network, 5xx, 409, 429, timeouts); never dropped;
 * - terminal: retrying cannot help (invalid driver data, 403, 422); recorded and not retried
 *   until the input changes.
 * Foreign errors (Kubernetes ApiException, gRPC status) are classified into these in exactly one
 * place each (libs/kube, libs/proto); everything else only asks `isTerminal`.
 */
export type ErrorKind = 'transient' | 'terminal';

export interface SlicekeeperErrorOptions {
  /** Short machine-readable reason, e.g. `conflict`, `invalid`, `forbidden`. @defaultValue `'error'` */
  code?: string;
  cause?: unknown;
}

export abstract class SlicekeeperError extends Error {
  abstract readonly kind: ErrorKind;
  readonly code: string;

  constructor(message: string, options: SlicekeeperErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? 'error';
  }

  /** The same error with `context: ` in front of its message, keeping its kind and code. */
  abstract withContext(context: string): SlicekeeperError;
}

export interface TransientErrorOptions extends SlicekeeperErrorOptions {
  /** The least time to wait before retrying, ms, when the other side said so (Retry-After). */
  retryAfterMs?: number;
}

export class TransientError extends SlicekeeperError {
  override readonly kind = 'transient';
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: TransientErrorOptions = {}) {
    super(message, options);
    this.retryAfterMs = options.retryAfterMs;
  }

  override withContext(context: string): TransientError {
    return new TransientError(`${context}: ${this.message}`, {
      code: this.code,
      cause: this,
      ...(this.retryAfterMs === undefined ? {} : { retryAfterMs: this.retryAfterMs }),
    });
  }
}

export class TerminalError extends SlicekeeperError {
  override readonly kind = 'terminal';

  override withContext(context: string): TerminalError {
    return new TerminalError(`${context}: ${this.message}`, { code: this.code, cause: this });
  }
}

/**
 * Whether retrying is pointless. Anything that is not a slicekeeper error is treated as
 * transient: an unknown failure is retried with backoff rather than silently dropped.
 */
export function isTerminal(error: unknown): boolean {
  return error instanceof SlicekeeperError && error.kind === 'terminal';
}

/** Adds context to any error: `update ResourceSlice "x": conflict`. Unknown errors become transient. */
export function withContext(context: string, error: unknown): SlicekeeperError {
  if (error instanceof SlicekeeperError) return error.withContext(context);
  return new TransientError(`${context}: ${errorMessage(error)}`, { cause: error });
}

/** The message of anything thrown. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  if (error === undefined || typeof error === 'function' || typeof error === 'symbol') {
    return inspect(error);
  }
  try {
    return JSON.stringify(error);
  } catch {
    return inspect(error, { depth: 2, breakLength: Infinity });
  }
}
