import type { RedisClient } from '@slicekeeper/queue';
import {
  keyId,
  parseKeyId,
  registrationEventSchema,
  registrationSchema,
  removalSchema,
} from '@slicekeeper/contracts';
import type { Registration, RegistrationEvent, Removal, SliceKey } from '@slicekeeper/contracts';
import { TerminalError } from '@slicekeeper/errors';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import { decodeFields, decodeRecord } from './codec';
import { LuaScript } from '@slicekeeper/queue';
import { redisKeys } from './redis-keys';
import type { RedisKeys } from './redis-keys';

export interface RegistrationStoreOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Registration and removal times come from it. @defaultValue systemClock */
  clock?: Pick<Clock, 'now'>;
  /**
   * Registration events kept for watchers to catch up from. A watcher follows the stream as
   * events come; the history only bridges a brief loss of Redis, and a watcher that missed more
   * reloads every registration (a few round trips). @defaultValue 2000
   */
  eventHistory?: number;
  /** Endpoints one driver may have on one node at once. @defaultValue 4 */
  maxEndpointsPerKey?: number;
  /** Driver names one node may have registered at once. @defaultValue 16 */
  maxDriversPerNode?: number;
}

/** Why {@link RegistrationStore.add} refused a registration: the key or the node is full. */
export class RegistrationRefusedError extends TerminalError {
  constructor(
    readonly reason: 'too-many-endpoints' | 'too-many-drivers',
    message: string,
  ) {
    super(message, { code: reason });
  }
}

export interface RemoveOptions {
  /** Only this endpoint; every endpoint of the key when unset. */
  endpoint?: string;
  /**
   * How long the key's slices stay after its last registration goes, ms, so that a restarting
   * driver that registers again in time never loses them. @defaultValue 0
   */
  graceMs?: number;
}

/** How long a removal record outlives its `withdrawAt`, ms: a day. */
const REMOVAL_RETENTION_MS = 24 * 60 * 60 * 1000;

export interface AddRegistration extends SliceKey {
  endpoint: string;
  version: string;
}

export interface ListRegistrationsOptions {
  node?: string;
  driver?: string;
  /** Return keys after this key id (the previous page's `next`). */
  after?: string;
  /** @defaultValue 100 */
  limit?: number;
}

export interface RegistrationPage {
  /** Registrations of up to `limit` keys, ordered by key id. */
  items: Registration[];
  /** Pass as `after` for the next page; absent on the last page. */
  next?: string;
}

/** A registration event with its position in the event stream. */
export interface PositionedEvent extends RegistrationEvent {
  id: string;
}

export type FollowResult =
  | { kind: 'events'; events: PositionedEvent[]; last: string }
  /** The events after `from` were trimmed: reload everything, then follow from `last`. */
  | { kind: 'gap'; last: string };

/*
 * Admits a key into the registration index if its node has room for another driver (or the key
 * is there already). KEYS: index. ARGV: key id, the node's lexical range (min, max), the cap.
 * Returns {admitted (1 new, 0 already there, -1 refused), drivers on the node}.
 */
const ADMIT = new LuaScript(
  `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {0, 0} end
local drivers = redis.call('ZLEXCOUNT', KEYS[1], ARGV[2], ARGV[3])
if drivers >= tonumber(ARGV[4]) then return {-1, drivers} end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return {1, drivers + 1}`,
  1,
);

/*
 * Registers an endpoint if the key has room for it, and ends the key's removal, in one step.
 * KEYS: registrations, removal. ARGV: endpoint, registration JSON, endpoint cap.
 * Returns {1 created | 0 refreshed | -1 refused, endpoints}.
 */
const REGISTER = new LuaScript(
  `
local exists = redis.call('HEXISTS', KEYS[1], ARGV[1])
local count = redis.call('HLEN', KEYS[1])
if exists == 0 and count >= tonumber(ARGV[3]) then return {-1, count} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('DEL', KEYS[2])
if exists == 1 then return {0, count} end
return {1, count + 1}`,
  2,
);

/*
 * Removes one endpoint (ARGV[2]) or all of them (ARGV[2] = ''), and when none is left records the
 * key's removal, in one step: no sync or watcher can see "no registration" without the removal.
 * KEYS: registrations, removal. ARGV: removal JSON, endpoint, removal lifetime (ms).
 * Returns {endpoints left, removed registration JSON…}.
 */
