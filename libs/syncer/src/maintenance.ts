import type { RedisClient } from '@slicekeeper/queue';
import type { Logger } from 'pino';
import { keyId, parseKeyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import type { SyncQueue } from '@slicekeeper/queue';
import { KeyIndex, RegistrationStore } from '@slicekeeper/state';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import type { SyncerMetrics } from './syncer-metrics';

export interface MaintenanceOptions {
  /** For reading registrations, removals, stream states and orphans. */
  redis: RedisClient;
  prefix?: string;
  /** Every managed slice, by key: the watch-fed cache the syncs plan from. */
  cluster: { keys(): SliceKey[]; slicesOf(key: SliceKey): readonly unknown[] };
  syncQueue: SyncQueue;
  logger: Logger;
  /**
   * Every known key is synced once per interval, spread over it, ms; the resync runs this
   * often. @defaultValue 600000
   */
  resyncIntervalMs?: number;
  /**
   * How long slices of a key slicekeeper has never heard of survive, ms: long enough for drivers
   * to re-register after Redis lost its data. @defaultValue 600000
   */
  orphanGraceMs?: number;
  /**
   * The largest share of the managed keys whose orphaned slices one janitor run withdraws (at
   * least one key): many orphans at once mean Redis lost its data rather than that many drivers
   * went away, and the watchers are restoring it. @defaultValue 0.1
   */
  orphanShare?: number;
  metrics?: Pick<SyncerMetrics, 'publishedSlices'>;
  /** When orphans were first seen comes from it. @defaultValue systemClock */
  clock?: Pick<Clock, 'now'>;
  random?: () => number;
}

/**
 * The syncer's safety nets: a periodic full resync (every known key re-enqueued, spread over the
 * interval, so that anything missed converges) and the janitor (slices of removed keys deleted
 * promptly; slices of unknown keys only after the orphan grace period). When they run is the
 * `SyncWorker`'s business: its job schedulers run each on one replica however many there are.
 */
export class Maintenance {
  /** How often the resync runs and the interval its syncs are spread over, ms. */
  readonly resyncIntervalMs: number;
  private readonly index: KeyIndex;
  private readonly registry: RegistrationStore;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly random: () => number;

  constructor(private readonly options: MaintenanceOptions) {
    this.resyncIntervalMs = options.resyncIntervalMs ?? 600_000;
    this.index = new KeyIndex({ redis: options.redis, prefix: options.prefix });
    this.clock = options.clock ?? systemClock;
    this.registry = new RegistrationStore({
      redis: options.redis,
      prefix: options.prefix,
      clock: this.clock,
    });
    this.random = options.random ?? Math.random;
  }

  /** Re-enqueues every registered or published key, spread over the resync interval. */
  async resync(): Promise<number> {
    const { syncQueue } = this.options;
    const spread = this.resyncIntervalMs;
    const ids = await this.index.activeKeyIds();
    for (const id of ids)
      await syncQueue.enqueue(parseKeyId(id), 'resync', Math.floor(this.random() * spread));
    this.options.logger.info({ keys: ids.size }, 'resync scheduled');
    return ids.size;
  }

  /**
   * Finds managed slices whose key is not registered. A removed key is synced at once (the sync
   * withdraws its slices once the removal's grace ends). A key whose driver still streams (its
   * registration was lost with Redis' data; its watcher restores it) is left alone. Any other key
   * is an orphan, withdrawn once it has been one for the grace period, and at most `orphanShare`
   * of the managed keys per run: the janitor records its removal, and the removal withdraws it.
   * A sync withdraws nothing on its own for a key with neither a registration nor a removal:
   * Redis lost that key's data.
   */
  async janitor(): Promise<{ removed: number; orphans: number }> {
    const { cluster, syncQueue } = this.options;
    const keys = new Map<string, SliceKey>();
    let slices = 0;
    for (const key of cluster.keys()) {
      slices += cluster.slicesOf(key).length;
      keys.set(keyId(key), key);
    }
    this.options.metrics?.publishedSlices.set(slices);
    const now = this.clock.now();
    const grace = this.options.orphanGraceMs ?? 600_000;
    const budget = Math.max(1, Math.floor(keys.size * (this.options.orphanShare ?? 0.1)));
    let removed = 0;
    let orphans = 0;
    let heldBack = 0;
    for (const [id, key] of keys) {
      const { registered, removed: removing, streaming } = await this.index.standing(key);
      if (registered || streaming) {
        await this.index.clearOrphan(id);
        continue;
      }
      if (removing) {
        await syncQueue.enqueue(key, 'janitor');
        removed++;
        continue;
      }
      const since = await this.index.markOrphan(key, now);
      if (now - since < grace) continue;
      if (orphans >= budget) {
        heldBack++;
        continue;
      }
      if (!(await this.registry.removeOrphan(key, since))) continue;
      await syncQueue.enqueue(key, 'janitor');
      orphans++;
    }
    // Orphans whose slices are all gone have nothing left to do.
    for (const id of await this.index.orphanIds()) {
      if (!keys.has(id)) await this.index.clearOrphan(id);
    }
    if (heldBack > 0) {
      this.options.logger.warn(
        { orphans, heldBack, budget },
        'many orphaned keys at once, withdrawing a share per run',
      );
    }
    if (removed + orphans > 0)
      this.options.logger.info({ removed, orphans }, 'janitor enqueued withdrawals');
    return { removed, orphans };
  }
}
