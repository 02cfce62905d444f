import { randomUUID } from 'node:crypto';
import type { RedisClient } from '@slicekeeper/queue';
import { parseKeyId } from '@slicekeeper/contracts';
import type { Registration, SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { RegistrationStore } from '@slicekeeper/state';
import type { Clock, TimerHandle } from '@slicekeeper/time';

export interface RegistrationFollowerOptions {
  /** For reads. The blocking follow runs on a duplicate of it, which the follower owns. */
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Only this node's registrations (node mode); all of them when unset. */
  nodeName?: string;
  /** How long one blocking read waits for events, ms. @defaultValue 1000 */
  blockMs?: number;
  /** Wait after a failed read before reloading everything, ms. @defaultValue 1000 */
  retryDelayMs?: number;
  clock: Clock;
  logger: Logger;
  /** Every registration there is (of the node, in node mode): a full load replaces all state. */
  onLoad: (registrations: Registration[]) => void;
  /** The current registrations of one key (empty: the key has none any more). */
  onKey: (key: SliceKey, registrations: Registration[]) => void;
  /**
   * Redis lost its data (it came back empty): write back what the live streams know. Runs before
   * the load that would otherwise see their registrations gone; a failure fails that load, which
   * is retried.
   */
  onDataLost?: () => Promise<void>;
}

/**
 * Follows the registrations the registration API writes: loads them all, then follows the event
 * stream and re-reads each key an event names. Level-triggered: an event only says "look at
 * this key again", so duplicated or reordered events are harmless, and after a gap (events
 * trimmed), a failed read or `reload()` it loads everything again, so nothing is ever lost.
 */
export class RegistrationFollower {
  private readonly options: RegistrationFollowerOptions;
  private readonly store: RegistrationStore;
  private readonly followConnection: RedisClient;
  private readonly followStore: RegistrationStore;
  private position = '0-0';
  /** The id of the data set Redis held at the last load. */
  private dataset: string | undefined;
  private reloadWanted = false;
  private loop: Promise<void> | undefined;
  private closed = false;
  private sleeper: { handle: TimerHandle; resolve: () => void } | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: RegistrationFollowerOptions) {
    this.options = options;
    const prefix = options.prefix === undefined ? {} : { prefix: options.prefix };
    this.store = new RegistrationStore({ redis: options.redis, ...prefix });
    this.followConnection = options.redis.duplicate();
    // Connection errors surface as failed reads (and are retried there); this only keeps them
    // from being reported as unhandled.
    this.followConnection.on('error', (error: unknown) => {
      options.logger.debug({ err: errorMessage(error) }, 'registration follow connection error');
    });
    this.followStore = new RegistrationStore({ redis: this.followConnection, ...prefix });
  }

  /** Loads every registration, then follows changes in the background. */
  async start(): Promise<void> {
    await this.load();
    this.loop = this.follow();
  }

  /** Asks for a full reload (e.g. after Redis reconnected: it may have lost or restored data). */
  reload(): void {
    this.reloadWanted = true;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      if (this.sleeper !== undefined) {
        this.options.clock.clearTimer(this.sleeper.handle);
        this.sleeper.resolve();
      }
      this.followConnection.disconnect();
      await this.loop;
    })();
    return this.closing;
  }

  private async load(): Promise<void> {
    const dataset = await this.store.datasetId(randomUUID());
    if (this.dataset !== undefined && dataset !== this.dataset) {
      this.options.logger.warn('redis lost its data, restoring the live streams');
      await this.options.onDataLost?.();
    }
    this.dataset = dataset;
    this.position = await this.store.eventPosition();
    this.options.onLoad(await this.loadRegistrations());
    this.options.logger.debug({ position: this.position }, 'registrations loaded');
  }

  private async loadRegistrations(): Promise<Registration[]> {
    const node = this.options.nodeName;
    if (node === undefined) return this.store.all();
    const all: Registration[] = [];
    let after: string | undefined;
    do {
      const page = await this.store.list({
        node,
        limit: 500,
        ...(after === undefined ? {} : { after }),
      });
      all.push(...page.items);
      after = page.next;
    } while (after !== undefined);
    return all;
  }

  private async follow(): Promise<void> {
    while (!this.closed) {
      try {
        if (this.reloadWanted) {
          this.reloadWanted = false;
          await this.load();
          continue;
        }
        const result = await this.followStore.follow(this.position, this.options.blockMs ?? 1000);
        if (this.isClosed()) return;
        if (result.kind === 'gap') {
          this.options.logger.info('registration events trimmed, reloading');
          this.reloadWanted = true;
          continue;
        }
        const ids = new Set(result.events.map((event) => event.key));
        for (const id of ids) {
          const key = parseKeyId(id);
          if (this.options.nodeName !== undefined && key.node !== this.options.nodeName) continue;
          this.options.onKey(key, await this.store.get(key));
        }
        this.position = result.last;
      } catch (error) {
        if (this.isClosed()) return;
        this.options.logger.warn({ err: errorMessage(error) }, 'following registrations failed');
        this.reloadWanted = true;
        await this.sleep(this.options.retryDelayMs ?? 1000);
      }
    }
  }

  /** Read through a call, as `closed` changes while the loop awaits. */
  private isClosed(): boolean {
    return this.closed;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const handle = this.options.clock.setTimer(() => {
        this.sleeper = undefined;
        resolve();
      }, ms);
      this.sleeper = { handle, resolve };
    });
  }
}