const DEREGISTER = new LuaScript(
  `
local removed
if ARGV[2] == '' then
  removed = redis.call('HVALS', KEYS[1])
  redis.call('DEL', KEYS[1])
else
  removed = {}
  local record = redis.call('HGET', KEYS[1], ARGV[2])
  if record then
    removed[1] = record
    redis.call('HDEL', KEYS[1], ARGV[2])
  end
end
local left = redis.call('HLEN', KEYS[1])
if #removed > 0 and left == 0 then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3]) end
table.insert(removed, 1, left)
return removed`,
  2,
);

/*
 * Records the removal of a key that has no registration and no removal (an orphan), so that
 * its slices are withdrawn. KEYS: registrations, removal. ARGV: removal JSON, removal lifetime
 * (ms). Returns 1 when recorded, 0 when the key has a registration or a removal.
 */
const REMOVE_ORPHAN = new LuaScript(
  `if redis.call('HLEN', KEYS[1]) > 0 or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1`,
  2,
);

/* KEYS: dataset marker. ARGV: a fresh id. Writes the id into an empty Redis; returns the id held. */
const DATASET = new LuaScript(
  `redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])`,
  1,
);

/* KEYS: registration sequence. ARGV: a sequence in use. Raises the counter to at least it. */
const RAISE_SEQUENCE = new LuaScript(
  `local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`,
  1,
);

/**
 * The plugin registry in Redis, shared by the registration API (writes) and the plugin-watchers
 * (reads and follows). Per-key registrations and the key's removal live in the key's hash slot
 * and change together in one script; the index and the event stream are global and written one
 * command at a time after it (safe on Redis Cluster). Every write is followed by an event, so a
 * watcher that loads everything and then follows the events from the position it read before
 * loading misses nothing.
 */
export class RegistrationStore {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly eventHistory: number;
  private readonly maxEndpointsPerKey: number;
  private readonly maxDriversPerNode: number;

  constructor(options: RegistrationStoreOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.clock = options.clock ?? systemClock;
    // About 150 bytes an event (the soak's 3,000 events held 450 KB): 2,000 are about 300 KB.
    // With 10,000 (until 2026-11-27) the stream grew by 2,000 events at each rolling restart of
    // the soak's 1,000 drivers, and Redis memory with it, far into the hour.
    this.eventHistory = options.eventHistory ?? 2000;
    this.maxEndpointsPerKey = options.maxEndpointsPerKey ?? 4;
    this.maxDriversPerNode = options.maxDriversPerNode ?? 16;
  }

  /**
   * Registers an endpoint for a key, or registers it again (a restarted plugin): either way it
   * becomes the key's most recent registration, the key's removal (if any) ends, and watchers
   * (re)open its stream. Throws {@link RegistrationRefusedError} when the node already has
   * `maxDriversPerNode` other drivers or the key `maxEndpointsPerKey` other endpoints; both limits
   * are checked and taken in the same atomic step, so concurrent registrations cannot overshoot.
   */
  async add(input: AddRegistration): Promise<{ registration: Registration; created: boolean }> {
    const key = { node: input.node, driver: input.driver };
    const id = keyId(key);
    const [admitted, drivers] = (await ADMIT.run(
      this.redis,
      [this.keys.registrationIndex],
      [id, `[${key.node}/`, `[${key.node}/\xff`, this.maxDriversPerNode],
    )) as [number, number];
    if (admitted < 0) {
      throw new RegistrationRefusedError(
        'too-many-drivers',
        `node ${key.node} already has ${drivers} drivers registered (at most ${this.maxDriversPerNode}); remove one first`,
      );
    }
    const sequence = await this.redis.incr(this.keys.registrationSequence);
    const registration: Registration = {
      node: input.node,
      driver: input.driver,
      endpoint: input.endpoint,
      version: input.version,
      registeredAt: new Date(this.clock.now()).toISOString(),
      sequence,
    };
    const [outcome, endpoints] = (await REGISTER.run(
      this.redis,
      [this.keys.registrations(key), this.keys.removal(key)],
      [input.endpoint, JSON.stringify(registration), this.maxEndpointsPerKey],
    )) as [number, number];
    if (outcome < 0) {
      throw new RegistrationRefusedError(
        'too-many-endpoints',
        `plugin ${id} already has ${endpoints} endpoints (at most ${this.maxEndpointsPerKey}); remove one first`,
      );
    }
    // A removal of the key's last endpoint that ran between the admission and the registration
    // took the key out of the index: put it back (idempotent).
    await this.redis.zadd(this.keys.registrationIndex, 0, id);
    await this.publish({ type: 'added', key: id, endpoint: input.endpoint });
    return { registration, created: outcome === 1 };
  }

