import type { JsonObject } from './object-schema';
import { listAt, metaOf, stringMapAt, strAt } from './api-schemas';
import { isJsonObject } from './object-schema';

/**
 * The emulator's etcd and watch cache in one: objects per resource under a single cluster-wide
 * resourceVersion counter, a bounded history of changes (for watches that resume, exact-version
 * lists and consistent pagination), secondary indexes for the field selectors slicekeeper uses
 * constantly, and watch fan-out that runs after the writing request has been answered.
 */

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * The store key of an object: `<namespace>/<name>` (names cannot hold a slash), which sorts as
 * etcd's `/registry/<resource>/<namespace>/<name>` keys do; the name alone when cluster-scoped.
 */
export function objectKey(namespace: string, name: string): string {
  return namespace === '' ? name : `${namespace}/${name}`;
}

/**
 * One stored version of an object. Immutable: a write stores a new one. Only the serialized form
 * is kept (what reads answer with); the object tree is parsed on demand, which halves the memory
 * per object and costs a write path one JSON.parse.
 */
export class StoredObject {
  constructor(
    readonly resource: string,
    readonly name: string,
    readonly uid: string,
    readonly rv: number,
    /** The JSON of the object without `kind`/`apiVersion`, as list items are serialized. */
    readonly itemJson: string,
    private readonly prefix: string,
    readonly labels: Readonly<Record<string, string>>,
    readonly fields: Readonly<Record<string, string>>,
    readonly ownerUids: readonly string[],
    /** Empty for a cluster-scoped object. */
    readonly namespace = '',
  ) {}

  /** Where the store keeps it: `<namespace>/<name>`, or the name of a cluster-scoped object. */
  get key(): string {
    return objectKey(this.namespace, this.name);
  }

  /** The JSON with `kind` and `apiVersion` first, as GET and watch events carry it. */
  get json(): string {
    return this.prefix + this.itemJson.slice(1);
  }

  /** A fresh copy of the object (with `kind` and `apiVersion`); callers may mutate it. */
  get object(): JsonObject {
    return JSON.parse(this.json) as JsonObject;
  }
}

export interface StoreEvent {
  readonly type: EventType;
  readonly rv: number;
  readonly resource: string;
  /** The new object; for DELETED, the last content with the deletion's resourceVersion. */
  readonly object: StoredObject;
  /** The object before the change (absent for ADDED). */
  readonly prev: StoredObject | undefined;
}

/** How a resource's objects are indexed and matched by field selectors. */
export interface ResourceIndexing {
  readonly kind: string;
  readonly apiVersion: string;
  /** The selectable fields of an object (`metadata.name`, `spec.nodeName`, …). */
  fieldsOf(object: JsonObject): Record<string, string>;
  /** Field labels with a secondary index (value → names), for `field=value` selectors. */
  readonly indexedFields: readonly string[];
}

/** A watch registered with the store; the HTTP layer implements delivery. */
export interface WatchSink {
  readonly resource: string;
  /** Events at or below this resourceVersion were already sent (from history or initial state). */
  lastRv: number;
  matches(object: StoredObject): boolean;
  /**
   * Sends one event. `shared` is a per-event cache that sinks use to encode an event once for
   * all the watchers that receive it in the same form.
   */
  deliver(type: EventType, object: StoredObject, shared: Map<string, Buffer>): void;
  /** The store ended the watch (reset, or the emulator closing). */
  terminate(): void;
}

/** Thrown when a requested resourceVersion is older than the retained history. */
export class ExpiredError extends Error {
  override readonly name = 'ExpiredError';
  constructor(
    message: string,
    readonly floor: number,
  ) {
    super(message);
  }
}

