import { listAt, metaOf, objAt } from './api-schemas';
import { decodeManagedFields, encodeManagedFields, trackUpdate } from './managed-fields';
import { isJsonObject, reorder } from './object-schema';
import type { JsonObject } from './object-schema';
import type { ObjectStore, StoredObject } from './object-store';
import type { ResourceType } from './resource-types';

export interface GarbageCollectorOptions {
  store: ObjectStore;
  /** The owner type (Node) and the dependent type (ResourceSlice). */
  owner: ResourceType;
  dependent: ResourceType;
  now: () => number;
  /** Delay before the collector acts on a deletion, ms (it runs in the background). @defaultValue 0 */
  delayMs?: number;
  /**
   * Whether the collector also watches dependents for owners that do not exist (off for a
   * recording made without kube-controller-manager). @defaultValue true
   */
  collectDangling?: boolean;
}

const MANAGER = 'kube-controller-manager';

/**
 * The part of kube-controller-manager's garbage collector that slicekeeper relies on: when a
 * Node goes, the ResourceSlices it owns (by uid) go too, in the background. Orphan and Foreground
 * propagation are honoured through the `orphan` and `foregroundDeletion` finalizers, and a
 * dependent with other owners only loses the reference to the deleted one.
 *
 * A dependent written with a reference to a Node that does not exist, or whose uid is not the
 * live Node's, is collected as the real collector does (`pkg/controller/garbagecollector/
 * garbagecollector.go` `attemptToDeleteItem`, `isDangling`: the owner is looked up by name and
 * counts as absent when missing or of another uid; a dependent with no solid owner left is
 * deleted, one with another solid owner loses the dangling references). References to kinds other
 * than Node are not looked up: they count as alive.
 */
export class GarbageCollector {
  private readonly store: ObjectStore;
  private readonly owner: ResourceType;
  private readonly dependent: ResourceType;
  private readonly now: () => number;
  private readonly delayMs: number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stopObserving: (() => void) | undefined;
  private closed = false;

  constructor(options: GarbageCollectorOptions) {
    this.store = options.store;
    this.owner = options.owner;
    this.dependent = options.dependent;
    this.now = options.now;
    this.delayMs = options.delayMs ?? 0;
    this.stopObserving =
      options.collectDangling === false
        ? undefined
        : this.store.observe((event) => {
            if (event.resource === this.dependent.resource && event.type !== 'DELETED')
              this.schedule(() => {
                this.collectIfDangling(event.object);
              });
          });
  }

  private schedule(work: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.closed) work();
    }, this.delayMs);
    this.timers.add(timer);
  }

  /** The dependent's Node references that name no live Node of that uid. */
  private collectIfDangling(written: StoredObject): void {
    const live = this.store.get(this.dependent.resource, written.key);
    if (live?.uid !== written.uid) return;
    const meta = objAt(live.object, 'metadata');
    if ((listAt(meta, 'finalizers') ?? []).length > 0 || meta?.deletionTimestamp !== undefined)
      return;
    const refs = (listAt(meta, 'ownerReferences') ?? []).filter(isJsonObject);
    const dangling = refs.filter((r) => this.ownerGone(r));
    if (dangling.length === 0) return;
    if (dangling.length === refs.length) {
      this.store.delete(this.dependent.resource, live.key);
      return;
    }
    for (const ref of dangling)
      if (typeof ref.uid === 'string') {
        const current = this.store.get(this.dependent.resource, live.key);
        if (current !== undefined) this.dropReference(current, ref.uid);
      }
  }

  /** Called for every deletion (or deletion marking) the API performs. */
  onDeleted(type: ResourceType, object: StoredObject, propagation: string): void {
    if (this.closed) return;
    const isOwner = type.resource === this.owner.resource;
    // Objects without dependents only need their orphan/foregroundDeletion finalizer removed.
    if (!isOwner && propagation === 'Background') return;
    this.schedule(() => {
      if (isOwner) {
        this.collect(object, propagation);
        return;
      }
      const live = this.store.get(type.resource, object.key);
      if (live?.uid === object.uid) {
        this.removeFinalizer(
          type,
          live,
          propagation === 'Orphan' ? 'orphan' : 'foregroundDeletion',
        );
      }
    });
  }

  private collect(owner: StoredObject, propagation: string): void {
    const stillThere = this.store.get(this.owner.resource, owner.name);
    const marked = stillThere !== undefined && stillThere.uid === owner.uid;
    const orphan = marked && propagation === 'Orphan';
    for (const name of this.store.dependentsOf(this.dependent.resource, owner.uid)) {
      const dependent = this.store.get(this.dependent.resource, name);
      if (dependent === undefined) continue;
      const refs = (listAt(objAt(dependent.object, 'metadata'), 'ownerReferences') ?? []).filter(
        isJsonObject,
      );
      const others = refs.filter((r) => r.uid !== owner.uid && !this.ownerGone(r));
      if (orphan || others.length > 0) this.dropReference(dependent, owner.uid);
      else this.store.delete(this.dependent.resource, name);
    }
    if (marked) {
      const finalizer = propagation === 'Orphan' ? 'orphan' : 'foregroundDeletion';
      this.removeFinalizer(this.owner, stillThere, finalizer);
    }
  }

  /** Only Node owners are known here; a reference to any other kind counts as alive. */
  private ownerGone(ref: JsonObject): boolean {
    if (ref.kind !== this.owner.kind || ref.apiVersion !== this.owner.apiVersion) return false;
    const name = typeof ref.name === 'string' ? ref.name : '';
    const live = this.store.get(this.owner.resource, name);
    return live === undefined || live.uid !== ref.uid;
  }

  private write(
    type: ResourceType,
    stored: StoredObject,
    mutate: (body: JsonObject) => void,
  ): StoredObject {
    const body: JsonObject = {};
    for (const [k, v] of Object.entries(stored.object))
      if (k !== 'kind' && k !== 'apiVersion') body[k] = v;
    const before = structuredClone(body);
    mutate(body);
    const meta = metaOf(body);
    const entries = trackUpdate(decodeManagedFields(meta) ?? [], before, body, {
      schema: type.schema,
      manager: MANAGER,
      apiVersion: type.apiVersion,
      subresource: '',
      resetFields: type.resetFields,
      nowMs: this.now(),
    });
    meta.managedFields = encodeManagedFields(entries);
    return this.store.update(type.resource, reorder(type.schema, body));
  }

  private dropReference(dependent: StoredObject, uid: string): void {
    this.write(this.dependent, dependent, (body) => {
      const meta = metaOf(body);
      const refs = (listAt(meta, 'ownerReferences') ?? []).filter(
        (r) => !(isJsonObject(r) && r.uid === uid),
      );
      if (refs.length === 0) Reflect.deleteProperty(meta, 'ownerReferences');
      else meta.ownerReferences = refs;
    });
  }

  private removeFinalizer(type: ResourceType, owner: StoredObject, finalizer: string): void {
    const updated = this.write(type, owner, (body) => {
      const meta = metaOf(body);
      const finalizers = (listAt(meta, 'finalizers') ?? []).filter((f) => f !== finalizer);
      if (finalizers.length === 0) Reflect.deleteProperty(meta, 'finalizers');
      else meta.finalizers = finalizers;
    });
    if ((listAt(objAt(updated.object, 'metadata'), 'finalizers') ?? []).length === 0) {
      this.store.delete(type.resource, owner.name);
    }
  }

  close(): void {
    this.closed = true;
    this.stopObserving?.();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
