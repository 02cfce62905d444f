import { formatFieldError } from '../field-error';
import type { SyncPlan } from '../plan-sync';
import type { ResourceSlice, StoredResourceSlice } from '../resource-slice';
import { MAX_GENERATED_NAME_BASE_LENGTH } from '../resource-slice';
import { validateResourceSlice } from '../validate-resource-slice';

export interface FakeResourceSliceApiOptions {
  /** Slices stored before the test starts (kept as given, name and UID included). */
  initial?: readonly StoredResourceSlice[];
}

/**
 * The API server's ResourceSlice behaviour that the planner relies on, in memory: names from
 * `generateName` (truncated to 58 characters plus 5 random ones), UIDs, resource versions,
 * delete and update preconditions, immutable fields, validation on every write, a JSON round
 * trip on the wire, and lists sorted by name. A plan that breaks any of these throws.
 */
export class FakeResourceSliceApi {
  private readonly slices = new Map<string, StoredResourceSlice>();
  private counter = 0;

  constructor(options: FakeResourceSliceApiOptions = {}) {
    for (const slice of options.initial ?? []) {
      this.slices.set(slice.metadata.name, wire(slice));
    }
  }

  /** All stored slices, sorted by name as the API server lists them. */
  list(): StoredResourceSlice[] {
    return [...this.slices.values()].sort((a, b) =>
      a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0,
    );
  }

  /** Stores a new slice as a create request would, returning it as stored. */
  create(slice: ResourceSlice): StoredResourceSlice {
    const generateName = slice.metadata.generateName ?? '';
    if (slice.metadata.name !== undefined && slice.metadata.name !== '') {
      throw new Error(`create: the planner names no slice, got "${slice.metadata.name}"`);
    }
    this.check(slice, 'create');
    let name: string;
    do {
      name = generateName.slice(0, MAX_GENERATED_NAME_BASE_LENGTH) + this.randomSuffix();
    } while (this.slices.has(name));
    const sent = wire(slice);
    const stored: StoredResourceSlice = {
      ...sent,
      metadata: {
        ...sent.metadata,
        name,
        uid: `uid-${this.next()}`,
        resourceVersion: String(this.next()),
      },
    };
    this.slices.set(name, stored);
    return stored;
  }

  /** Applies a plan in its order: deletes, updates, creates. */
  apply(plan: SyncPlan): void {
    for (const deletion of plan.deletes) {
      const stored = this.slices.get(deletion.name);
      if (stored === undefined) throw new Error(`delete "${deletion.name}": not found`);
      if (
        stored.metadata.uid !== deletion.uid ||
        stored.metadata.resourceVersion !== deletion.resourceVersion
      ) {
        throw new Error(`delete "${deletion.name}": precondition failed`);
      }
      this.slices.delete(deletion.name);
    }
    for (const update of plan.updates) {
      const name = update.metadata.name;
      const stored = this.slices.get(name);
      if (stored === undefined) throw new Error(`update "${name}": not found`);
      if (
        stored.metadata.uid !== update.metadata.uid ||
        stored.metadata.resourceVersion !== update.metadata.resourceVersion
      ) {
        throw new Error(`update "${name}": conflict`);
      }
      for (const field of ['driver', 'nodeName'] as const) {
        if (stored.spec[field] !== update.spec[field]) {
          throw new Error(`update "${name}": spec.${field}: field is immutable`);
        }
      }
      if (stored.spec.pool.name !== update.spec.pool.name) {
        throw new Error(`update "${name}": spec.pool.name: field is immutable`);
      }
      this.check(update, 'update');
      const next = wire(update);
      this.slices.set(name, {
        ...next,
        metadata: { ...next.metadata, resourceVersion: String(this.next()) },
      });
    }
    for (const slice of plan.creates) this.create(slice);
  }

  private check(slice: ResourceSlice, verb: string): void {
    const errors = validateResourceSlice(slice);
    if (errors.length > 0) {
      throw new Error(
        `${verb}: ResourceSlice is invalid: ${errors.map(formatFieldError).join('; ')}`,
      );
    }
  }

  private next(): number {
    this.counter += 1;
    return this.counter;
  }

  private randomSuffix(): string {
    return (this.next() * 7919).toString(36).padStart(5, 'x').slice(-5);
  }
}

/** What comes back from the API server: JSON, with no shared references and no `undefined`. */
function wire<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
