import { batchedMget } from '@slicekeeper/queue';
import type { RedisClient } from '@slicekeeper/queue';
import { z } from 'zod';
import { keyId } from '@slicekeeper/contracts';
import type { SliceKey, StreamState, SyncStatus } from '@slicekeeper/contracts';
import { decodeRecord } from './codec';
import { snapshotRecord, streamStateRecord, syncStatusRecord } from './record-schemas';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

/** What the latest inventory snapshot of a key holds, without the devices themselves. */
export const snapshotSummarySchema = z
  .object({
    /** The snapshot generation (increases with every snapshot of the key). */
    generation: z.number().int().positive(),
    /** When the watcher received the inventory, RFC 3339. */
    receivedAt: z.iso.datetime({ offset: true }),
    /** The plugin endpoint the inventory came from. */
    endpoint: z.string(),
    pools: z.array(
      z.object({ name: z.string(), devices: z.number().int().nonnegative() }).strict(),
    ),
    /** Devices in all pools. */
    devices: z.number().int().nonnegative(),
    /** Why the driver's latest message was not taken (its pools are then empty). */
    rejected: z.string().optional(),
  })
  .strict();
export type SnapshotSummary = z.infer<typeof snapshotSummarySchema>;

/** Where a key stands, as the plugin-watcher and the slice-syncer last recorded it. */
export interface KeyStatus {
  /** Absent until a watcher opened the key's stream. */
  stream?: StreamState;
  /** Absent until the first inventory arrived. */
  snapshot?: SnapshotSummary;
  /** Absent until the first sync finished. */
  sync?: SyncStatus;
}

export interface KeyStatusReaderOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
}

/**
 * Reads a key's status records for the registration API's status endpoints. The three records
 * share the key's hash slot, so one MGET reads them together (also on Redis Cluster). Records are
 * checked with the contracts' schemas: a corrupt one is a `CorruptRecordError`, never shown half-read.
 */
export class KeyStatusReader {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;

  constructor(options: KeyStatusReaderOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
  }

  async read(key: SliceKey): Promise<KeyStatus> {
    const [stream, snapshot, sync] = await batchedMget(this.redis, [
      this.keys.streamState(key),
      this.keys.snapshot(key),
      this.keys.syncStatus(key),
    ]);
    const id = keyId(key);
    const status: KeyStatus = {};
    if (stream != null)
      status.stream = decodeRecord(streamStateRecord, stream, `stream state of ${id}`);
    if (snapshot != null) {
      const parsed = decodeRecord(snapshotRecord, snapshot, `snapshot of ${id}`);
      const pools = (parsed.inventory?.pools ?? []).map((pool) => ({
        name: pool.name,
        devices:
          pool.devices.length +
          (pool.slices ?? []).reduce((sum, slice) => sum + slice.devices.length, 0),
      }));
      status.snapshot = {
        generation: parsed.generation,
        receivedAt: parsed.receivedAt,
        endpoint: parsed.endpoint,
        pools,
        devices: pools.reduce((sum, pool) => sum + pool.devices, 0),
        ...(parsed.rejected === undefined ? {} : { rejected: parsed.rejected }),
      };
    }
    if (sync != null) status.sync = decodeRecord(syncStatusRecord, sync, `status of ${id}`);
    return status;
  }
}
