import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';
import { systemClock } from '@slicekeeper/time';
import type { Clock, TimerHandle } from '@slicekeeper/time';
import type { SyncerMetrics } from './syncer-metrics';

export interface AntiEntropyOptions {
  /** The cache to compare with the server: a full list that replaces it, reporting differences. */
  cache: { relist(): Promise<{ added: number; changed: number; removed: number }> };
  /** Time between full relists, ms (±10% jitter, so replicas do not relist together). */
  intervalMs: number;
  logger: Logger;
  metrics?: Pick<SyncerMetrics, 'relistDifferences'>;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** Uniform in [0, 1); injected for tests. @defaultValue Math.random */
  random?: () => number;
}

/**
 * Anti-entropy for the watch-fed cache: a watch can miss an event for good (a large DaemonSet
 * rollout upstream lost about 0.3% of slices that way), so every `intervalMs` each replica lists
 * every managed slice again and compares; each difference is reported by the cache as a change,
 * which syncs its key. A relist costs one paginated list per interval per replica.
 */
export class AntiEntropy {
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private readonly clock: Clock;

  constructor(private readonly options: AntiEntropyOptions) {
    this.clock = options.clock ?? systemClock;
  }

  start(): void {
    this.schedule();
  }

  /** Relists now (and by the schedule after). */
  relist(): Promise<void> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.closed) return;
    const jitter = 0.9 + 0.2 * (this.options.random ?? Math.random)();
    this.timer = this.clock.setTimer(
      () => {
        void this.relist().finally(() => {
          this.schedule();
        });
      },
      Math.round(this.options.intervalMs * jitter),
    );
  }

  private async run(): Promise<void> {
    try {
      const found = await this.options.cache.relist();
      for (const [difference, count] of Object.entries(found)) {
        this.options.metrics?.relistDifferences.inc({ difference }, count);
      }
      const total = found.added + found.changed + found.removed;
      if (total > 0) this.options.logger.warn(found, 'relist found differences the watch missed');
      else this.options.logger.debug('relist found the cache exact');
    } catch (error) {
      this.options.logger.warn(
        { err: errorMessage(error) },
        'relist failed, trying at the next interval',
      );
    }
  }
}
