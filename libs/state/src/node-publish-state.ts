import { batchedMget } from '@slicekeeper/queue';
import type { RedisClient } from '@slicekeeper/queue';
import { keyId, parseKeyId } from '@slicekeeper/contracts';
import type { SliceKey, StreamState, SyncStatus } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import { CorruptRecordError, decodeRecord } from './codec';
import { streamStateRecord, syncStatusRecord } from './record-schemas';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

/** What a registered key's records say about how far its inventory is published. */
export type KeyPublishState =
  | {
      readonly key: SliceKey;
      /** The syncer's last recorded status; absent until a sync of the key recorded one. */
      readonly status?: SyncStatus;
      /** The watcher's stream state; absent until a watcher opened the key's stream. */
      readonly stream?: StreamState;
      /**
       * The latest snapshot generation handed out for the key (kept across withdrawals, so it
       * only rises); absent before the key's first snapshot.
       */
      readonly snapshotGeneration?: number;
      readonly corrupt?: undefined;
    }
  | {
      readonly key: SliceKey;
      /**
       * One of the key's records does not decode: the {@link CorruptRecordError}'s message,
       * naming the record and the problem. Nothing else of the key is reported half-read.
       */
      readonly corrupt: string;
    };

export interface NodePublishStateOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
}

/** A snapshot generation counter as INCR writes it. */
const COUNTER = /^\d+$/;

/**
 * Reads, for the `DRAResourcesPublished` Node condition, where each registered key of a node
 * stands: its sync status, its stream state and its snapshot generation counter. The node's keys
 * come from the registration index (one lexical range: ids are `<node>/<driver>`); each key's
 * three records share its hash slot and are read with one MGET, the keys in parallel and in one
 * write (keys live in different Redis Cluster slots, so no command spans two keys). The reads are not one
 * snapshot in time: whatever changes after them asks for another evaluation.
 *
 * Corrupt values follow the one policy of `CorruptRecordError`: never used half-read. A key with
 * one is reported as `corrupt` (the condition names it), so that the node's other keys still
 * count; a Redis failure rejects.
 */
export class NodePublishState {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(options: NodePublishStateOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
  }

  /**
   * The registered keys of `node` ('' = the cluster-scoped keys), in driver order, and then
   * those of `published` (keys whose slices are still up) that are not registered: a driver
   * that deregistered to restart keeps its slices through the removal grace, and its key still
   * counts for the node.
   */
  async read(node: string, published: readonly SliceKey[] = []): Promise<KeyPublishState[]> {
    const ids = await this.redis.zrangebylex(
      this.keys.registrationIndex,
      `[${node}/`,
      `[${node}/\xff`,
    );
    const registered = new Set(ids);
    const unregistered = published.map(keyId).filter((id) => !registered.has(id));
    return Promise.all([...ids, ...unregistered.sort()].map((id) => this.readKey(node, id)));
  }

  private async readKey(node: string, id: string): Promise<KeyPublishState> {
    let key: SliceKey;
    try {
      key = parseKeyId(id);
    } catch (error) {
      return {
        key: { node, driver: id.slice(node.length + 1) },
        corrupt: new CorruptRecordError('registration index entry', errorMessage(error)).message,
      };
    }
    const [status, stream, generation] = await batchedMget(this.redis, [
      this.keys.syncStatus(key),
      this.keys.streamState(key),
      this.keys.snapshotGeneration(key),
    ]);
    try {
      return {
        key,
        ...(status == null
          ? {}
          : { status: decodeRecord(syncStatusRecord, status, `status of ${keyId(key)}`) }),
        ...(stream == null
          ? {}
          : { stream: decodeRecord(streamStateRecord, stream, `stream state of ${keyId(key)}`) }),
        ...(generation == null ? {} : { snapshotGeneration: counterOf(key, generation) }),
      };
    } catch (error) {
      if (error instanceof CorruptRecordError) return { key, corrupt: error.message };
      throw error;
    }
  }
}

function counterOf(key: SliceKey, raw: string): number {
  const value = Number(raw);
  if (!COUNTER.test(raw) || !Number.isSafeInteger(value)) {
    throw new CorruptRecordError(
      `snapshot generation of ${keyId(key)}`,
      `not a non-negative integer: ${JSON.stringify(raw.slice(0, 40))}`,
    );
  }
  return value;
}
