import { redisHealth } from '@slicekeeper/queue';
import type { RedisClient } from '@slicekeeper/queue';
import { keyId } from '@slicekeeper/contracts';
import type { SliceKey, SyncStatus } from '@slicekeeper/contracts';
import { decodeOrUndefined } from './codec';
import { syncStatusRecord } from './record-schemas';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

export interface SyncFeedbackOptions {
  /** Commands (reads of a key's status). */
  redis: RedisClient;
  /** A connection of its own: it is in subscriber mode while anything is followed. */
  subscriber: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Called with every status announced for a followed key (and on {@link SyncFeedback.catchUp}). */
  onStatus: (key: SliceKey, status: SyncStatus) => void;
  /** Called with an announcement that does not parse (it is skipped), or a failed catch-up. */
  onProblem?: (problem: string) => void;
}

/**
 * The sync statuses announced on the keys' feedback channels (`SyncTurn.finish` with
 * `announce`), for the watcher that holds a key's stream to tell its driver. Pub/sub loses what
 * is announced while the subscriber is disconnected: when it is back (ioredis subscribes again
 * by itself), the followed keys' statuses are read once ({@link catchUp}).
 */
export class SyncFeedback {
  private readonly keys: RedisKeys;
  private readonly followed = new Map<string, SliceKey>();
  private connectedBefore: boolean;

  constructor(private readonly options: SyncFeedbackOptions) {
    this.keys = redisKeys(options.prefix);
    this.connectedBefore = options.subscriber.status === 'ready';
    options.subscriber.on('message', this.onMessage);
    redisHealth(options.subscriber).on('ready', this.onReady);
  }

  /** Starts passing on `key`'s statuses. */
  async follow(key: SliceKey): Promise<void> {
    const channel = this.keys.feedbackChannel(key);
    if (this.followed.has(channel)) return;
    this.followed.set(channel, key);
    await this.options.subscriber.subscribe(channel);
  }

  /** Stops passing on `key`'s statuses. */
  async unfollow(key: SliceKey): Promise<void> {
    const channel = this.keys.feedbackChannel(key);
    if (!this.followed.delete(channel)) return;
    await this.options.subscriber.unsubscribe(channel);
  }

  /**
   * Reads every followed key's current status and passes it on (the receiver ignores what it
   * passed on already): what a disconnected subscriber missed.
   */
  async catchUp(): Promise<void> {
    const keys = [...this.followed.values()];
    if (keys.length === 0) return;
    // One GET per key, not a pipeline: the keys live in as many hash slots (Redis Cluster).
    const replies = await Promise.allSettled(
      keys.map((key) => this.options.redis.get(this.keys.syncStatus(key))),
    );
    keys.forEach((key, i) => {
      const reply = replies[i];
      if (reply?.status !== 'fulfilled' || reply.value === null) return;
      const status = decodeOrUndefined(syncStatusRecord, reply.value);
      if (status !== undefined) this.options.onStatus(key, status);
    });
  }

  /** Stops listening; the subscriber connection is the caller's to close. */
  close(): void {
    this.options.subscriber.off('message', this.onMessage);
    redisHealth(this.options.subscriber).off('ready', this.onReady);
    this.followed.clear();
  }

  private readonly onReady = (): void => {
    const reconnected = this.connectedBefore;
    this.connectedBefore = true;
    if (!reconnected) return;
    this.catchUp().catch((error: unknown) => {
      this.options.onProblem?.(`feedback catch-up failed: ${String(error)}`);
    });
  };

  private readonly onMessage = (channel: string, message: string): void => {
    const key = this.followed.get(channel);
    if (key === undefined) return;
    const status = decodeOrUndefined(syncStatusRecord, message);
    if (status === undefined) {
      this.options.onProblem?.(`feedback of ${keyId(key)} is not a sync status: skipped`);
      return;
    }
    this.options.onStatus(key, status);
  };
}
