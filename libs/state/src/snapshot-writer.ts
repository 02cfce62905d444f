import type { RedisClient } from '@slicekeeper/queue';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';
import {
  MAX_SNAPSHOT_TRACE_LINKS,
  TRACEPARENT_PATTERN,
  TRACEPARENT_RULE,
} from '@slicekeeper/contracts';
import type { DriverInventory, Registration, SliceKey, StreamState } from '@slicekeeper/contracts';
import { LuaScript } from '@slicekeeper/queue';
import { canonicalJson } from './canonical-json';
import { OWES_SYNC_LUA } from './owes-sync-lua';

export interface SnapshotWriterOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /**
   * This replica's id in shared mode: every write first checks that the key's watcher lease is
   * still held by it, so that a replica that lost its lease (paused, partitioned) cannot
   * overwrite what the new owner stores. Unset in node mode (no leases).
   */
  owner?: string;
  /** Lifetime of a lease taken back after Redis lost its data, ms. @defaultValue 10000 */
  leaseMs?: number;
}

/** What `store` did. */
export type StoreResult =
  /** The inventory differed from the stored one: stored under a new snapshot generation. */
  | { kind: 'stored'; generation: number; bytes: number }
  /** Equal to the stored snapshot's inventory: nothing written. */
  | { kind: 'unchanged' }
  /**
   * Equal to the stored snapshot, which no sync has finished yet (a watcher crashed between its
   * store and its enqueue, or a registration's enqueue was lost): ask for the sync again.
   */
  | { kind: 'unsynced' }
  /** The key has no registration (it was removed): nothing written, nothing ever published. */
  | { kind: 'unregistered' }
  /** The key's lease is held by another replica: nothing written. */
  | { kind: 'not-owner' };

export type WithdrawResult = { kind: 'withdrawn' } | { kind: 'absent' } | { kind: 'not-owner' };

/** What `restore` did: the registrations it wrote back (0 when nothing was missing). */
export type RestoreResult =
  | { kind: 'restored'; registrations: number }
  /** The key was removed meanwhile: nothing restored. */
  | { kind: 'removed' }
  | { kind: 'not-owner' };

// Refuses a write when another replica holds the key's lease. A lease that is gone (Redis came
// back empty) is no other owner: the write goes on, and the lease manager takes the lease back.
const FENCE = `
if ARGV[1] ~= '' then
  local holder = redis.call('GET', KEYS[1])
  if holder and holder ~= ARGV[1] then return -1 end
end
`;

/*
 * KEYS: lease, snapshot, generation, registrations, removal, synced generation, stream state.
 * ARGV: owner ('' = no fence), the snapshot's content field (`"inventory":<canonical JSON>` or
 * `"rejected":<JSON string>`), receivedAt and endpoint as JSON strings, the traceparents as a
 * JSON array ('' = none: no field written, nothing parsed), and the stream state JSON, written
 * with a stored snapshot only ('' = leave it). A key without a registration, or with
 * a removal, stores nothing: a late message of a removed plugin must never be published. The
 * snapshot is written with its content as its last field, so an equal one is recognised by
 * comparing the tail of the stored string, without decoding JSON in Lua; a snapshot written some
 * other way only ever compares unequal: one needless write, never a missed one. An equal snapshot
 * that still owes a sync (`owes_sync` of the generation this script wrote into it and of the plain
 * synced generation the syncer writes) answers -2. A key the syncer last finished before it wrote
 * the synced generation (an upgrade) reads as never synced: at most one extra sync per key, after
 * which the syncer has written it.
 *
 * Traceparents go right after receivedAt, before the content (so the tail comparison is
 * untouched). When the snapshot replaced still owes a sync, its traceparents are carried forward,
 * old then new, the newest MAX_SNAPSHOT_TRACE_LINKS kept: the sync that will publish this one
 * stands for those messages too. They are read back with a Lua pattern anchored at the start of
 * the record (`%b[]` after receivedAt): acceptable because this script is the only writer of the
 * record and writes that prefix itself (receivedAt is an ISO time, traceparents hold no quote or
 * bracket); a record without the field, or of another shape, carries nothing forward.
 */
