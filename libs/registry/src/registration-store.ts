import type { Redis } from 'ioredis';
import {
  keyId,
  parseKeyId,
  redisKeys,
  registrationEventSchema,
  registrationSchema,
} from '@slicekeeper/contracts';
import type { RedisKeys, Registration, RegistrationEvent, SliceKey } from '@slicekeeper/contracts';
import { TerminalError } from '@slicekeeper/errors';

export interface RegistrationStoreOptions {
  redis: Redis;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** Injected for tests. @defaultValue `() => new Date()` */
  now?: () => Date;
  /** Registration events kept for watchers to catch up from. @defaultValue 10000 */
  eventHistory?: number;
}

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

/**
 * The plugin registry in Redis, shared by the registration API (writes) and the plugin-watchers
 * (reads and follows). Per-key registrations live in the key's hash slot; the index, the
 * tombstones and the event stream are global and written one command at a time (safe on Redis
 * Cluster). Every write is followed by an event, so a watcher that loads everything and then
 * follows the events from the position it read before loading misses nothing.
 */
export class RegistrationStore {
  private readonly redis: Redis;
  private readonly keys: RedisKeys;
  private readonly now: () => Date;
  private readonly eventHistory: number;

  constructor(options: RegistrationStoreOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.now = options.now ?? (() => new Date());
    this.eventHistory = options.eventHistory ?? 10_000;
  }

  /**
   * Registers an endpoint for a key, or registers it again (a restarted plugin): either way it
   * becomes the key's most recent registration and watchers (re)open its stream.
   */
  async add(input: AddRegistration): Promise<{ registration: Registration; created: boolean }> {
    const key = { node: input.node, driver: input.driver };
    const sequence = await this.redis.incr(this.keys.registrationSequence);
    const registration: Registration = {
      node: input.node,
      driver: input.driver,
      endpoint: input.endpoint,
      version: input.version,
      registeredAt: this.now().toISOString(),
      sequence,
    };
    const isNew = await this.redis.hset(
      this.keys.registrations(key),
      input.endpoint,
      JSON.stringify(registration),
    );
    await this.redis.zadd(this.keys.registrationIndex, 0, keyId(key));
    await this.redis.zrem(this.keys.tombstones, keyId(key));
    await this.publish({ type: 'added', key: keyId(key), endpoint: input.endpoint });
    return { registration, created: isNew === 1 };
  }

  /**
   * Removes one endpoint of a key, or all of them. When none is left the key leaves the index
   * and gets a tombstone, so that its slices are withdrawn even if no watcher is running.
   * Returns what was removed (empty when nothing was registered).
   */
  async remove(key: SliceKey, endpoint?: string): Promise<Registration[]> {
    const existing = await this.get(key);
    const removed =
      endpoint === undefined ? existing : existing.filter((r) => r.endpoint === endpoint);
    if (removed.length === 0) return [];
    await this.redis.hdel(this.keys.registrations(key), ...removed.map((r) => r.endpoint));
    if ((await this.redis.hlen(this.keys.registrations(key))) === 0) {
      await this.redis.zrem(this.keys.registrationIndex, keyId(key));
      await this.redis.zadd(this.keys.tombstones, this.now().getTime(), keyId(key));
    }
    for (const registration of removed) {
      await this.publish({ type: 'removed', key: keyId(key), endpoint: registration.endpoint });
    }
    return removed;
  }

  /** A key's registrations, most recent first. */
  async get(key: SliceKey): Promise<Registration[]> {
    const redisKey = this.keys.registrations(key);
    const records = await this.redis.hvals(redisKey);
    return records.map((record) => parseRecord(redisKey, record)).sort(byMostRecent);
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

  /** Keys removed at or before `before`, with their removal times (for the janitor). */
  async tombstones(before: Date): Promise<{ key: SliceKey; removedAt: Date }[]> {
    const entries = await this.redis.zrangebyscore(
      this.keys.tombstones,
      0,
      before.getTime(),
      'WITHSCORES',
    );
    const result: { key: SliceKey; removedAt: Date }[] = [];
    for (let i = 0; i + 1 < entries.length; i += 2) {
      result.push({
        key: parseKeyId(entries[i] ?? ''),
        removedAt: new Date(Number(entries[i + 1])),
      });
    }
    return result;
  }

  /** Forgets a tombstone once the key's slices are gone. */
  async clearTombstone(key: SliceKey): Promise<void> {
    await this.redis.zrem(this.keys.tombstones, keyId(key));
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

function parseRecord(redisKey: string, record: string): Registration {
  const parsed = registrationSchema.safeParse(JSON.parse(record));
  if (!parsed.success) {
    throw new TerminalError(`corrupt registration in ${redisKey}: ${parsed.error.message}`, {
      code: 'corrupt',
    });
  }
  return parsed.data;
}

function parseEvent(id: string, fields: string[]): RegistrationEvent {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) record[fields[i] ?? ''] = fields[i + 1] ?? '';
  const parsed = registrationEventSchema.safeParse(record);
  if (!parsed.success) {
    throw new TerminalError(`corrupt registration event ${id}: ${parsed.error.message}`, {
      code: 'corrupt',
    });
  }
  return parsed.data;
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
