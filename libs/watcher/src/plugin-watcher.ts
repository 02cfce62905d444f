import { redisHealth } from '@slicekeeper/queue';
import type { RedisClient } from '@slicekeeper/queue';
import type { Registry } from 'prom-client';
import { keyId, parseKeyId } from '@slicekeeper/contracts';
import type { Registration, SliceKey, StreamStateName } from '@slicekeeper/contracts';
import type { Logger } from '@slicekeeper/observability';
import type { Tracing } from '@slicekeeper/telemetry';
import { systemClock } from '@slicekeeper/time';
import type { BackoffOptions, Clock } from '@slicekeeper/time';
import { createGrpcConnector } from './grpc-connector';
import { KeyWatch } from './key-watch';
import { LeaseManager } from './lease-manager';
import type { PublisherConnector } from './publisher-connector';
import { RegistrationStore, SnapshotWriter, SyncFeedback } from '@slicekeeper/state';
import { RegistrationFollower } from './registration-follower';
import type { SyncEnqueuer } from './sync-enqueuer';
import { WatcherMetrics } from './watcher-metrics';

/** Shared mode: several replicas split the keys through Redis leases. */
export interface SharedModeOptions {
  /** This replica's unique id (e.g. the pod name plus a random suffix). */
  replicaId: string;
  /** Lease lifetime, ms; a dead replica's keys are taken over within about `leaseMs × 4/3`. @defaultValue 10000 */
  leaseMs?: number;
}

export interface PluginWatcherOptions {
  /** Commands. The watcher duplicates it for its blocking registration follow. */
  redis: RedisClient;
  /** Where sync jobs go (`SyncQueue`). */
  queue: SyncEnqueuer;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Node mode (DaemonSet): watch only this node's plugins. */
  nodeName?: string;
  /** Shared mode: own only the keys this replica holds the lease of. Unset: own every key. */
  shared?: SharedModeOptions;
  /** No live stream for this long withdraws a key's slices, ms. @defaultValue 30000 */
  wipeDelayMs?: number;
  /** Reconnect backoff. @defaultValue 5 s doubling to 180 s, jitter 0.2 */
  backoff?: BackoffOptions;
  /** How long one blocking read of registration events waits, ms. @defaultValue 1000 */
  followBlockMs?: number;
  /** Opens plugin streams. @defaultValue gRPC (`createGrpcConnector()`) */
  connector?: PublisherConnector;
  /** @defaultValue the system clock */
  clock?: Clock;
  logger: Logger;
  /** Prometheus registry for the watcher's metrics; none when unset. */
  metrics?: Registry;
  /**
   * A connection of its own for the sync statuses the syncer announces, which the watcher
   * passes on to the drivers (`NotifyPublishStatus`). Without it drivers get no feedback.
   */
  feedbackSubscriber?: RedisClient;
  /**
   * Spans (tracing on): `receive inventory` per driver message, `store snapshot` per Redis write
   * of a key's snapshot (its traceparents written for the syncer), `publish sync` per sync asked
   * for. None when unset: no span is made.
   */
  tracing?: Tracing;
}

/**
 * The plugin-watcher: one `WatchResources` stream per registered plugin it owns, each inventory
 * stored as its key's snapshot in Redis with a sync job enqueued (see {@link KeyWatch}).
 * Everything durable lives in Redis, so a restarted watcher resumes without churn: the first
 * message of each resumed stream compares equal to the stored snapshot and writes nothing.
 */
export class PluginWatcher {
  private readonly options: PluginWatcherOptions;
  private readonly clock: Clock;
  private readonly writer: SnapshotWriter;
  private readonly registry: RegistrationStore;
  private readonly follower: RegistrationFollower;
  private readonly leases: LeaseManager | undefined;
  private readonly connector: PublisherConnector;
  private readonly metrics: WatcherMetrics | undefined;
  private readonly feedback: SyncFeedback | undefined;
  private readonly registrations = new Map<string, Registration[]>();
  private readonly watches = new Map<string, KeyWatch>();
  private readonly closingWatches = new Set<Promise<void>>();
  private started = false;
  private closing: Promise<void> | undefined;
  private readonly onRedisReady = (): void => {
    this.options.logger.info('redis reconnected, republishing snapshots and reloading');
    for (const watch of this.watches.values()) watch.republish();
    this.follower.reload();
  };