interface Table {
  readonly indexing: ResourceIndexing;
  /** `{"kind":"…","apiVersion":"…",` — what a stored object's JSON starts with. */
  readonly prefix: string;
  readonly byName: Map<string, StoredObject>;
  /** Names in sorted (byte) order: list order, as etcd returns keys. */
  readonly sorted: string[];
  readonly indexes: Map<string, Map<string, Set<string>>>;
  readonly byOwnerUid: Map<string, Set<string>>;
  readonly watchers: Set<WatchSink>;
  /** When objects with a time to live go (key → ms since the epoch), as etcd leases do. */
  readonly expiries: Map<string, number>;
}

export interface ListQuery {
  /** Serve the state as of this resourceVersion (exact lists, continued pages); current when unset. */
  atRv?: number;
  /** Only the objects of this namespace (keys under `<namespace>/`). */
  namespace?: string;
  /** Only keys strictly after this one (continue tokens). */
  after?: string;
  limit?: number;
  match?: (object: StoredObject) => boolean;
  /** `field=value` pairs the selector pins, to narrow by index. */
  pinned?: Readonly<Record<string, string>>;
  /** Whether a selector filters the list (apimachinery reports remainingItemCount only without). */
  filtered?: boolean;
}

export interface ListResult {
  items: StoredObject[];
  rv: number;
  /** The last name examined, when more keys follow it (the next page starts after it). */
  continueAfter: string | undefined;
  remainingItemCount: number | undefined;
}

/**
 * Everything a restarted emulator needs to go on where it stopped: the resourceVersion counter
 * and every stored object, per resource, in storage shape (no `kind`/`apiVersion`).
 */
export interface StoreSnapshot {
  readonly resourceVersion: number;
  readonly objects: Readonly<Record<string, readonly JsonObject[]>>;
}

export interface ObjectStoreOptions {
  /** Change events retained for resuming watches and serving older versions. @defaultValue 10000 */
  historySize?: number;
}

/** ObjectMeta fields that serialize before `resourceVersion`. */
const BEFORE_RESOURCE_VERSION = new Set(['name', 'generateName', 'namespace', 'selfLink', 'uid']);

