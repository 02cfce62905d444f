import type { Redis } from 'ioredis';
import { redisKeys } from '@slicekeeper/contracts';
import type { DriverInventory, RedisKeys, SliceKey, StreamState } from '@slicekeeper/contracts';
import { LuaScript } from '@slicekeeper/queue';
import { canonicalJson } from './canonical-json';

export interface SnapshotWriterOptions {
  redis: Redis;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /**
   * This replica's id in shared mode: every write first checks that the key's watcher lease is
   * still held by it, so that a replica that lost its lease (paused, partitioned) cannot
   * overwrite what the new owner stores. Unset in node mode (no leases).
   */
  owner?: string;
}

/** What `store` did. */
export type StoreResult =
  /** The inventory differed from the stored one: stored under a new snapshot generation. */
  | { kind: 'stored'; generation: number; bytes: number }
  /** Equal to the stored snapshot's inventory: nothing written. */
  | { kind: 'unchanged' }
  /** The key's lease is held by another replica: nothing written. */
  | { kind: 'not-owner' };

export type WithdrawResult = { kind: 'withdrawn' } | { kind: 'absent' } | { kind: 'not-owner' };

const FENCE = `
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
`;

/*
 * KEYS: lease, snapshot, generation. ARGV: owner ('' = no fence), canonical inventory JSON,
 * receivedAt and endpoint as JSON strings. The snapshot is written with the inventory as its
 * last field, so an equal inventory is recognised by comparing the tail of the stored string,
 * without decoding JSON in Lua. A snapshot written some other way only ever compares unequal:
 * one needless write, never a missed one.
 */
const STORE = new LuaScript(
  `${FENCE}
local tail = '"inventory":' .. ARGV[2] .. '}'
local current = redis.call('GET', KEYS[2])
if current and #current >= #tail and string.sub(current, -#tail) == tail then return 0 end
local generation = redis.call('INCR', KEYS[3])
local snapshot = '{"generation":' .. generation .. ',"receivedAt":' .. ARGV[3] .. ',"endpoint":' .. ARGV[4] .. ',' .. tail
redis.call('SET', KEYS[2], snapshot)
return generation`,
  3,
);

/* KEYS: lease, snapshot. ARGV: owner. Keeps the generation counter, so generations keep rising. */
const WITHDRAW = new LuaScript(`${FENCE}\nreturn redis.call('DEL', KEYS[2])`, 2);

/* KEYS: lease, stream state. ARGV: owner, state JSON. */
const SET_STATE = new LuaScript(`${FENCE}\nredis.call('SET', KEYS[2], ARGV[2])\nreturn 1`, 2);

/**
 * Stores inventory snapshots in a key's Redis slot: compare-and-store in one script, so that an
 * unchanged inventory costs one round trip and no write, and a changed one gets the next
 * snapshot generation atomically with its contents.
 */
export class SnapshotWriter {
  private readonly redis: Redis;
  private readonly keys: RedisKeys;
  private readonly owner: string;

  constructor(options: SnapshotWriterOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.owner = options.owner ?? '';
  }

  /** Stores `inventory` as the key's snapshot unless the stored one is equal. */
  async store(
    key: SliceKey,
    endpoint: string,
    inventory: DriverInventory,
    receivedAt: Date,
  ): Promise<StoreResult> {
    const json = canonicalJson(inventory);
    const result = Number(
      await STORE.run(
        this.redis,
        [this.keys.watcherLease(key), this.keys.snapshot(key), this.keys.snapshotGeneration(key)],
        [this.owner, json, JSON.stringify(receivedAt.toISOString()), JSON.stringify(endpoint)],
      ),
    );
    if (result < 0) return { kind: 'not-owner' };
    if (result === 0) return { kind: 'unchanged' };
    return { kind: 'stored', generation: result, bytes: Buffer.byteLength(json) };
  }

  /** Deletes the key's snapshot, so that the syncer withdraws its slices. */
  async withdraw(key: SliceKey): Promise<WithdrawResult> {
    const result = Number(
      await WITHDRAW.run(
        this.redis,
        [this.keys.watcherLease(key), this.keys.snapshot(key)],
        [this.owner],
      ),
    );
    if (result < 0) return { kind: 'not-owner' };
    return result > 0 ? { kind: 'withdrawn' } : { kind: 'absent' };
  }

  /** Records the key's stream state for the registration API's status endpoints. */
  async writeState(key: SliceKey, state: StreamState): Promise<void> {
    await SET_STATE.run(
      this.redis,
      [this.keys.watcherLease(key), this.keys.streamState(key)],
      [this.owner, JSON.stringify(state)],
    );
  }
}