  constructor(options: PluginWatcherOptions) {
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.connector = options.connector ?? createGrpcConnector();
    const prefix = options.prefix === undefined ? {} : { prefix: options.prefix };
    this.writer = new SnapshotWriter({
      redis: options.redis,
      ...prefix,
      ...(options.shared === undefined
        ? {}
        : {
            owner: options.shared.replicaId,
            ...(options.shared.leaseMs === undefined ? {} : { leaseMs: options.shared.leaseMs }),
          }),
    });
    this.registry = new RegistrationStore({ redis: options.redis, ...prefix });
    this.follower = new RegistrationFollower({
      redis: options.redis,
      ...prefix,
      ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
      ...(options.followBlockMs === undefined ? {} : { blockMs: options.followBlockMs }),
      clock: this.clock,
      logger: options.logger,
      onLoad: (all) => {
        this.onLoad(all);
      },
      onKey: (key, registrations) => {
        this.onKey(key, registrations);
      },
      onDataLost: () => this.restoreLive(),
    });
    if (options.shared !== undefined) {
      this.leases = new LeaseManager({
        redis: options.redis,
        ...prefix,
        replicaId: options.shared.replicaId,
        ...(options.shared.leaseMs === undefined ? {} : { leaseMs: options.shared.leaseMs }),
        clock: this.clock,
        logger: options.logger,
        onAcquired: (id) => {
          options.logger.info({ key: id }, 'lease acquired');
          this.reconcile(id);
        },
        onLost: (id, reason) => {
          options.logger.info({ key: id, reason }, 'lease released');
          this.reconcile(id);
        },
      });
    }
    if (options.feedbackSubscriber !== undefined) {
      this.feedback = new SyncFeedback({
        redis: options.redis,
        subscriber: options.feedbackSubscriber,
        ...prefix,
        onStatus: (key, status) => this.watches.get(keyId(key))?.notify(status),
        onProblem: (problem) => {
          options.logger.warn({ problem }, 'publish feedback');
        },
      });
    }
    this.metrics =
      options.metrics === undefined
        ? undefined
        : new WatcherMetrics(options.metrics, {
            streamsByState: () => this.streamsByState(),
            oldestMessageAgeSeconds: () => this.oldestMessageAgeSeconds(),
            leasesHeld: () => this.leases?.heldCount,
          });
  }

  /** Loads the registrations and opens the streams of the owned ones; then follows changes. */
  async start(): Promise<void> {
    this.started = true;
    await this.follower.start();
    await this.leases?.start();
    redisHealth(this.options.redis).on('ready', this.onRedisReady);
  }

  /** The keys this watcher streams for, by id. */
  get keys(): string[] {
    return [...this.watches.keys()];
  }

  /** The watch of a key, while this watcher owns it and it is registered. */
  watch(key: SliceKey): KeyWatch | undefined {
    return this.watches.get(keyId(key));
  }

  /** Number of plugin streams per state, and of wiped keys. */
  streamsByState(): Record<StreamStateName, number> {
    const counts: Record<StreamStateName, number> = {
      connecting: 0,
      streaming: 0,
      backoff: 0,
      ended: 0,
      unimplemented: 0,
      wiped: 0,
    };
    for (const watch of this.watches.values()) {
      for (const stream of watch.pluginStreams) {
        if (stream.state !== 'closed') counts[stream.state]++;
      }
      if (watch.state?.state === 'wiped') counts.wiped++;
    }
    return counts;
  }

