import { errorMessage } from '@slicekeeper/errors';
import { Backoff, systemClock } from '@slicekeeper/time';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/time';

export interface ChildRestartsOptions {
  /** Where the restart lines go (the stack's own lines). */
  say: (message: string) => void;
  /**
   * The delay before each restart of one child. A demo wants a killed driver back at once, and a
   * child that keeps dying must not spin.
   * @defaultValue 1 s doubling to 30 s, less up to 20% at random
   */
  backoff?: BackoffOptions;
  /**
   * A child that ran this long before it died counts as healthy again: its restart waits the
   * first delay, not the next one, ms. @defaultValue 60000
   */
  healthyAfterMs?: number;
  /** @defaultValue the system clock */
  clock?: Clock;
}

interface ChildState {
  readonly backoff: Backoff;
  startedAt: number;
  timer: TimerHandle | undefined;
}

/**
 * When the local stack restarts a child that died, as kubelet's CrashLoopBackOff does: each
 * death of a child is said with how it died and when the child comes back, and the child is
 * started again after an exponential backoff (one per child, capped) that starts over once the
 * child has stayed up for a while. `close()` cancels every pending restart.
 */
export class ChildRestarts {
  private readonly children = new Map<string, ChildState>();
  private readonly clock: Clock;
  private readonly healthyAfterMs: number;
  private closed = false;

  constructor(private readonly options: ChildRestartsOptions) {
    this.clock = options.clock ?? systemClock;
    this.healthyAfterMs = options.healthyAfterMs ?? 60_000;
  }

  /** The child `name` was started (again) now. */
  started(name: string): void {
    this.state(name).startedAt = this.clock.now();
  }

  /**
   * The child `name` exited (`how`: its exit code or signal): says so, and calls `restart` after
   * the child's next backoff delay unless `close()` comes first. A `restart` that fails counts as
   * another death.
   */
  exited(name: string, how: number | string, restart: () => Promise<void>): void {
    if (this.closed) return;
    const child = this.state(name);
    const upMs = this.clock.now() - child.startedAt;
    if (upMs >= this.healthyAfterMs) child.backoff.reset();
    const delayMs = child.backoff.next();
    this.options.say(
      `${name} exited (${how}) after ${seconds(upMs)}; restarting it in ${seconds(delayMs)} (restart ${child.backoff.attempts})`,
    );
    if (child.timer !== undefined) this.clock.clearTimer(child.timer);
    child.timer = this.clock.setTimer(() => {
      child.timer = undefined;
      void this.restart(name, restart);
    }, delayMs);
  }

  /** Cancels every pending restart; later exits are not restarted. Idempotent. */
  close(): void {
    this.closed = true;
    for (const child of this.children.values()) {
      if (child.timer !== undefined) this.clock.clearTimer(child.timer);
      child.timer = undefined;
    }
  }

  private async restart(name: string, restart: () => Promise<void>): Promise<void> {
    if (this.closed) return;
    this.started(name);
    try {
      await restart();
    } catch (error) {
      this.exited(name, `failed to start: ${errorMessage(error)}`, restart);
    }
  }

  private state(name: string): ChildState {
    let child = this.children.get(name);
    if (child === undefined) {
      child = {
        backoff: new Backoff({ initialMs: 1_000, maxMs: 30_000, ...this.options.backoff }),
        startedAt: this.clock.now(),
        timer: undefined,
      };
      this.children.set(name, child);
    }
    return child;
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
