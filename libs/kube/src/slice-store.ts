import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import type { StoredResourceSlice } from '@slicekeeper/slices';
import type { Clock } from '@slicekeeper/time';
import type { WatchEventType } from './reflector';
import { lastWrittenBySlicekeeper } from './resource-slice-json';
import type { PendingEcho } from './write-trace';

/** A change to a managed slice that none of our own writes explains. */
export interface SliceChange {
  key: SliceKey;
  type: WatchEventType;
  name: string;
  uid: string;
}

/** What a list found that the watch had not delivered, other than our own writes. */
export interface ReplaceResult {
  added: number;
  changed: number;
  removed: number;
  /** One per differing slice. */
  changes: SliceChange[];
}

export interface SliceStoreOptions {
  /** When recorded writes and deletes expire is measured with it. */
  clock: Pick<Clock, 'now'>;
  /**
   * Longest time a recorded write or delete overrides the watched copy, ms; by then the watch
   * has long delivered it, and an entry it never will deliver (the object was deleted by
   * someone else meanwhile, and a relist skipped the events) cannot linger.
   * @defaultValue 60000 (upstream's `ResourceSliceMutationCacheTTL`)
   */
  mutationTtlMs?: number;
}

interface RecordedWrite {
  slice: StoredResourceSlice;
  expiresAt: number;
}

interface RecordedDelete {
  uid: string;
  expiresAt: number;
}

/** How often expired entries are swept, ms. */
const SWEEP_INTERVAL_MS = 1000;

/** The key a slice belongs to: its node (`''` for a cluster-scoped pool) and driver. */
export function sliceKeyOf(slice: StoredResourceSlice): SliceKey {
  const { nodeName } = slice.spec as { nodeName?: unknown };
  return { node: typeof nodeName === 'string' ? nodeName : '', driver: slice.spec.driver };
}

/** driver and pool name: a driver name holds no `/`, so the first one separates them. */
function poolId(driver: string, pool: string): string {
  return `${driver}/${pool}`;
}

function poolIdOf(slice: StoredResourceSlice): string {
  const { pool } = slice.spec as { pool?: { name?: unknown } };
  return poolId(slice.spec.driver, typeof pool?.name === 'string' ? pool.name : '');
}

/** A resourceVersion as the integer it is on every etcd-backed server, else undefined. */
function versionOf(resourceVersion: string): bigint | undefined {
  return /^\d+$/.test(resourceVersion) ? BigInt(resourceVersion) : undefined;
}

