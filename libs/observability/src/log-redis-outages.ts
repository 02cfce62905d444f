import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';

export interface RedisOutageLogOptions {
  logger: Pick<Logger, 'error' | 'info' | 'warn'>;
  /** Told when a connection stops serving (`false`) and serves again (`true`): for metrics. */
  onChange?: (connection: string, up: boolean) => void;
  /** What an outage's duration is measured with. @defaultValue systemClock */
  clock?: Pick<Clock, 'now'>;
}

/**
 * The Redis outages of one process, logged as two structured lines each, however many
 * connections and BullMQ objects report them: `redis unavailable` (error, with the first
 * error's message as `err` and the connection that reported it) when the first connection
 * fails, and `redis reconnected` (info, with `durationMs`, the `connections` that were down and
 * the number of `suppressedErrors`) when every one of them serves again. ioredis emits an error
 * for every reconnect attempt, several a second per connection, and each BullMQ Queue or Worker
 * re-emits those of its connections: an outage of an hour is two lines, not thousands of stacks.
 *
 * It becomes the `error` listener of everything it watches, so that nothing reaches stderr (an
 * emitter without one throws, and BullMQ then prints the error raw).
 */
export class RedisOutageLog {
  private readonly down = new Set<string>();
  private readonly attached: { source: EventEmitter; event: string; listener: Listener }[] = [];
  private readonly clock: Pick<Clock, 'now'>;
  private outage: Outage | undefined;

  constructor(private readonly options: RedisOutageLogOptions) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Watches one connection, named `connection` in the lines: `health` emits `error` while it
   * cannot serve (once or more) and `ready` when it serves again — the ioredis client itself, or
   * for a Cluster the emitter that follows its failovers.
   */
  watch(connection: string, health: EventEmitter): void {
    this.listen(health, 'error', (error) => {
      this.failed(connection, error);
    });
    this.listen(health, 'ready', () => {
      this.recovered(connection);
    });
  }

  /**
   * Adds emitters of errors of a watched connection: BullMQ Queues and Workers built on it (a
   * Worker also re-emits those of the blocking connection it made from it). Their errors during
   * an outage are counted, not logged. One while no outage runs is an outage of the connection
   * when `isOutage` says so (the connection's `ready` ends it); any other (a lost lock, a script
   * error) is logged as `redis error` (warn).
   */
  addErrorSources(
    connection: string,
    isOutage: (error: unknown) => boolean,
    ...sources: readonly EventEmitter[]
  ): void {
    for (const source of sources) {
      this.listen(source, 'error', (error) => {
        if (this.outage === undefined && !isOutage(error)) {
          this.options.logger.warn({ connection, err: errorMessage(error) }, 'redis error');
          return;
        }
        this.failed(connection, error);
      });
    }
  }

  /** Removes every listener the log added. */
  detach(): void {
    for (const { source, event, listener } of this.attached.splice(0)) {
      source.off(event, listener);
    }
  }

  private listen(source: EventEmitter, event: string, listener: Listener): void {
    source.on(event, listener);
    this.attached.push({ source, event, listener });
  }

  private failed(connection: string, error: unknown): void {
    if (!this.down.has(connection)) {
      this.down.add(connection);
      this.options.onChange?.(connection, false);
    }
    if (this.outage !== undefined) {
      this.outage.suppressedErrors++;
      this.outage.connections.add(connection);
      return;
    }
    this.outage = {
      startedAt: this.clock.now(),
      suppressedErrors: 0,
      connections: new Set([connection]),
    };
    this.options.logger.error({ connection, err: errorMessage(error) }, 'redis unavailable');
  }

  private recovered(connection: string): void {
    if (!this.down.delete(connection)) return;
    this.options.onChange?.(connection, true);
    const { outage } = this;
    if (outage === undefined || this.down.size > 0) return;
    this.outage = undefined;
    this.options.logger.info(
      {
        durationMs: Math.max(0, this.clock.now() - outage.startedAt),
        suppressedErrors: outage.suppressedErrors,
        connections: [...outage.connections].sort(),
      },
      'redis reconnected',
    );
  }
}

type Listener = (...args: unknown[]) => void;

interface Outage {
  startedAt: number;
  suppressedErrors: number;
  connections: Set<string>;
}