  /** Stops following, releases leases, cancels every stream. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      redisHealth(this.options.redis).off('ready', this.onRedisReady);
      await this.follower.close();
      await this.leases?.close();
      await Promise.all([...this.watches.values()].map((watch) => watch.close('shutdown')));
      this.watches.clear();
      this.feedback?.close();
      await Promise.all(this.closingWatches);
    })();
    return this.closing;
  }

  /**
   * Redis came back empty while this watcher holds streams: it writes back their registrations
   * (and takes their leases back, in shared mode) and their snapshots, so that nothing is
   * withdrawn while the drivers stream, and no driver has to register again. A key removed
   * meanwhile is left alone.
   */
  private async restoreLive(): Promise<void> {
    let restored = 0;
    for (const [id, watch] of this.watches) {
      const registrations = this.registrations.get(id) ?? [];
      if (registrations.length === 0) continue;
      const result = await this.writer.restore(watch.key, registrations);
      if (result.kind === 'not-owner') {
        this.leases?.lost(id);
        continue;
      }
      if (result.kind === 'removed') continue;
      await this.registry.reindex(watch.key, registrations);
      watch.republish();
      restored++;
    }
    this.options.logger.warn({ keys: restored }, 'restored registrations and snapshots');
  }

  private onLoad(all: Registration[]): void {
    const byKey = new Map<string, Registration[]>();
    for (const registration of all) {
      const id = keyId(registration);
      byKey.set(id, [...(byKey.get(id) ?? []), registration]);
    }
    for (const id of [...this.registrations.keys()]) {
      if (!byKey.has(id)) this.registrations.delete(id);
    }
    for (const [id, registrations] of byKey) this.registrations.set(id, registrations);
    this.leases?.setCandidates(byKey.keys());
    for (const id of new Set([...this.watches.keys(), ...byKey.keys()])) this.reconcile(id);
  }

  private onKey(key: SliceKey, registrations: Registration[]): void {
    const id = keyId(key);
    if (registrations.length === 0) {
      this.registrations.delete(id);
      this.leases?.removeCandidate(id);
    } else {
      this.registrations.set(id, registrations);
      this.leases?.addCandidate(id);
    }
    this.reconcile(id);
  }

  /** Makes the key's watch match its registrations and ownership. */
  private reconcile(id: string): void {
    if (this.closing !== undefined || !this.started) return;
    const registrations = this.registrations.get(id);
    const owned = this.leases === undefined || this.leases.holds(id);
    let watch = this.watches.get(id);
    if (registrations === undefined || registrations.length === 0 || !owned) {
      if (watch !== undefined) {
        this.watches.delete(id);
        this.follow(watch.key, false);
        const reason = owned ? 'deregistered' : 'lease lost';
        const closed = watch.close(reason);
        this.closingWatches.add(closed);
        void closed.finally(() => this.closingWatches.delete(closed));
      }
      return;
    }
    if (watch === undefined) {
      const key = parseKeyId(id);
      watch = new KeyWatch({
        key,
        writer: this.writer,
        queue: this.options.queue,
        connector: this.connector,
        clock: this.clock,
        ...(this.options.backoff === undefined ? {} : { backoff: this.options.backoff }),
        wipeDelayMs: this.options.wipeDelayMs ?? 30_000,
        logger: this.options.logger.child({ node: key.node, driver: key.driver }),
        ...(this.metrics === undefined ? {} : { metrics: this.metrics }),
        ...(this.options.tracing === undefined ? {} : { tracing: this.options.tracing }),
        onNotOwner: () => this.leases?.lost(id),
      });
      this.watches.set(id, watch);
      this.follow(key, true);
    }
    watch.setRegistrations(registrations);
  }

  /** Starts or stops passing the key's sync statuses on to its driver. */
  private follow(key: SliceKey, on: boolean): void {
    const feedback = this.feedback;
    if (feedback === undefined) return;
    (on ? feedback.follow(key) : feedback.unfollow(key)).catch((error: unknown) => {
      // ioredis subscribes again after a reconnect; a failure here only costs feedback.
      this.options.logger.warn(
        { ...key, err: String(error) },
        'publish feedback (un)follow failed',
      );
    });
  }

  private oldestMessageAgeSeconds(): number {
    const now = this.clock.now();
    let oldest = 0;
    for (const watch of this.watches.values()) {
      for (const stream of watch.pluginStreams) {
        if (stream.state === 'streaming' && stream.lastMessageAt !== undefined) {
          oldest = Math.max(oldest, (now - stream.lastMessageAt) / 1000);
        }
      }
    }
    return oldest;
  }
}
