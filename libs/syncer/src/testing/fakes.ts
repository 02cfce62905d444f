import type {
  InventorySnapshot,
  Removal,
  SliceKey,
  StreamState,
  SyncStatus,
} from '@slicekeeper/contracts';
import { TerminalError, TransientError } from '@slicekeeper/errors';
import { createLogger } from '@slicekeeper/observability';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import type { KeyTurn } from '../reconciler';
import type { ClusterView, SliceApi, SliceTarget } from '../slice-api';

export const silentLogger = createLogger({ service: 'test', level: 'silent' });

/** What a key holds in the fake Redis. */
export interface FakeKeyRecords {
  registered: boolean;
  snapshot?: InventorySnapshot;
  removal?: Removal;
  /**
   * Whether a snapshot generation was handed out (a snapshot missing beside it was withdrawn by
   * the watcher). @defaultValue true
   */
  generationIssued?: boolean;
  /** The watcher's stream state (`unreachableSince` taints the devices). */
  stream?: StreamState;
  status?: SyncStatus;
  /** Set to make reading the snapshot fail as a corrupt record does. */
  corrupt?: Error;
  forgotten?: boolean;
}

/** The key's records in memory: one key, a guard, and every status recorded. */
export class FakeRecords {
  readonly records: FakeKeyRecords = { registered: true };
  guard: string | undefined;
  readonly statuses: SyncStatus[] = [];
  /** The statuses announced to the driver (`finish` with `announce`). */
  readonly announced: SyncStatus[] = [];

  begin(_key: SliceKey, holder: string): Promise<KeyTurn | undefined> {
    if (this.guard !== undefined && this.guard !== holder) return Promise.resolve(undefined);
    this.guard = holder;
    const records = this.records;
    const release = () => {
      if (this.guard === holder) this.guard = undefined;
      return Promise.resolve();
    };
    const turn: KeyTurn = {
      registered: () => records.registered,
      snapshot: () => {
        if (records.corrupt !== undefined) throw records.corrupt;
        return records.snapshot;
      },
      removal: () => records.removal,
      generationIssued: () => records.generationIssued ?? true,
      streamState: () => records.stream,
      previousStatus: () => records.status,
      finish: (status, options = {}) => {
        records.status = status;
        this.statuses.push(status);
        if (options.announce === true) this.announced.push(status);
        if (options.forgetSnapshot === true && !records.registered) {
          records.snapshot = undefined;
          records.forgotten = true;
        }
        return release();
      },
      release,
      prepaidWrite: undefined,
    };
    return Promise.resolve(turn);
  }
}

/** Which of the fields a 1.34 server drops when the gate is off. */
export interface FakeServerOptions {
  /** Drop device taints on write, as kube-apiserver 1.34 does (DRADeviceTaints off). */
  dropTaints?: boolean;
}

/**
 * An API server and a watch of it in memory. Writes land in `stored` at once; the watch (what
 * the cluster view sees) only when `deliver()` is called, so that tests choose how far the
 * cache lags. The view overlays our own writes as the real mutation cache does.
 */
export class FakeCluster implements ClusterView, SliceApi {
  /** The server's objects by name. */
  readonly stored = new Map<string, StoredResourceSlice>();
  /** What the watch has delivered so far. */
  private readonly watched = new Map<string, StoredResourceSlice>();
  private readonly written = new Map<string, StoredResourceSlice>();
  private readonly deleted = new Set<string>();
  readonly nodes = new Map<string, string>();
  readonly calls: string[] = [];
  private version = 100;
  private serial = 0;

  constructor(private readonly server: FakeServerOptions = {}) {}

  // --- the watch-fed view -------------------------------------------------------------------
  slicesOf(key: SliceKey): StoredResourceSlice[] {
    const view = new Map(this.watched);
    for (const name of this.deleted) view.delete(name);
    for (const [name, slice] of this.written) view.set(name, slice);
    return [...view.values()].filter(
      (s) => (s.spec.nodeName ?? '') === key.node && s.spec.driver === key.driver,
    );
  }

  nodeUid(node: string): string | undefined {
    return this.nodes.get(node);
  }

  recordWrite(slice: StoredResourceSlice): void {
    this.written.set(slice.metadata.name, slice);
  }

  recordDelete(target: SliceTarget): void {
    this.written.delete(target.name);
    this.deleted.add(target.name);
  }

  forgetDelete(name: string): void {
    this.deleted.delete(name);
  }

  /** The watch catches up with the server. */
  deliver(): void {
    this.watched.clear();
    for (const [name, slice] of this.stored) this.watched.set(name, slice);
    this.written.clear();
    this.deleted.clear();
  }

  /** Someone else changes the server (and the watch delivers it). */
  external(change: (stored: Map<string, StoredResourceSlice>) => void): void {
    change(this.stored);
    this.deliver();
  }

  // --- the API -------------------------------------------------------------------------------
  listSlices(key: SliceKey): Promise<StoredResourceSlice[]> {
    this.calls.push('list');
    return Promise.resolve(
      [...this.stored.values()].filter(
        (s) => (s.spec.nodeName ?? '') === key.node && s.spec.driver === key.driver,
      ),
    );
  }

  createSlice(slice: ResourceSlice): Promise<StoredResourceSlice> {
    this.calls.push('create');
    const name = slice.metadata.name ?? `${slice.metadata.generateName ?? ''}${++this.serial}`;
    const stored = this.store({
      ...structuredClone(slice),
      metadata: { ...slice.metadata, name, uid: `uid-${name}`, resourceVersion: '' },
    });
    return Promise.resolve(stored);
  }

  updateSlice(slice: StoredResourceSlice): Promise<StoredResourceSlice> {
    this.calls.push('update');
    const current = this.stored.get(slice.metadata.name);
    if (current === undefined) {
      return Promise.reject(new TerminalError('not found', { code: 'not-found' }));
    }
    if (current.metadata.resourceVersion !== slice.metadata.resourceVersion) {
      return Promise.reject(new TransientError('conflict', { code: 'conflict' }));
    }
    return Promise.resolve(this.store(structuredClone(slice)));
  }

  deleteSlice(target: SliceTarget): Promise<void> {
    this.calls.push('delete');
    const current = this.stored.get(target.name);
    if (current === undefined) return Promise.resolve();
    if (current.metadata.resourceVersion !== target.resourceVersion) {
      return Promise.reject(new TransientError('conflict', { code: 'conflict' }));
    }
    this.stored.delete(target.name);
    return Promise.resolve();
  }

  private store(slice: StoredResourceSlice): StoredResourceSlice {
    if (this.server.dropTaints === true) {
      for (const device of slice.spec.devices ?? []) delete device.taints;
    }
    slice.metadata.resourceVersion = String(++this.version);
    this.stored.set(slice.metadata.name, slice);
    return structuredClone(slice);
  }
}