const STORE = new LuaScript(
  `${FENCE}${OWES_SYNC_LUA}
if redis.call('HLEN', KEYS[4]) == 0 or redis.call('EXISTS', KEYS[5]) == 1 then return -3 end
local tail = ARGV[2] .. '}'
local current = redis.call('GET', KEYS[2])
if current and #current >= #tail and string.sub(current, -#tail) == tail then
  local stored = tonumber(string.match(current, '^{"generation":(%d+)'))
  if stored and owes_sync(stored, tonumber(redis.call('GET', KEYS[6]))) then return -2 end
  return 0
end
local traces = ''
if ARGV[5] ~= '' then
  traces = ARGV[5]
  if current then
    local stored, carried = string.match(current, '^{"generation":(%d+),"receivedAt":"[^"]*","traceparents":(%b[])')
    if carried and owes_sync(tonumber(stored), tonumber(redis.call('GET', KEYS[6]))) then
      local all = {}
      for traceparent in string.gmatch(carried, '"[^"]*"') do all[#all + 1] = traceparent end
      for traceparent in string.gmatch(ARGV[5], '"[^"]*"') do all[#all + 1] = traceparent end
      traces = '[' .. table.concat(all, ',', math.max(1, #all - ${MAX_SNAPSHOT_TRACE_LINKS} + 1), #all) .. ']'
    end
  end
  traces = ',"traceparents":' .. traces
end
local generation = redis.call('INCR', KEYS[3])
local snapshot = '{"generation":' .. generation .. ',"receivedAt":' .. ARGV[3] .. traces .. ',"endpoint":' .. ARGV[4] .. ',' .. tail
redis.call('SET', KEYS[2], snapshot)
if ARGV[6] ~= '' then redis.call('SET', KEYS[7], ARGV[6]) end
return generation`,
  7,
);

/*
 * KEYS: lease, snapshot, stream state. ARGV: owner, state JSON ('' = leave it). Keeps the
 * generation counter, so generations keep rising.
 */
const WITHDRAW = new LuaScript(
  `${FENCE}
if ARGV[2] ~= '' then redis.call('SET', KEYS[3], ARGV[2]) end
return redis.call('DEL', KEYS[2])`,
  3,
);

/* KEYS: lease, stream state. ARGV: owner, state JSON. */
const SET_STATE = new LuaScript(`${FENCE}\nredis.call('SET', KEYS[2], ARGV[2])\nreturn 1`, 2);

/*
 * After Redis lost its data: takes the key's lease back if nobody holds it, and writes back the
 * registrations the watcher streams from, unless the key was removed. KEYS: lease, registrations,
 * removal. ARGV: owner ('' = no lease), lease lifetime (ms), then endpoint and registration JSON
 * pairs. Returns how many registrations it wrote, -1 when another replica holds the lease, -2
 * when the key has a removal.
 */
const RESTORE = new LuaScript(
  `
if ARGV[1] ~= '' then
  local holder = redis.call('GET', KEYS[1])
  if holder == false then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  elseif holder ~= ARGV[1] then return -1 end
end
if redis.call('EXISTS', KEYS[3]) == 1 then return -2 end
local written = 0
for i = 3, #ARGV, 2 do
  written = written + redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1])
end
return written`,
  3,
);

/** The newest traceparents as a JSON array, each checked: the record must decode for the syncer. */
function traceparentList(traceparents: readonly string[]): string {
  const kept = traceparents.slice(-MAX_SNAPSHOT_TRACE_LINKS);
  kept.forEach((traceparent, i) => {
    if (!TRACEPARENT_PATTERN.test(traceparent)) {
      throw new TypeError(`traceparents[${i}] "${traceparent}" ${TRACEPARENT_RULE}`);
    }
  });
  return JSON.stringify(kept);
}

/** What a store writes besides the snapshot. */
export interface StoreOptions {
  /**
   * Tracing on: the W3C traceparents of the watcher's receive spans of the messages this write
   * stands for, oldest first; the newest {@link MAX_SNAPSHOT_TRACE_LINKS} are kept. They are
   * written into the snapshot (`InventorySnapshot.traceparents`) when it is stored, after those
   * of the snapshot it replaces while that one still owes a sync; an unchanged or unsynced store
   * writes none. None (the default): no field, no cost.
   */
  traceparents?: readonly string[];
  /**
   * The key's stream state, written in the same step when the snapshot is stored (a stored
   * message moves its `lastMessageAt`), and not otherwise: one round trip per change instead of
   * two (issue 29).
   */
  state?: StreamState;
}

