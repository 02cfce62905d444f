import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from 'pino';
import { Counter, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { systemClock } from '@slicekeeper/time';
import type { Clock, TimerHandle } from '@slicekeeper/time';

/** Runs one memory-reducing garbage collection, synchronously. */
export type ReducingCollection = () => void;

interface GcExtension {
  (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }): void;
}

/**
 * V8's memory-reducing full collection: the `last-resort` flavour of its gc extension, which
 * marks and compacts every space (`Mark-Compact (reduce)` in `--trace-gc`, two rounds or more)
 * and gives the emptied pages back to the OS. The extension is installed into a new context
 * only, so this does not put a `gc` global into the service.
 */
export function reducingCollection(): ReducingCollection {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as GcExtension;
  return () => {
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  };
}

export interface MemoryReducerOptions {
  /** Time between two collections, ms; 0 turns the reducer off. */
  intervalMs: number;
  logger: Pick<Logger, 'debug'>;
  registry: Registry;
  /** @defaultValue {@link reducingCollection} */
  collect?: ReducingCollection;
  /** V8's committed heap, bytes. Injected for tests. @defaultValue `v8.getHeapStatistics()` */
  heapCommitted?: () => number;
  /** @defaultValue systemClock */
  clock?: Clock;
  /** Monotonic time, ms, that a collection's pause is measured with. @defaultValue `performance.now` */
  now?: () => number;
}

/**
 * Gives back, every `intervalMs`, the memory V8's heap kept from the last burst of work.
 *
 * V8 grows a heap's committed pages through a burst (a rolling restart of a thousand drivers,
 * a resync of every key) and keeps them: its own memory reducer, which would compact them away,
 * re-arms only when committed memory has grown by 10 MB since its last run, which heaps of this
 * size never do in steady work. Each reducing collection pauses the event loop for the time it
 * takes (0.13–0.38 s for these services' 30–39 MiB of live objects in the soaks of 2026-12-02,
 * on a shared 2-core machine), which `slicekeeper_memory_reduce_seconds` records beside what it
 * gave back.
 */
export class MemoryReducer {
  private readonly clock: Clock;
  private readonly collect: ReducingCollection | undefined;
  private readonly heapCommitted: () => number;
  private readonly now: () => number;
  private readonly pauses: Histogram;
  private readonly released: Counter;
  private timer: TimerHandle | undefined;
  private closed = false;

  constructor(private readonly options: MemoryReducerOptions) {
    this.clock = options.clock ?? systemClock;
    this.collect = options.intervalMs > 0 ? (options.collect ?? reducingCollection()) : undefined;
    this.heapCommitted = options.heapCommitted ?? (() => getHeapStatistics().total_heap_size);
    this.now = options.now ?? (() => performance.now());
    this.pauses = new Histogram({
      name: 'slicekeeper_memory_reduce_seconds',
      help: 'Pause of each memory-reducing garbage collection (MEMORY_REDUCE_INTERVAL), seconds.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [options.registry],
    });
    this.released = new Counter({
      name: 'slicekeeper_memory_reduce_released_bytes_total',
      help: 'V8 heap memory the memory-reducing collections gave back: committed before less after.',
      registers: [options.registry],
    });
  }

  /** Schedules the first collection, `intervalMs` from now; nothing when the reducer is off. */
  start(): void {
    if (this.collect === undefined || this.closed) return;
    this.timer = this.clock.setTimer(() => {
      this.reduce();
    }, this.options.intervalMs);
  }

  /** Cancels the next collection. */
  close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    return Promise.resolve();
  }

  private reduce(): void {
    const collect = this.collect;
    if (collect === undefined) return;
    const before = this.heapCommitted();
    const startedAt = this.now();
    collect();
    const pauseMs = this.now() - startedAt;
    const after = this.heapCommitted();
    this.pauses.observe(pauseMs / 1000);
    this.released.inc(Math.max(0, before - after));
    this.options.logger.debug(
      { pauseMs: Math.round(pauseMs), heapCommittedBefore: before, heapCommittedAfter: after },
      'memory-reducing collection',
    );
    this.start();
  }
}
