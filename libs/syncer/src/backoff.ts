import { TerminalError, TransientError } from '@slicekeeper/errors';
import { backoffDelayMs } from '@slicekeeper/runtime';

export interface BackoffPolicy {
  /** First retry's upper bound, ms. @defaultValue 100 */
  baseMs: number;
  /** Largest upper bound, ms. @defaultValue 300000 (5 minutes) */
  capMs: number;
}

export const defaultBackoffPolicy: BackoffPolicy = {
  baseMs: 100,
  capMs: 300_000,
};

/**
 * The key's Node does not exist: the key waits for it, not retried (the Node watch syncs it
 * when the Node appears).
 */
export class NodeMissingError extends TerminalError {
  constructor(node: string) {
    super(`node "${node}" does not exist`, { code: 'node-missing' });
  }
}

/**
 * A removed key's grace has not ended: its slices stay, and the key is looked at again exactly
 * when the grace ends (not with backoff: the time is known).
 */
export class RemovalPendingError extends TransientError {
  constructor(id: string, remainingMs: number) {
    super(
      `plugin ${id} was removed; its slices are withdrawn in ${Math.ceil(remainingMs / 1000)}s unless it registers again`,
      { code: 'removal-pending', retryAfterMs: remainingMs },
    );
  }
}

/**
 * The delay before retry number `attempt` (1 for the first retry): exponential backoff with
 * full jitter (AWS architecture blog, "Exponential Backoff and Jitter"): uniformly random in
 * [0, min(cap, base·2^(attempt-1))], so that many keys failing together do not retry together.
 * A Retry-After from the server is a floor.
 * `random()` is the fraction of the window waited.
 */
export function retryDelayMs(
  attempt: number,
  error: unknown,
  random: () => number = Math.random,
  policy: BackoffPolicy = defaultBackoffPolicy,
): number {
  if (error instanceof RemovalPendingError) return error.retryAfterMs ?? 0;
  const jittered = backoffDelayMs(attempt, {
    initialMs: policy.baseMs,
    maxMs: policy.capMs,
    jitter: 1,
    // backoffDelayMs draws the fraction taken off the window.
    random: () => 1 - random(),
  });
  const floor = error instanceof TransientError ? (error.retryAfterMs ?? 0) : 0;
  return Math.max(jittered, floor);
}
