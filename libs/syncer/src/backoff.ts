import { TransientError } from '@slicekeeper/errors';
import { backoffDelayMs } from '@slicekeeper/time';

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

/** When to look at a key again (a reconcile's `requeueAfter`). */
export type Requeue =
  /** A transient failure: backoff with jitter, never sooner than the server's Retry-After. */
  | { kind: 'backoff'; notBeforeMs?: number }
  /** The API server asked every client to slow down (429): the whole queue waits `ms`. */
  | { kind: 'throttled'; ms: number }
  /** A known moment: a removed plugin's grace ends in `ms`. */
  | { kind: 'after'; ms: number };

/**
 * What a queue loop throws to have BullMQ run a job again: a processor's throw is BullMQ's one
 * channel for a retry. It carries the reconcile's {@link Requeue}, which {@link retryDelayMs}
 * turns into the delay.
 */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly requeue: Exclude<Requeue, { kind: 'throttled' }>,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}

/**
 * The delay before retry number `attempt` (1 for the first retry): exponential backoff with
 * full jitter (AWS architecture blog, "Exponential Backoff and Jitter"): uniformly random in
 * [0, min(cap, base·2^(attempt-1))], so that many keys failing together do not retry together.
 * A Retry-After from the server is a floor; a {@link RetryLater} at a known moment waits exactly
 * until then.
 * `random()` is the fraction of the window waited.
 */
export function retryDelayMs(
  attempt: number,
  error: unknown,
  random: () => number = Math.random,
  policy: BackoffPolicy = defaultBackoffPolicy,
): number {
  if (error instanceof RetryLater && error.requeue.kind === 'after') return error.requeue.ms;
  const jittered = backoffDelayMs(attempt, {
    initialMs: policy.baseMs,
    maxMs: policy.capMs,
    jitter: 1,
    // backoffDelayMs draws the fraction taken off the window.
    random: () => 1 - random(),
  });
  const floor =
    error instanceof RetryLater && error.requeue.kind === 'backoff'
      ? (error.requeue.notBeforeMs ?? 0)
      : error instanceof TransientError
        ? (error.retryAfterMs ?? 0)
        : 0;
  return Math.max(jittered, floor);
}
