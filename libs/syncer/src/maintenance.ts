import { Queue, Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { MAINTENANCE_QUEUE_NAME, keyId, parseKeyId, queuePrefix } from '@slicekeeper/contracts';
import type { MaintenanceJob, SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { SyncQueue } from '@slicekeeper/queue';
import { KeyIndex } from '@slicekeeper/state';

export interface MaintenanceOptions {
  /** A dedicated connection for the maintenance worker. */
  connection: Redis;
  /** For reading registrations, removals, stream states and orphans. */
  redis: Redis;
  prefix?: string;
  /** Every managed slice, by key: the watch-fed cache the syncs plan from. */
  cluster: { keys(): SliceKey[]; slicesOf(key: SliceKey): readonly unknown[] };
  syncQueue: SyncQueue;
  logger: Logger;
  /** Every known key is synced once per interval, spread over it, ms. @defaultValue 600000 */
  resyncIntervalMs?: number;
  /** How often the janitor looks for slices of removed or unknown keys, ms. @defaultValue 60000 */
  janitorIntervalMs?: number;
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
  registry?: Registry;
  /** Injected for tests. */
  now?: () => number;
  random?: () => number;
}

/**
 * The syncer's safety nets, run by BullMQ job schedulers so that each run happens on one
 * replica however many there are: a periodic full resync (every known key re-enqueued, spread
 * over the interval, so that anything missed converges) and the janitor (slices of removed keys
 * deleted promptly; slices of unknown keys only after the orphan grace period).
 */
export class Maintenance {
  private readonly queue: Queue;
  private readonly worker: Worker;
  private readonly index: KeyIndex;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly publishedSlices: Gauge | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: MaintenanceOptions) {
    const prefix = queuePrefix(options.prefix ?? 'sk');
    this.index = new KeyIndex({ redis: options.redis, prefix: options.prefix });
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.queue = new Queue(MAINTENANCE_QUEUE_NAME, { connection: options.connection, prefix });
    this.worker = new Worker(
      MAINTENANCE_QUEUE_NAME,
      (job: Job) => this.process(job.name as MaintenanceJob),
      {
        connection: options.connection,
        prefix,
        autorun: false,
        concurrency: 1,
      },
    );
    this.worker.on('error', (error) => {
      options.logger.error({ err: errorMessage(error) }, 'maintenance worker error');
    });
    this.publishedSlices =
      options.registry === undefined
        ? undefined
        : new Gauge({
            name: 'slicekeeper_published_slices',
            help: 'ResourceSlices managed by slicekeeper, as last counted by the janitor.',
            registers: [options.registry],
          });
  }

  /**
   * Creates the job schedulers and runs the worker. The schedulers live in Redis: when Redis
   * comes back after a restart (perhaps empty), they are created again, or the janitor and the
   * resync would stop until a replica restarts.
   */
  async start(): Promise<void> {
    await this.upsertSchedulers();
    this.options.redis.on('ready', this.onRedisReady);
    void this.worker.run().catch((error: unknown) => {
      this.options.logger.error({ err: errorMessage(error) }, 'maintenance worker stopped');
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.options.redis.off('ready', this.onRedisReady);
      await this.worker.close();
      await this.queue.close();
    })();
    return this.closing;
  }

  private readonly onRedisReady = (): void => {
    this.upsertSchedulers().then(
      () => {
        this.options.logger.info('redis reconnected, maintenance schedules ensured');
      },
      (error: unknown) => {
        this.options.logger.error(
          { err: errorMessage(error) },
          'could not re-create the maintenance schedules after Redis reconnected',
        );
      },
    );
  };

  private async upsertSchedulers(): Promise<void> {
    const resyncEvery = this.options.resyncIntervalMs ?? 600_000;
    const janitorEvery = this.options.janitorIntervalMs ?? 60_000;
    await this.queue.upsertJobScheduler(
      'resync',
      { every: resyncEvery },
      { name: 'resync', opts: { removeOnComplete: true, removeOnFail: 10 } },
    );
    await this.queue.upsertJobScheduler(
      'janitor',
      { every: janitorEvery },
      { name: 'janitor', opts: { removeOnComplete: true, removeOnFail: 10 } },
    );
  }

  async process(job: MaintenanceJob): Promise<void> {
    if (job === 'resync') await this.resync();
    else await this.janitor();
  }

  /** Re-enqueues every registered or published key, spread over the resync interval. */
  async resync(): Promise<number> {
    const { syncQueue } = this.options;
    const spread = this.options.resyncIntervalMs ?? 600_000;
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
   * of the managed keys per run.
   */
  async janitor(): Promise<{ removed: number; orphans: number }> {
    const { cluster, syncQueue } = this.options;
    const keys = new Map<string, SliceKey>();
    let slices = 0;
    for (const key of cluster.keys()) {
      slices += cluster.slicesOf(key).length;
      keys.set(keyId(key), key);
    }
    this.publishedSlices?.set(slices);
    const now = this.now();
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