  /**
   * Removes one endpoint of a key, or all of them. When none is left the key gets a removal
   * record (in the same atomic step) and leaves the index: its slices are withdrawn after
   * `graceMs` unless it registers again, even if no watcher is running, and nothing of it is
   * published again until it does. Returns what was removed (empty when nothing was registered).
   */
  async remove(key: SliceKey, options: RemoveOptions = {}): Promise<Registration[]> {
    const id = keyId(key);
    const removedAt = this.clock.now();
    const graceMs = options.graceMs ?? 0;
    const removal: Removal = { removedAt, withdrawAt: removedAt + graceMs };
    const [left, ...records] = (await DEREGISTER.run(
      this.redis,
      [this.keys.registrations(key), this.keys.removal(key)],
      [JSON.stringify(removal), options.endpoint ?? '', graceMs + REMOVAL_RETENTION_MS],
    )) as [number, ...string[]];
    const redisKey = this.keys.registrations(key);
    const removed = records.map((record) => decodeRegistration(id, record)).sort(byMostRecent);
    if (removed.length === 0) return [];
    if (left === 0) {
      await this.redis.zrem(this.keys.registrationIndex, id);
      // A registration that ran between the two steps put the key back; keep it in the index.
      if ((await this.redis.hlen(redisKey)) > 0) {
        await this.redis.zadd(this.keys.registrationIndex, 0, id);
      }
    }
    for (const registration of removed) {
      await this.publish({ type: 'removed', key: id, endpoint: registration.endpoint });
    }
    return removed;
  }

  /**
   * Records a removal for a key slicekeeper publishes for without a registration or a removal
   * (an orphan the janitor gave up on): its slices are then withdrawn as a removed key's are,
   * and a watcher that still remembers it does not write it back. `removedAt` is when the key
   * was first seen an orphan. Returns false when the key registered (or was removed) meanwhile.
   */
  async removeOrphan(key: SliceKey, removedAt: number): Promise<boolean> {
    const removal: Removal = { removedAt, withdrawAt: this.clock.now() };
    const recorded = await REMOVE_ORPHAN.run(
      this.redis,
      [this.keys.registrations(key), this.keys.removal(key)],
      [JSON.stringify(removal), REMOVAL_RETENTION_MS],
    );
    return Number(recorded) === 1;
  }

  /**
   * The id of the data set Redis holds: `candidate` if Redis holds none (it is new, or it came
   * back empty), so that whoever remembers another id knows its data was lost.
   */
  async datasetId(candidate: string): Promise<string> {
    return String(await DATASET.run(this.redis, [this.keys.dataset], [candidate]));
  }

  /**
   * After Redis lost its data and a watcher wrote a key's registrations back: the key rejoins
   * the index, and the sequence counter rises above the restored sequences, so that a later
   * registration still counts as the most recent.
   */
  async reindex(key: SliceKey, registrations: readonly Registration[]): Promise<void> {
    const sequence = Math.max(0, ...registrations.map((r) => r.sequence));
    await this.redis.zadd(this.keys.registrationIndex, 0, keyId(key));
    await RAISE_SEQUENCE.run(this.redis, [this.keys.registrationSequence], [sequence]);
  }

  /** The key's removal record, while its last removal stands (until it registers again). */
  async removal(key: SliceKey): Promise<Removal | undefined> {
    const raw = await this.redis.get(this.keys.removal(key));
    return raw === null ? undefined : decodeRecord(removalSchema, raw, `removal of ${keyId(key)}`);
  }

  /** A key's registrations, most recent first. */
  async get(key: SliceKey): Promise<Registration[]> {
    const records = await this.redis.hvals(this.keys.registrations(key));
    return records.map((record) => decodeRegistration(keyId(key), record)).sort(byMostRecent);
  }