function byName(a: StoredResourceSlice, b: StoredResourceSlice): number {
  const x = a.metadata.name;
  const y = b.metadata.name;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * The managed ResourceSlices as the watch reports them, overlaid with the results of our own
 * writes: client-go's `NewIntegerResourceVersionMutationCache` (with `includeAdds`), as upstream's
 * resourceslice controller keeps it. No I/O; fed by a reflector.
 *
 * - A slice a create or update returned ({@link recordWrite}) wins over the watched copy until
 *   the watch delivers that resourceVersion or a newer one (compared as integers), so a sync
 *   right after a create sees the slice and never creates it twice.
 * - A slice we deleted ({@link recordDelete}) is hidden until the watch delivers its deletion,
 *   or shows an object of a new UID under that name.
 * - Both expire after `mutationTtlMs`.
 *
 * It also tells our writes' echoes from other changes: an event carrying a resourceVersion one
 * of our writes returned, an object whose last write was slicekeeper's (managedFields: any
 * replica's write, or an echo that arrived before its write was recorded), or the deletion of
 * an object we deleted, is ours. Another replica's deletion cannot be told from here: it is
 * reported with its UID, and the syncer looks up the marks replicas leave in Redis before they
 * delete (`DeletionMarks`).
 *
 * Returned slices are the cache's own objects: read them, never mutate them.
 */
export class SliceStore {
  private readonly clock: Pick<Clock, 'now'>;
  private readonly ttlMs: number;
  /** The watched copies by name. */
  private readonly watched = new Map<string, StoredResourceSlice>();
  /** The watch has delivered every change up to this version (events, bookmarks, lists). */
  private watchedVersion: bigint | undefined;
  private readonly writes = new Map<string, RecordedWrite>();
  private readonly deletes = new Map<string, RecordedDelete>();
  /** `name@resourceVersion` of our writes whose events have not arrived → when they expire. */
  private readonly echoes = new Map<string, number>();
  /** The traced ones among them: told how their echo came (tracing on only). */
  private readonly pendingEchoes = new Map<string, PendingEcho>();
  /** key id → the key and the names of watched copies and recorded writes in it. */
  private readonly byKey = new Map<string, { key: SliceKey; names: Set<string> }>();
  /** node name → the ids of the keys in byKey on that node ('' for cluster-scoped keys). */
  private readonly byNode = new Map<string, Set<string>>();
  /** driver/pool → names. */
  private readonly byPool = new Map<string, Set<string>>();
  /** name → the key id and pool id it is indexed under (one each for watched and written). */
  private readonly indexed = new Map<string, { keys: string[]; pools: string[] }>();
  private nextSweepAt = 0;

  constructor(options: SliceStoreOptions) {
    this.clock = options.clock;
    this.ttlMs = options.mutationTtlMs ?? 60_000;
  }

  /** The key's managed slices, by name: the watched ones overlaid with our writes and deletes. */
  slicesOf(key: SliceKey): StoredResourceSlice[] {
    this.sweep();
    const id = keyId(key);
    const names = this.byKey.get(id)?.names;
    if (names === undefined) return [];
    const slices: StoredResourceSlice[] = [];
    for (const name of [...names]) {
      const slice = this.visible(name);
      if (slice !== undefined && keyId(sliceKeyOf(slice)) === id) slices.push(slice);
    }
    return slices.sort(byName);
  }

  /** The managed slices of one pool (driver and pool name), by name, as {@link slicesOf}. */
  slicesOfPool(driver: string, pool: string): StoredResourceSlice[] {
    this.sweep();
    const id = poolId(driver, pool);
    const names = this.byPool.get(id);
    if (names === undefined) return [];
    const slices: StoredResourceSlice[] = [];
    for (const name of [...names]) {
      const slice = this.visible(name);
      if (slice !== undefined && poolIdOf(slice) === id) slices.push(slice);
    }
    return slices.sort(byName);
  }

  /** Every key that has a managed slice in the view. */
  keys(): SliceKey[] {
    this.sweep();
    return [...this.byKey.values()]
      .filter((entry) => this.slicesOf(entry.key).length > 0)
      .map((entry) => entry.key);
  }

  /** The keys of `node` ('' = cluster-scoped) that have a managed slice in the view. */
  keysOfNode(node: string): SliceKey[] {
    this.sweep();
    const keys: SliceKey[] = [];
    for (const id of this.byNode.get(node) ?? []) {
      const entry = this.byKey.get(id);
      if (entry !== undefined && this.slicesOf(entry.key).length > 0) keys.push(entry.key);
    }
    return keys;
  }

  /**
   * What a create or update returned. `echo`, when given, is told how the write's watch event
   * came: `received` when it arrives, `early` when it already had, `missed` when the entry
   * expires first or the object is gone, `closed` by {@link abandonEchoes}.
   */
  recordWrite(slice: StoredResourceSlice, echo?: PendingEcho): void {
    this.sweep();
    const { name, resourceVersion } = slice.metadata;
    this.deletes.delete(name);
    const recorded = this.writes.get(name);
    const watched = this.watched.get(name);
    if (this.caughtUp(resourceVersion, watched)) {
      // The watch delivered it already (as a foreign change: it came first).
      echo?.end('early');
      if (recorded !== undefined) this.dropCaughtUpWrite(name);
      this.reindex(name);
      return;
    }
    const expiresAt = this.clock.now() + this.ttlMs;
    const id = `${name}@${resourceVersion}`;
    this.echoes.set(id, expiresAt);
    if (echo !== undefined) {
      this.pendingEchoes.get(id)?.end('missed');
      this.pendingEchoes.set(id, echo);
    }
    if (recorded !== undefined && newer(recorded.slice, slice)) return;
    this.writes.set(name, { slice, expiresAt });
    this.reindex(name);
  }

  /** A slice we deleted (with these preconditions). */
  recordDelete(target: { name: string; uid: string; resourceVersion: string }): void {
    this.sweep();
    this.writes.delete(target.name);
    this.deletes.set(target.name, { uid: target.uid, expiresAt: this.clock.now() + this.ttlMs });
    this.reindex(target.name);
  }

  /** Forgets a delete recorded before it was made, when the API server refused it. */
  forgetDelete(name: string): void {
    this.sweep();
    this.deletes.delete(name);
    this.reindex(name);
  }

  /** Applies one watch event; returns the change unless it is an echo of our own write. */
  apply(type: WatchEventType, slice: StoredResourceSlice): SliceChange | undefined {
    this.sweep();
    const { name, uid, resourceVersion } = slice.metadata;
    let ours: boolean;
    if (type === 'DELETED') {
      ours = this.takeDelete(name, uid);
      this.watched.delete(name);
    } else {
      // `||` after the call: an echo is forgotten whoever wrote last.
      ours = this.takeEcho(name, resourceVersion) || lastWrittenBySlicekeeper(slice);
      this.watched.set(name, slice);
    }
    this.advance(resourceVersion);
    this.dropCaughtUpWrite(name);
    this.reindex(name);
    return ours ? undefined : { key: sliceKeyOf(slice), type, name, uid };
  }

  /** A bookmark: the watch has delivered every change up to `resourceVersion`. */
  observe(resourceVersion: string): void {
    this.advance(resourceVersion);
  }

  /**
   * A list replaces every watched copy; returns what differed from them, leaving out our own
   * writes and deletes. The first list (`initial`) reports nothing.
   */
  replace(slices: StoredResourceSlice[], resourceVersion: string, initial = false): ReplaceResult {
    this.sweep();
    const result: ReplaceResult = { added: 0, changed: 0, removed: 0, changes: [] };
    const listed = new Map(slices.map((slice) => [slice.metadata.name, slice]));
    const version = versionOf(resourceVersion);
    if (!initial) {
      for (const [name, slice] of listed) {
        const known = this.watched.get(name);
        if (known?.metadata.resourceVersion === slice.metadata.resourceVersion) continue;
        if (this.takeEcho(name, slice.metadata.resourceVersion)) continue;
        const type = known === undefined ? 'ADDED' : 'MODIFIED';
        if (known === undefined) result.added++;
        else result.changed++;
        result.changes.push({ key: sliceKeyOf(slice), type, name, uid: slice.metadata.uid });
      }
      for (const [name, known] of this.watched) {
        if (listed.has(name) || this.takeDelete(name, known.metadata.uid)) continue;
        result.removed++;
        result.changes.push({
          key: sliceKeyOf(known),
          type: 'DELETED',
          name,
          uid: known.metadata.uid,
        });
      }
      // A slice we created that the watch never showed and the list no longer has: someone
      // deleted it meanwhile.
      for (const [name, write] of this.writes) {
        if (listed.has(name) || this.watched.has(name)) continue;
        const written = versionOf(write.slice.metadata.resourceVersion);
        if (version === undefined || written === undefined || written > version) continue;
        this.takeEcho(name, write.slice.metadata.resourceVersion, 'missed');
        result.removed++;
        result.changes.push({
          key: sliceKeyOf(write.slice),
          type: 'DELETED',
          name,
          uid: write.slice.metadata.uid,
        });
      }
    }
    const names = new Set([...this.watched.keys(), ...listed.keys(), ...this.writes.keys()]);
    this.watched.clear();
    for (const [name, slice] of listed) this.watched.set(name, slice);
    if (version !== undefined) this.watchedVersion = version;
    for (const name of names) {
      this.dropCaughtUpWrite(name);
      this.reindex(name);
    }
    return result;
  }

  /** The view of one name: our write, if newer than the watch's copy; hidden if we deleted it. */
  private visible(name: string): StoredResourceSlice | undefined {
    const now = this.clock.now();
    const watched = this.watched.get(name);
    const write = this.writes.get(name);
    if (write !== undefined) {
      if (write.expiresAt > now && !this.caughtUp(write.slice.metadata.resourceVersion, watched)) {
        return write.slice;
      }
      this.writes.delete(name);
      this.reindex(name);
    }
    const deleted = this.deletes.get(name);
    if (deleted !== undefined && watched !== undefined) {
      if (deleted.expiresAt > now && watched.metadata.uid === deleted.uid) return undefined;
      // Expired, or a new object of that name: the watch's copy shows.
      this.deletes.delete(name);
    }
    return watched;
  }

  /**
   * Whether the watch has delivered `resourceVersion` (of an object we wrote) or a newer one:
   * the watched copy is at least that new, or the watch has passed that version. A version that
   * is not an integer cannot be compared; the watched copy, if any, wins then.
   */
  private caughtUp(resourceVersion: string, watched: StoredResourceSlice | undefined): boolean {
    const written = versionOf(resourceVersion);
    if (written === undefined) return watched !== undefined;
    if (this.watchedVersion !== undefined && this.watchedVersion >= written) return true;
    const seen = watched === undefined ? undefined : versionOf(watched.metadata.resourceVersion);
    return seen !== undefined && seen >= written;
  }

  /** Ends every awaited echo as `closed` (the cache is closing): no span is left open. */
  abandonEchoes(): void {
    for (const pending of this.pendingEchoes.values()) pending.end('closed');
    this.pendingEchoes.clear();
  }

  /**
   * Whether `name@resourceVersion` is the (unexpired) echo of one of our writes; forgets it,
   * and tells a traced write how its echo came (`found`, unless expired).
   */
  private takeEcho(
    name: string,
    resourceVersion: string,
    found: 'received' | 'missed' = 'received',
  ): boolean {
    const echo = `${name}@${resourceVersion}`;
    const expiresAt = this.echoes.get(echo);
    this.echoes.delete(echo);
    const ours = expiresAt !== undefined && expiresAt > this.clock.now();
    if (this.pendingEchoes.size > 0) {
      const pending = this.pendingEchoes.get(echo);
      if (pending !== undefined) {
        this.pendingEchoes.delete(echo);
        pending.end(ours ? found : 'missed');
      }
    }
    return ours;
  }

  /** Whether we deleted the object `name` of this UID (unexpired); forgets it. */
  private takeDelete(name: string, uid: string): boolean {
    const deleted = this.deletes.get(name);
    if (deleted?.uid !== uid) return false;
    this.deletes.delete(name);
    return deleted.expiresAt > this.clock.now();
  }

  private dropCaughtUpWrite(name: string): void {
    const write = this.writes.get(name);
    if (write === undefined) return;
    if (this.caughtUp(write.slice.metadata.resourceVersion, this.watched.get(name))) {
      this.writes.delete(name);
    }
  }

  private advance(resourceVersion: string): void {
    const version = versionOf(resourceVersion);
    if (version === undefined) return;
    if (this.watchedVersion === undefined || version > this.watchedVersion) {
      this.watchedVersion = version;
    }
  }

  /** Indexes `name` under the keys and pools of its watched copy and our write. */
  private reindex(name: string): void {
    const sources = [this.watched.get(name), this.writes.get(name)?.slice].filter(
      (slice): slice is StoredResourceSlice => slice !== undefined,
    );
    const keys = [...new Set(sources.map((slice) => keyId(sliceKeyOf(slice))))];
    const pools = [...new Set(sources.map(poolIdOf))];
    const before = this.indexed.get(name);
    for (const id of before?.keys ?? []) {
      if (keys.includes(id)) continue;
      const entry = this.byKey.get(id);
      entry?.names.delete(name);
      if (entry?.names.size === 0) {
        this.byKey.delete(id);
        const ids = this.byNode.get(entry.key.node);
        ids?.delete(id);
        if (ids?.size === 0) this.byNode.delete(entry.key.node);
      }
    }
    for (const id of before?.pools ?? []) {
      if (pools.includes(id)) continue;
      const names = this.byPool.get(id);
      names?.delete(name);
      if (names?.size === 0) this.byPool.delete(id);
    }
    for (const slice of sources) {
      const key = sliceKeyOf(slice);
      const id = keyId(key);
      let entry = this.byKey.get(id);
      if (entry === undefined) {
        this.byKey.set(id, (entry = { key, names: new Set() }));
        let ids = this.byNode.get(key.node);
        if (ids === undefined) this.byNode.set(key.node, (ids = new Set()));
        ids.add(id);
      }
      entry.names.add(name);
      const pool = poolIdOf(slice);
      let names = this.byPool.get(pool);
      if (names === undefined) this.byPool.set(pool, (names = new Set()));
      names.add(name);
    }
    if (sources.length === 0) this.indexed.delete(name);
    else this.indexed.set(name, { keys, pools });
  }

  /** Forgets expired writes, deletes and echoes, at most once per SWEEP_INTERVAL_MS. */
  private sweep(): void {
    const now = this.clock.now();
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + SWEEP_INTERVAL_MS;
    for (const [name, write] of this.writes) {
      if (write.expiresAt > now) continue;
      this.writes.delete(name);
      this.reindex(name);
    }
    for (const [name, deleted] of this.deletes) {
      if (deleted.expiresAt <= now) this.deletes.delete(name);
    }
    for (const [echo, expiresAt] of this.echoes) {
      if (expiresAt > now) continue;
      this.echoes.delete(echo);
      const pending = this.pendingEchoes.get(echo);
      if (pending === undefined) continue;
      this.pendingEchoes.delete(echo);
      pending.end('missed');
    }
  }
}

/** Whether `a` has a newer resourceVersion than `b` (integers; otherwise not). */
function newer(a: StoredResourceSlice, b: StoredResourceSlice): boolean {
  const x = versionOf(a.metadata.resourceVersion);
  const y = versionOf(b.metadata.resourceVersion);
  return x !== undefined && y !== undefined && x > y;
}
