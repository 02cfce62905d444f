/** A pending timer of a {@link Clock}; only ever passed back to `clearTimer`. */
export interface TimerHandle {
  /** Opaque. */
  readonly id: unknown;
}

/**
 * Time as a service sees it. Injected so that backoff, wipe-delay and lease tests run instantly
 * and deterministically (`ManualClock` of `@slicekeeper/time/testing`); production uses
 * {@link systemClock}.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once after `ms` milliseconds. */
  setTimer(callback: () => void, ms: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

/**
 * The real clock. Timers do not keep the process alive: closing what set them is what ends the
 * process.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return { id: timer };
  },
  clearTimer: (handle) => {
    clearTimeout(handle.id as NodeJS.Timeout);
  },
};