  /** One page of registered keys in key-id order, optionally of one node and/or one driver. */
  async list(options: ListRegistrationsOptions = {}): Promise<RegistrationPage> {
    const limit = options.limit ?? 100;
    const items: Registration[] = [];
    let after = options.after;
    // The index is ordered by `<node>/<driver>`: a node filter is a lexical range, a driver
    // filter is checked per key.
    const [nodeMin, nodeMax] =
      options.node === undefined ? ['-', '+'] : [`[${options.node}/`, `[${options.node}/\xff`];
    let keysSeen = 0;
    for (;;) {
      const min = after === undefined ? nodeMin : `(${after}`;
      const batch = await this.redis.zrangebylex(
        this.keys.registrationIndex,
        min,
        nodeMax,
        'LIMIT',
        0,
        limit,
      );
      for (const id of batch) {
        after = id;
        const key = parseKeyId(id);
        if (options.driver !== undefined && key.driver !== options.driver) continue;
        items.push(...(await this.get(key)));
        keysSeen++;
        if (keysSeen === limit) {
          const more = await this.redis.zrangebylex(
            this.keys.registrationIndex,
            `(${id}`,
            nodeMax,
            'LIMIT',
            0,
            1,
          );
          return more.length > 0 ? { items, next: id } : { items };
        }
      }
      if (batch.length < limit) return { items };
    }
  }

  /** Every registration, for a watcher's initial load. */
  async all(): Promise<Registration[]> {
    const ids = await this.redis.zrange(this.keys.registrationIndex, 0, -1);
    const all: Registration[] = [];
    for (const id of ids) all.push(...(await this.get(parseKeyId(id))));
    return all;
  }

  /** The position of the latest event: read it before loading, then follow from it. */
  async eventPosition(): Promise<string> {
    const last = await this.redis.xrevrange(this.keys.registrationEvents, '+', '-', 'COUNT', 1);
    return last[0]?.[0] ?? '0-0';
  }

  /**
   * Waits up to `blockMs` for events after `from`. Use a dedicated connection: a blocking read
   * holds it. Reports a gap when events after `from` were trimmed (a watcher that was away too
   * long), so that the caller reloads everything.
   */
  async follow(from: string, blockMs: number): Promise<FollowResult> {
    if (await this.trimmedAfter(from)) {
      return { kind: 'gap', last: await this.eventPosition() };
    }
    const result = await this.redis.xread(
      'COUNT',
      1000,
      'BLOCK',
      blockMs,
      'STREAMS',
      this.keys.registrationEvents,
      from,
    );
    const entries = result?.[0]?.[1] ?? [];
    const events = entries.map(([id, fields]) => ({ id, ...parseEvent(id, fields) }));
    return { kind: 'events', events, last: events.at(-1)?.id ?? from };
  }

  /**
   * Whether events after `from` may have been trimmed: the stream lost entries (more were added
   * than it holds) and its oldest entry is newer than `from`. May say yes when only `from` itself
   * was trimmed; a needless reload is harmless, a missed event is not.
   */
  private async trimmedAfter(from: string): Promise<boolean> {
    if ((await this.redis.exists(this.keys.registrationEvents)) === 0) return false;
    const info = (await this.redis.xinfo('STREAM', this.keys.registrationEvents)) as unknown[];
    const field = (name: string): unknown => info[info.indexOf(name) + 1];
    const added = Number(field('entries-added'));
    const length = Number(field('length'));
    const first = field('recorded-first-entry-id');
    return added > length && typeof first === 'string' && compareIds(first, from) > 0;
  }

  private async publish(event: RegistrationEvent): Promise<void> {
    await this.redis.xadd(
      this.keys.registrationEvents,
      'MAXLEN',
      '~',
      this.eventHistory,
      '*',
      'type',
      event.type,
      'key',
      event.key,
      'endpoint',
      event.endpoint,
    );
  }
}

function parseEvent(id: string, fields: string[]): RegistrationEvent {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) record[fields[i] ?? ''] = fields[i + 1] ?? '';
  return decodeFields(registrationEventSchema, record, `registration event ${id}`);
}

function decodeRegistration(id: string, record: string): Registration {
  return decodeRecord(registrationSchema, record, `registration of ${id}`);
}

function byMostRecent(a: Registration, b: Registration): number {
  return b.sequence - a.sequence;
}

/** Orders two stream ids (`<ms>-<seq>`). */
function compareIds(a: string, b: string): number {
  const [aMs = 0, aSeq = 0] = a.split('-').map(Number);
  const [bMs = 0, bSeq = 0] = b.split('-').map(Number);
  return aMs - bMs || aSeq - bSeq;
}
