import type { Clock, TimerHandle } from '../clock';

interface ManualTimer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
}

/**
 * A clock that moves only when told to, for tests. `advance` fires due timers in time order
 * and lets promise callbacks run between them, so that async work a timer starts settles
 * before the next timer fires.
 */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, ManualTimer>();

  constructor(start: number = Date.parse('2026-11-21T12:00:00Z')) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, ms: number): TimerHandle {
    const seq = ++this.seq;
    this.timers.set(seq, { at: this.current + Math.max(0, ms), seq, callback });
    return { id: seq };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers.delete(handle.id as number);
  }

  /** Delays of the pending timers from now, ms, soonest first. */
  pending(): number[] {
    return [...this.timers.values()].map((t) => t.at - this.current).sort((a, b) => a - b);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await flushPromises();
      const next = this.nextDue(target);
      if (next === undefined) break;
      this.timers.delete(next.seq);
      this.current = next.at;
      next.callback();
    }
    this.current = target;
    await flushPromises();
  }

  private nextDue(target: number): ManualTimer | undefined {
    let next: ManualTimer | undefined;
    for (const timer of this.timers.values()) {
      if (timer.at > target) continue;
      if (
        next === undefined ||
        timer.at < next.at ||
        (timer.at === next.at && timer.seq < next.seq)
      ) {
        next = timer;
      }
    }
    return next;
  }
}

/** Lets pending promise callbacks (and the ones they chain) run. */
export async function flushPromises(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