/**
 * Stores inventory snapshots in a key's Redis slot: compare-and-store in one script, so that an
 * unchanged inventory costs one round trip and no write, and a changed one gets the next
 * snapshot generation atomically with its contents.
 */
export class SnapshotWriter {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly owner: string;
  private readonly leaseMs: number;

  constructor(options: SnapshotWriterOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.owner = options.owner ?? '';
    this.leaseMs = options.leaseMs ?? 10_000;
  }

  /**
   * Stores `inventory` as the key's snapshot unless the stored one is equal, with what
   * `options` adds (see {@link StoreOptions}).
   * @throws {TypeError} for a traceparent that breaks `TRACEPARENT_RULE` (a caller's bug).
   */
  store(
    key: SliceKey,
    endpoint: string,
    inventory: DriverInventory,
    receivedAt: Date,
    options: StoreOptions = {},
  ): Promise<StoreResult> {
    const json = canonicalJson(inventory);
    return this.storeContent(
      key,
      endpoint,
      `"inventory":${json}`,
      receivedAt,
      Buffer.byteLength(json),
      options,
    );
  }

  /**
   * Stores a message the watcher could not take as the key's snapshot (`rejected`), so that the
   * syncer reports it like an invalid inventory and keeps the published slices. `options` as
   * for {@link store}.
   */
  reject(
    key: SliceKey,
    endpoint: string,
    problem: string,
    receivedAt: Date,
    options: StoreOptions = {},
  ): Promise<StoreResult> {
    const json = JSON.stringify(problem);
    return this.storeContent(
      key,
      endpoint,
      `"rejected":${json}`,
      receivedAt,
      Buffer.byteLength(json),
      options,
    );
  }

  private async storeContent(
    key: SliceKey,
    endpoint: string,
    content: string,
    receivedAt: Date,
    bytes: number,
    { traceparents = [], state }: StoreOptions,
  ): Promise<StoreResult> {
    const result = Number(
      await STORE.run(
        this.redis,
        [
          this.keys.watcherLease(key),
          this.keys.snapshot(key),
          this.keys.snapshotGeneration(key),
          this.keys.registrations(key),
          this.keys.removal(key),
          this.keys.syncedGeneration(key),
          this.keys.streamState(key),
        ],
        [
          this.owner,
          content,
          JSON.stringify(receivedAt.toISOString()),
          JSON.stringify(endpoint),
          traceparents.length === 0 ? '' : traceparentList(traceparents),
          state === undefined ? '' : JSON.stringify(state),
        ],
      ),
    );
    if (result === -1) return { kind: 'not-owner' };
    if (result === -2) return { kind: 'unsynced' };
    if (result === -3) return { kind: 'unregistered' };
    if (result === 0) return { kind: 'unchanged' };
    return { kind: 'stored', generation: result, bytes };
  }

  /**
   * Deletes the key's snapshot, so that the syncer withdraws its slices; with `state`, records
   * the stream state that explains why in the same step: a sync that sees the snapshot gone
   * sees why it went (a wipe is a Warning Event, a driver with no devices is not).
   */
  async withdraw(key: SliceKey, state?: StreamState): Promise<WithdrawResult> {
    const result = Number(
      await WITHDRAW.run(
        this.redis,
        [this.keys.watcherLease(key), this.keys.snapshot(key), this.keys.streamState(key)],
        [this.owner, state === undefined ? '' : JSON.stringify(state)],
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

  /**
   * Writes back the registrations of a key whose stream this watcher holds, after Redis lost its
   * data (and the key's lease, in shared mode). A key that has a removal is left alone: a removed
   * plugin is never brought back. The caller puts the key back in the registration index.
   */
  async restore(key: SliceKey, registrations: readonly Registration[]): Promise<RestoreResult> {
    const pairs = registrations.flatMap((r) => [r.endpoint, JSON.stringify(r)]);
    const result = Number(
      await RESTORE.run(
        this.redis,
        [this.keys.watcherLease(key), this.keys.registrations(key), this.keys.removal(key)],
        [this.owner, this.leaseMs, ...pairs],
      ),
    );
    if (result === -1) return { kind: 'not-owner' };
    if (result === -2) return { kind: 'removed' };
    return { kind: 'restored', registrations: result };
  }
}
