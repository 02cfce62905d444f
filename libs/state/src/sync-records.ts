import type { RedisClient } from '@slicekeeper/queue';
import { keyId, removalSchema } from '@slicekeeper/contracts';
import type {
  InventorySnapshot,
  Removal,
  SliceKey,
  StreamState,
  SyncStatus,
} from '@slicekeeper/contracts';
import { LuaScript, execWrites, replyOf } from '@slicekeeper/queue';
import type { PipelineReply } from '@slicekeeper/queue';
import { decodeOrUndefined, decodeRecord } from './codec';
import { snapshotRecord, streamStateRecord, syncStatusRecord } from './record-schemas';
import { KeyGuard } from './key-guard';
import type { HeldGuard } from './key-guard';
import { redisKeys } from './redis-keys';
import type { WriteRateLimiter } from './write-rate-limiter';
import type { RedisKeys } from './redis-keys';

export interface SyncRecordsOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** How long a crashed sync can hold its key's guard, ms. @defaultValue 60000 */
  guardTtlMs?: number;
  /** The cluster-wide write budget, when a sync may ask for its first token with its reads. */
  writeLimiter?: WriteRateLimiter;
}

/**
 * What the slice-syncer keeps per key: it reads the key's snapshot, registrations, removal and
 * status, and records the outcome of each sync (status, the known-keys and orphan indexes). One
 * sync is one {@link SyncTurn}: two round trips, one that takes the key's guard with the reads
 * and one that records the outcome with the guard's release. Each is a pipeline within the
 * key's hash slot; what lives in other slots (the write budget, the known-keys and orphan
 * indexes) is sent beside it at the same time, never in it, so that a Redis Cluster can take
 * every pipeline to one node. The key's stream state (written by the watcher) tells a sync
 * whether the driver is unreachable. What is published is not kept here: the syncer's
 * informer cache of the cluster is the one view of it.
 */
export class SyncRecords {
  private readonly keys: RedisKeys;
  private readonly guard: KeyGuard;
  private readonly writeLimiter: WriteRateLimiter | undefined;

  private readonly redis: RedisClient;

  constructor(options: SyncRecordsOptions) {
    this.redis = options.redis;
    this.writeLimiter = options.writeLimiter;
    this.keys = redisKeys(options.prefix);
    this.guard = new KeyGuard(options.redis, options.guardTtlMs ?? 60_000);
  }

  /**
   * Takes the key's guard for `holder` (the BullMQ job id) and reads the key; undefined when
   * another sync holds the guard. With `prepayWrite`, the sync's first write token is asked for
   * in the same round trip (a sync that brings news nearly always writes; a token it does not
   * use is lost, never overspent): `SyncTurn.prepaidWrite`.
   */
  async begin(
    key: SliceKey,
    holder: string,
    { prepayWrite = false }: { prepayWrite?: boolean } = {},
  ): Promise<SyncTurn | undefined> {
    // Asked for beside the reads, not in their pipeline: the budget lives in a slot of its own
    // (on one server both go out in the tick's write, see `execPipeline`).
    const prepaid = prepayWrite ? this.writeLimiter?.acquire() : undefined;
    prepaid?.catch(() => undefined);
    const taken = await this.guard.acquireWith(this.keys.syncGuard(key), holder, (pipeline) => {
      pipeline
        .get(this.keys.snapshot(key))
        .hlen(this.keys.registrations(key))
        .get(this.keys.syncStatus(key))
        .get(this.keys.removal(key))
        .get(this.keys.streamState(key))
        .exists(this.keys.snapshotGeneration(key));
    });
    if (taken === undefined) return undefined;
    return new SyncTurn(this.redis, this.keys, key, taken.guard, taken.replies, prepaid);
  }
}

/**
 * How often a key that stays synced is written into the known-keys index again, ms: a
 * membership lost on one node of a Cluster (a failover) comes back within it.
 */
const KNOWN_KEYS_REFRESH_MS = 3_600_000;

/* KEYS: registrations, snapshot. Deletes the snapshot of a key that has no registration. */
const FORGET_SNAPSHOT = new LuaScript(
  `if redis.call('HLEN', KEYS[1]) == 0 then return redis.call('DEL', KEYS[2]) end
return 0`,
  2,
);

/**
 * One sync's hold on its key: what it read, and the one way to record its outcome. Records are
 * decoded when asked for, so that a corrupt one fails the sync inside its own error handling
 * (outcome `corrupt`) and a status is only parsed when a failed sync needs it.
 */