/** The metadata with `resourceVersion` set, in its struct position (after `uid`). */
function withResourceVersion(meta: JsonObject, rv: string): JsonObject {
  const out: JsonObject = {};
  let placed = false;
  for (const key in meta) {
    if (!Object.hasOwn(meta, key) || key === 'resourceVersion') continue;
    if (!placed && !BEFORE_RESOURCE_VERSION.has(key)) {
      out.resourceVersion = rv;
      placed = true;
    }
    out[key] = meta[key] ?? null;
  }
  if (!placed) out.resourceVersion = rv;
  return out;
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Index of the first name in `sorted` that is greater than `name` (binary search). */
function upperBound(sorted: readonly string[], name: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] ?? '') <= name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lowerBound(sorted: readonly string[], name: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] ?? '') < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class ObjectStore {
  private currentRv: number;
  private readonly tables = new Map<string, Table>();
  private readonly historySize: number;
  private history: StoreEvent[] = [];
  /** Every change after this resourceVersion is in `history`. */
  private floor: number;
  private pending: StoreEvent[] = [];
  private flushScheduled = false;
  private readonly observers = new Set<(event: StoreEvent) => void>();
  private readonly rvWaiters = new Set<() => void>();
  /** No object expires before this time (ms since the epoch); a lower bound, never too late. */
  private earliestExpiry = Infinity;

  constructor(options: ObjectStoreOptions = {}) {
    this.historySize = options.historySize ?? 10_000;
    this.currentRv = 1;
    this.floor = this.currentRv;
  }

  /** The cluster-wide resourceVersion: the version of the last write, of any resource. */
  get resourceVersion(): number {
    return this.currentRv;
  }

  /** The resourceVersion below which history is gone (watches from older versions expire). */
  get historyFloor(): number {
    return this.floor;
  }

  register(resource: string, indexing: ResourceIndexing): void {
    const indexes = new Map<string, Map<string, Set<string>>>();
    for (const field of indexing.indexedFields) indexes.set(field, new Map());
    this.tables.set(resource, {
      indexing,
      prefix: `{"kind":${JSON.stringify(indexing.kind)},"apiVersion":${JSON.stringify(indexing.apiVersion)},`,
      byName: new Map(),
      sorted: [],
      indexes,
      byOwnerUid: new Map(),
      watchers: new Set(),
      expiries: new Map(),
    });
  }

  private table(resource: string): Table {
    const table = this.tables.get(resource);
    if (table === undefined) throw new Error(`resource ${resource} is not registered`);
    return table;
  }

  /** @param key see {@link objectKey} */
  get(resource: string, key: string): StoredObject | undefined {
    return this.table(resource).byName.get(key);
  }

  count(resource: string): number {
    return this.table(resource).byName.size;
  }

  /** Names of the objects that list `uid` among their owner references. */
  dependentsOf(resource: string, uid: string): string[] {
    return [...(this.table(resource).byOwnerUid.get(uid) ?? [])];
  }

  /** Builds the stored form of an object at resourceVersion `rv` (sets metadata.resourceVersion). */
  private makeStored(resource: string, object: JsonObject, rv: number): StoredObject {
    const table = this.table(resource);
    const meta = withResourceVersion(metaOf(object), String(rv));
    object.metadata = meta;
    // Decoded objects carry no kind/apiVersion; copy only when a caller left them in.
    let body = object;
    if (Object.hasOwn(object, 'kind') || Object.hasOwn(object, 'apiVersion')) {
      body = {};
      for (const key in object) {
        if (key !== 'kind' && key !== 'apiVersion' && Object.hasOwn(object, key)) {
          body[key] = object[key] ?? null;
        }
      }
    }
    const itemJson = JSON.stringify(body);
    const ownerUids: string[] = [];
    for (const ref of listAt(meta, 'ownerReferences') ?? []) {
      if (isJsonObject(ref)) {
        const uid = strAt(ref, 'uid');
        if (uid !== undefined) ownerUids.push(uid);
      }
    }
    return new StoredObject(
      resource,
      strAt(meta, 'name') ?? '',
      strAt(meta, 'uid') ?? '',
      rv,
      itemJson,
      table.prefix,
      stringMapAt(meta, 'labels'),
      table.indexing.fieldsOf(body),
      ownerUids,
      strAt(meta, 'namespace') ?? '',
    );
  }

  /** The same content at another resourceVersion (a deletion's, or a watch's DELETED event). */
  restamp(stored: StoredObject, rv: number): StoredObject {
    return this.makeStored(stored.resource, stored.object, rv);
  }

  private index(table: Table, stored: StoredObject, add: boolean): void {
    for (const [field, index] of table.indexes) {
      const value = stored.fields[field] ?? '';
      let names = index.get(value);
      if (add) {
        if (names === undefined) index.set(value, (names = new Set()));
        names.add(stored.key);
      } else if (names !== undefined) {
        names.delete(stored.key);
        if (names.size === 0) index.delete(value);
      }
    }
    for (const uid of stored.ownerUids) {
      let names = table.byOwnerUid.get(uid);
      if (add) {
        if (names === undefined) table.byOwnerUid.set(uid, (names = new Set()));
        names.add(stored.key);
      } else if (names !== undefined) {
        names.delete(stored.key);
        if (names.size === 0) table.byOwnerUid.delete(uid);
      }
    }
  }

  /** Stores a new object. The caller has checked that the name is free. */
  create(resource: string, object: JsonObject): StoredObject {
    const table = this.table(resource);
    const rv = this.currentRv + 1;
    const stored = this.makeStored(resource, object, rv);
    this.currentRv = rv;
    table.byName.set(stored.key, stored);
    table.sorted.splice(upperBound(table.sorted, stored.key), 0, stored.key);
    this.index(table, stored, true);
    this.record({ type: 'ADDED', rv, resource, object: stored, prev: undefined });
    return stored;
  }

  /** Replaces an existing object. */
  update(resource: string, object: JsonObject): StoredObject {
    const table = this.table(resource);
    const rv = this.currentRv + 1;
    const stored = this.makeStored(resource, object, rv);
    const prev = table.byName.get(stored.key);
    if (prev === undefined) throw new Error(`update of missing ${resource}/${stored.key}`);
    this.currentRv = rv;
    this.index(table, prev, false);
    table.byName.set(stored.key, stored);
    this.index(table, stored, true);
    this.record({ type: 'MODIFIED', rv, resource, object: stored, prev });
    return stored;
  }

  /** Removes an object; returns its last content stamped with the deletion's resourceVersion. */
  /** @param key see {@link objectKey} */
  delete(resource: string, key: string): StoredObject | undefined {
    const table = this.table(resource);
    const prev = table.byName.get(key);
    if (prev === undefined) return undefined;
    const rv = this.currentRv + 1;
    const deleted = this.restamp(prev, rv);
    this.currentRv = rv;
    table.byName.delete(key);
    table.expiries.delete(key);
    const at = lowerBound(table.sorted, key);
    if (table.sorted[at] === key) table.sorted.splice(at, 1);
    this.index(table, prev, false);
    this.record({ type: 'DELETED', rv, resource, object: deleted, prev });
    return deleted;
  }

  /**
   * Gives an object a time to live: it is deleted (with a DELETED event) by the first
   * {@link expire} at or after `atMs`. A later call replaces the deadline, as a write that
   * attaches a new etcd lease does.
   */
  setExpiry(resource: string, key: string, atMs: number): void {
    const table = this.table(resource);
    if (!table.byName.has(key)) return;
    table.expiries.set(key, atMs);
    this.earliestExpiry = Math.min(this.earliestExpiry, atMs);
  }

  /** Deletes every object whose time to live has run out by `nowMs`. @returns how many */
  expire(nowMs: number): number {
    // Every request sweeps: the common case (nothing due) must not scan the deadlines.
    if (nowMs < this.earliestExpiry) return 0;
    let deleted = 0;
    let earliest = Infinity;
    for (const [resource, table] of this.tables) {
      const due: string[] = [];
      for (const [key, at] of table.expiries) {
        if (at <= nowMs) due.push(key);
        else earliest = Math.min(earliest, at);
      }
      for (const key of due) if (this.delete(resource, key) !== undefined) deleted++;
    }
    this.earliestExpiry = earliest;
    return deleted;
  }

  private record(event: StoreEvent): void {
    this.history.push(event);
    if (this.history.length > this.historySize) {
      const drop = this.history.length - this.historySize;
      const last = this.history[drop - 1];
      if (last !== undefined) this.floor = last.rv;
      this.history = this.history.slice(drop);
    }
    this.pending.push(event);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flush();
      });
    }
    for (const wake of this.rvWaiters) wake();
  }

  /** Delivers pending events to watchers: after the writer's response, never inside it. */
  private flush(): void {
    this.flushScheduled = false;
    const events = this.pending;
    this.pending = [];
    for (const event of events) {
      this.dispatch(event);
      for (const observer of this.observers) observer(event);
    }
  }

  /**
   * Sees every change after the watchers do, as a controller's informer would; unlike a watch it
   * is no API stream (not counted, not ended by a reset).
   */
  observe(observer: (event: StoreEvent) => void): () => void {
    this.observers.add(observer);
    return () => {
      this.observers.delete(observer);
    };
  }

  private dispatch(event: StoreEvent): void {
    const table = this.tables.get(event.resource);
    if (table === undefined) return;
    const shared = new Map<string, Buffer>();
    for (const sink of table.watchers) {
      if (event.rv <= sink.lastRv) continue;
      sink.lastRv = event.rv;
      const cur = event.type !== 'DELETED' && sink.matches(event.object);
      const prev = event.prev !== undefined && sink.matches(event.prev);
      if (cur && prev) sink.deliver('MODIFIED', event.object, shared);
      else if (cur) sink.deliver('ADDED', event.object, shared);
      else if (prev) {
        const gone = event.type === 'DELETED' ? event.object : this.restamp(event.prev, event.rv);
        sink.deliver(
          'DELETED',
          gone,
          event.type === 'DELETED' ? shared : new Map<string, Buffer>(),
        );
      }
    }
  }

  /** Events of `resource` after `rv`, for a watch resuming there. @throws ExpiredError */
  eventsSince(resource: string, rv: number): StoreEvent[] {
    if (rv < this.floor) {
      throw new ExpiredError(`too old resource version: ${rv} (${this.floor})`, this.floor);
    }
    return this.history.filter((e) => e.rv > rv && e.resource === resource);
  }

  /** Registers a watch; events after `sink.lastRv` reach it from now on. */
  watch(sink: WatchSink): () => void {
    const table = this.table(sink.resource);
    table.watchers.add(sink);
    return () => {
      table.watchers.delete(sink);
    };
  }

  watcherCount(): number {
    let n = 0;
    for (const table of this.tables.values()) n += table.watchers.size;
    return n;
  }

  /** Resolves once the store has reached `rv`, or with false after `timeoutMs`. */
  waitForResourceVersion(rv: number, timeoutMs: number): Promise<boolean> {
    if (this.currentRv >= rv) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.rvWaiters.delete(check);
        resolve(ok);
      };
      const check = () => {
        if (this.currentRv >= rv) done(true);
      };
      const timer = setTimeout(() => {
        done(false);
      }, timeoutMs);
      this.rvWaiters.add(check);
    });
  }

  /** The objects of `resource` as of `atRv`, reconstructed from history. @throws ExpiredError */
  private snapshot(
    table: Table,
    resource: string,
    atRv: number,
  ): { names: string[]; get: (name: string) => StoredObject | undefined } {
    if (atRv >= this.currentRv) {
      return { names: table.sorted, get: (name) => table.byName.get(name) };
    }
    if (atRv < this.floor) {
      throw new ExpiredError('The resourceVersion for the provided list is too old.', this.floor);
    }
    const overlay = new Map<string, StoredObject | undefined>();
    for (let i = this.history.length - 1; i >= 0; i--) {
      const event = this.history[i];
      if (event === undefined || event.rv <= atRv) break;
      if (event.resource === resource) overlay.set(event.object.key, event.prev);
    }
    if (overlay.size === 0) return { names: table.sorted, get: (name) => table.byName.get(name) };
    const names = new Set(table.sorted);
    for (const [name, prev] of overlay) {
      if (prev === undefined) names.delete(name);
      else names.add(name);
    }
    return {
      names: [...names].sort(compareNames),
      get: (name) => (overlay.has(name) ? overlay.get(name) : table.byName.get(name)),
    };
  }

  list(resource: string, query: ListQuery = {}): ListResult {
    const table = this.table(resource);
    const rv = query.atRv ?? this.currentRv;
    const snapshot = this.snapshot(table, resource, rv);
    const get = snapshot.get;
    let names = snapshot.names;
    if (query.pinned !== undefined && rv >= this.currentRv) {
      for (const [field, value] of Object.entries(query.pinned)) {
        const index = table.indexes.get(field);
        if (index === undefined) continue;
        // Narrow by the most selective pinned field; sort only a set that narrows (a driver's
        // set can hold thousands of names while the Node's holds a few).
        const hits = index.get(value);
        const size = hits?.size ?? 0;
        if (size < names.length) names = hits === undefined ? [] : [...hits].sort(compareNames);
      }
    }
    let start = 0;
    let end = names.length;
    if (query.namespace !== undefined) {
      // '0' follows '/': the keys of the namespace are those in [`<ns>/`, `<ns>0`).
      start = lowerBound(names, `${query.namespace}/`);
      end = lowerBound(names, `${query.namespace}0`);
    }
    if (query.after !== undefined) start = Math.max(start, upperBound(names, query.after));
    const limit = query.limit !== undefined && query.limit > 0 ? query.limit : Infinity;
    const items: StoredObject[] = [];
    let lastExamined: string | undefined;
    let more = false;
    let i = start;
    for (; i < end; i++) {
      const name = names[i] ?? '';
      if (items.length >= limit) {
        more = true;
        break;
      }
      const stored = get(name);
      lastExamined = name;
      if (stored === undefined) continue;
      if (query.match === undefined || query.match(stored)) items.push(stored);
    }
    void get;
    return {
      items,
      rv,
      continueAfter: more ? lastExamined : undefined,
      remainingItemCount: more && query.filtered !== true ? end - i : undefined,
    };
  }

  /** Forgets every change so far: watches and exact lists from older versions expire. */
  forgetHistory(): void {
    this.history = [];
    this.floor = this.currentRv;
  }

  /** Drops every object and watch and forgets history; resourceVersions keep increasing. */
  reset(): void {
    for (const table of this.tables.values()) {
      for (const sink of table.watchers) sink.terminate();
      table.watchers.clear();
      table.byName.clear();
      table.sorted.length = 0;
      for (const index of table.indexes.values()) index.clear();
      table.byOwnerUid.clear();
      table.expiries.clear();
    }
    this.pending = [];
    this.currentRv += 1;
    this.forgetHistory();
  }

  /** Every stored object and the resourceVersion counter, for a data file. */
  exportSnapshot(): StoreSnapshot {
    const objects: Record<string, JsonObject[]> = {};
    for (const [resource, table] of this.tables) {
      objects[resource] = table.sorted.flatMap((name) => {
        const stored = table.byName.get(name);
        return stored === undefined ? [] : [JSON.parse(stored.itemJson) as JsonObject];
      });
    }
    return { resourceVersion: this.currentRv, objects };
  }

  /**
   * Replaces the contents with a snapshot: objects keep their resourceVersions and the counter
   * goes on from the saved one. History starts empty, as a restarted kube-apiserver's watch cache
   * does: a watch or exact list from an older resourceVersion expires (410) and the client relists.
   * @throws Error naming the object when the snapshot does not fit the registered resources
   */
  restore(snapshot: StoreSnapshot): void {
    const loaded: { table: Table; stored: StoredObject }[] = [];
    for (const [resource, objects] of Object.entries(snapshot.objects)) {
      const table = this.tables.get(resource);
      if (table === undefined) throw new Error(`unknown resource ${resource}`);
      for (const object of objects) {
        const meta = metaOf(object);
        const name = strAt(meta, 'name') ?? '';
        const rv = Number(strAt(meta, 'resourceVersion'));
        if (name === '' || !Number.isSafeInteger(rv) || rv < 1 || rv > snapshot.resourceVersion) {
          throw new Error(
            `${resource} "${name}": needs a name and a resourceVersion up to ${snapshot.resourceVersion}`,
          );
        }
        loaded.push({ table, stored: this.makeStored(resource, object, rv) });
      }
    }
    this.reset();
    for (const { table, stored } of loaded) {
      table.byName.set(stored.key, stored);
      this.index(table, stored, true);
    }
    for (const table of this.tables.values())
      table.sorted.push(...[...table.byName.keys()].sort(compareNames));
    this.currentRv = snapshot.resourceVersion;
    this.forgetHistory();
  }

  /** Ends every watch (the emulator is closing). */
  terminateWatches(): void {
    for (const table of this.tables.values()) {
      for (const sink of table.watchers) sink.terminate();
      table.watchers.clear();
    }
  }
}