export class SyncTurn {
  /** The previous status, decoded once (a sync asks for it several times). */
  private decodedStatus: { status: SyncStatus | undefined } | undefined;
  /** The stream state, once decoded (a sync asks for it with its reads and its record). */
  private decodedStream: { stream: StreamState | undefined } | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly key: SliceKey,
    private readonly guard: HeldGuard,
    private readonly reads: readonly PipelineReply[],
    /** The first write's token, when asked for with the reads; spend it before the first write. */
    readonly prepaidWrite: Promise<void> | undefined,
  ) {}

  /** Whether the key has a registration: a key without one is never published. */
  registered(): boolean {
    return Number(this.read(Read.Registrations)) > 0;
  }

  /** The key's latest snapshot. @throws CorruptRecordError */
  snapshot(): InventorySnapshot | undefined {
    const raw = this.text(Read.Snapshot);
    if (raw === null) return undefined;
    return decodeRecord(snapshotRecord, raw, `snapshot of ${this.id}`);
  }

  /**
   * Whether a snapshot generation was ever handed out for the key in the data set Redis holds
   * (the counter outlives the snapshot): a snapshot missing beside it was withdrawn by the
   * watcher, one missing without it was never sent, or was lost with Redis' data.
   */
  generationIssued(): boolean {
    return Number(this.read(Read.SnapshotGeneration)) > 0;
  }

  /** The key's removal, while its last removal stands. @throws CorruptRecordError */
  removal(): Removal | undefined {
    const raw = this.text(Read.Removal);
    if (raw === null) return undefined;
    return decodeRecord(removalSchema, raw, `removal of ${this.id}`);
  }

  /** What the watcher last recorded of the key's stream. @throws CorruptRecordError */
  streamState(): StreamState | undefined {
    if (this.decodedStream === undefined) {
      const raw = this.text(Read.StreamState);
      this.decodedStream = {
        stream:
          raw === null
            ? undefined
            : decodeRecord(streamStateRecord, raw, `stream state of ${this.id}`),
      };
    }
    return this.decodedStream.stream;
  }

  /**
   * The status the key's previous sync recorded; undefined when none or unreadable, which only
   * loses what a failed sync shows as still published.
   */
  previousStatus(): SyncStatus | undefined {
    if (this.decodedStatus === undefined) {
      const [error, raw] = this.reads[Read.Status] ?? [null, null];
      this.decodedStatus = {
        status:
          error === null && typeof raw === 'string'
            ? decodeOrUndefined(syncStatusRecord, raw)
            : undefined,
      };
    }
    return this.decodedStatus.status;
  }

  /**
   * Records the outcome and releases the guard, in one round trip: the key's status, and beside
   * it the indexes the outcome changes. A withdrawal with `forgetSnapshot` also deletes the
   * snapshot, unless the key registered again meanwhile: a registration then publishes from a
   * fresh stream, never from the one that was removed. With `announce`, the status is also
   * published on the key's feedback channel, for the watcher to tell the driver.
   */
  async finish(
    status: SyncStatus,
    options: { forgetSnapshot?: boolean; announce?: boolean } = {},
  ): Promise<void> {
    const id = this.id;
    // Outside the key's slot, beside its record: in the same tick, so that on one server they go
    // out in the record's write (one system call less for a key's first sync).
    const indexes: Promise<void>[] = [];
    const finishedAt = Date.parse(status.finishedAt);
    if (status.outcome === 'synced' && !this.knownAlready(status.attempt, finishedAt)) {
      indexes.push(
        execWrites(this.redis, (pipeline) => pipeline.zadd(this.keys.knownKeys, finishedAt, id)),
      );
    }
    if (status.outcome === 'withdrawn') {
      indexes.push(
        execWrites(this.redis, (pipeline) =>
          pipeline.zrem(this.keys.knownKeys, id).zrem(this.keys.orphans, id),
        ),
      );
    }
    const json = JSON.stringify(status);
    const record = this.guard.releaseWith((pipeline) => {
      pipeline.set(this.keys.syncStatus(this.key), json);
      // Beside the status, as a plain number: the watcher's store script reads it (owesSync).
      pipeline.set(this.keys.syncedGeneration(this.key), String(status.snapshotGeneration));
      if (options.announce === true) pipeline.publish(this.keys.feedbackChannel(this.key), json);
      if (status.outcome === 'withdrawn' && options.forgetSnapshot === true) {
        const keys = [this.keys.registrations(this.key), this.keys.snapshot(this.key)];
        FORGET_SNAPSHOT.queue(pipeline, keys, []);
      }
    });
    await Promise.all([record, ...indexes]);
  }

  /**
   * Whether the key is in the known-keys index: its previous sync recorded `synced`, which
   * wrote it there, within the same refresh window. Not on a retry: the previous attempt's
   * status may have been written while its index write failed.
   */
  private knownAlready(attempt: number, finishedAt: number): boolean {
    const previous = this.previousStatus();
    if (attempt > 1 || previous?.outcome !== 'synced') return false;
    const window = (ms: number) => Math.floor(ms / KNOWN_KEYS_REFRESH_MS);
    return window(Date.parse(previous.finishedAt)) === window(finishedAt);
  }

  /** Releases the guard, unless {@link finish} already did. */
  release(): Promise<void> {
    return this.guard.release();
  }

  private get id(): string {
    return keyId(this.key);
  }

  /** A read's reply; throws the error Redis answered with (a wrong type, say). */
  private read(which: Read): unknown {
    const reply = this.reads[which];
    return reply === undefined ? null : replyOf(reply);
  }

  private text(which: Read): string | null {
    const value = this.read(which);
    return typeof value === 'string' ? value : null;
  }
}

/** The reads {@link SyncRecords.begin} sends, in order. */
enum Read {
  Snapshot,
  Registrations,
  Status,
  Removal,
  StreamState,
  SnapshotGeneration,
}
