import { nodeNameProblem } from '@slicekeeper/contracts';
import type { Device, Pool } from '@slicekeeper/contracts';
import { droppedFields, summarizeDroppedFields } from './dropped-fields';
import type { FieldError } from './field-error';
import { InvalidDriverResourcesError } from './field-error';
import { layoutPool } from './layout-pool';
import type { LayoutRules, SliceContent } from './layout-pool';
import type {
  ObjectMeta,
  OwnerReference,
  ResourcePool,
  ResourceSlice,
  ResourceSliceSpec,
  StoredResourceSlice,
} from './resource-slice';
import {
  isManagedSlice,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  RESOURCE_SLICE_API_VERSION,
  RESOURCE_SLICE_KIND,
} from './resource-slice';
import { publishedDevices, TYPED_SLICE_SPEC_FIELDS, untypedMembers } from './published-device';
import { sliceSpecsEqual } from './semantic-equality';
import { decodeSliceIndex, sliceGenerateName, sliceIndexLength } from './slice-name';
import { validateDriverResources } from './validate-driver-resources';
import { withoutFields } from './without-fields';

/**
 * The pure planner: what a driver has, against what the API server stores, gives the fewest
 * writes that make the scheduler see the driver's pools — the algorithm of upstream's
 * `k8s.io/dynamic-resource-allocation/resourceslice` controller (`syncPool`), for all pools of
 * one key at once. No I/O, no clock: the same input always gives the same plan.
 */

export interface PlanSyncInput {
  /** The key's node; `''` for the cluster-scoped key (network-attached pools). */
  readonly node: string;
  /**
   * UID of the Node, for the owner reference that lets the garbage collector delete node-local
   * slices with their Node. Required when `node` is set and there is a pool to publish.
   */
  readonly nodeUid: string;
  readonly driver: string;
  /**
   * Every pool the driver has: the complete desired state of the key. Pools missing from it
   * lose their slices; an empty list withdraws everything of the key.
   */
  readonly pools: readonly Pool[];
  /**
   * The key's ResourceSlices as listed (field selectors `spec.driver`, `spec.nodeName`). Slices
   * of another driver or node, and slices without the managed-by label, are left alone.
   */
  readonly existing: readonly StoredResourceSlice[];
  /**
   * Lay pools out with the 64-device limit of tainted slices from the start (see
   * `LayoutOptions.taintable`): set when slicekeeper may taint the key's devices.
   */
  readonly taintable?: boolean;
  /** The server release's layout rules. @defaultValue `CURRENT_LAYOUT_RULES` (1.35+) */
  readonly rules?: LayoutRules;
  /**
   * Fields this server is known to drop, as {@link summarizeDroppedFields} words them (the key's
   * status `droppedFields` for the same snapshot). A stored slice that lacks only such fields of
   * the desired one is up to date: what the server kept is adopted as the desired state, as
   * upstream's controller does after a `DroppedFieldsError`, so a resync neither rewrites it nor
   * bumps the pool's generation. A field missing for any other reason is still written.
   */
  readonly adoptDropped?: readonly string[];
}

/** Why a slice is deleted. Informational: for logs and metrics. */
export type SliceDeletionReason =
  /** The driver no longer has the pool. */
  | 'pool-removed'
  /** A newer generation of the pool exists; the scheduler already ignores this slice. */
  | 'outdated-generation'
  /** The name has no index prefix of the pool's current length (older naming scheme). */
  | 'unmatched-name'
  /** The pool has fewer slices now. */
  | 'index-out-of-range'
  /** Another slice already publishes this index. */
  | 'duplicate-index'
  /** Owned by an earlier Node of the same name; the garbage collector is deleting it anyway. */
  | 'stale-owner';

/** A delete with preconditions, so that it never removes a slice someone changed meanwhile. */
export interface SliceDeletion {
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly pool: string;
  readonly reason: SliceDeletionReason;
}

/** What the key publishes for one desired pool once the plan is applied. */
export interface PoolSummary {
  readonly name: string;
  readonly generation: number;
  readonly resourceSliceCount: number;
  readonly deviceCount: number;
}

/**
 * The writes, to be applied in order: deletes, then updates, then creates (upstream's order:
 * withdrawing devices the driver no longer has matters even if a later write fails). Objects
 * share structure with the input; treat both as immutable.
 */
export interface SyncPlan {
  readonly deletes: readonly SliceDeletion[];
  /** Full objects: the stored slice (name, uid, resourceVersion, metadata) with the new spec. */
  readonly updates: readonly StoredResourceSlice[];
  /** Complete objects with `generateName`; the API server picks the name. */
  readonly creates: readonly ResourceSlice[];
  /** One entry per desired pool, in input order. */
  readonly pools: readonly PoolSummary[];
}

/** Whether applying `plan` would write nothing. */
export function isEmptyPlan(plan: SyncPlan): boolean {
  return plan.deletes.length === 0 && plan.updates.length === 0 && plan.creates.length === 0;
}

/**
 * Every problem with `input` that makes it impossible to publish: the driver's data
 * ({@link validateDriverResources}, including that each pool's scope fits the key), the node
 * name, and the Node UID that node-local slices need for their owner reference.
 */
export function validateSyncInput(input: PlanSyncInput): FieldError[] {
  const errors: FieldError[] = [];
  if (input.node !== '') {
    const problem = nodeNameProblem(input.node);
    if (problem !== undefined) {
      errors.push({ path: 'node', type: 'Invalid value', value: input.node, message: problem });
    }
    if (input.nodeUid === '' && input.pools.length > 0) {
      errors.push({
        path: 'nodeUid',
        type: 'Required value',
        message: "the Node's UID is needed for the owner reference of node-local slices",
      });
    }
  }
  for (const error of validateDriverResources(input.driver, input.pools, { node: input.node })) {
    errors.push(error);
  }
  return errors;
}

/** A plan, or every problem that makes the input impossible to publish. */
export type PlanSyncResult =
  | { readonly ok: true; readonly plan: SyncPlan }
  | { readonly ok: false; readonly problems: readonly FieldError[] };

/**
 * Decides the writes that bring the key's ResourceSlices to the desired pools, or says why
 * nothing can be planned: the input is invalid, and retrying cannot help until the driver sends
 * something new.
 */
export function tryPlanSync(input: PlanSyncInput): PlanSyncResult {
  const problems = validateSyncInput(input);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, plan: planValid(input) };
}

/**
 * {@link tryPlanSync} for callers whose input is known to be valid (tests, benches).
 *
 * @throws {InvalidDriverResourcesError} (terminal, code `invalid`) when the input is invalid.
 */
export function planSync(input: PlanSyncInput): SyncPlan {
  const result = tryPlanSync(input);
  if (!result.ok) throw new InvalidDriverResourcesError(result.problems);
  return result.plan;
}

function planValid(input: PlanSyncInput): SyncPlan {
  const existingByPool = new Map<string, StoredResourceSlice[]>();
  const names = new Set<string>();
  for (const slice of input.existing) {
    if (slice.spec.driver !== input.driver) continue;
    if ((slice.spec.nodeName ?? '') !== input.node) continue;
    if (!isManagedSlice(slice)) continue;
    // A slice listed twice (a merged list, say) must not be both kept and deleted as its own twin.
    if (names.has(slice.metadata.name)) continue;
    names.add(slice.metadata.name);
    const poolName = slice.spec.pool.name;
    const group = existingByPool.get(poolName);
    if (group === undefined) existingByPool.set(poolName, [slice]);
    else group.push(slice);
  }

  const plan: MutablePlan = { deletes: [], updates: [], creates: [], pools: [] };
  for (const pool of input.pools) {
    planPool(input, pool, existingByPool.get(pool.name) ?? [], plan);
    existingByPool.delete(pool.name);
  }
  for (const [poolName, slices] of existingByPool) {
    for (const slice of slices) plan.deletes.push(deletion(slice, poolName, 'pool-removed'));
  }
  return plan;
}

interface MutablePlan {
  deletes: SliceDeletion[];
  updates: StoredResourceSlice[];
  creates: ResourceSlice[];
  pools: PoolSummary[];
}

function planPool(
  input: PlanSyncInput,
  pool: Pool,
  existing: readonly StoredResourceSlice[],
  plan: MutablePlan,
): void {
  const layout = layoutPool(pool, {
    taintable: input.taintable === true,
    ...(input.rules === undefined ? {} : { rules: input.rules }),
  });
  const sliceCount = layout.length;
  const nodeLocal = pool.scope.kind === 'node';
  const adopt = new Set(input.adoptDropped ?? []);

  let generation = 0;
  for (const slice of existing) generation = Math.max(generation, slice.spec.pool.generation);

  // Classify existing slices (upstream `syncPool`): "If an existing slice has wrong generation
  // or doesn't match a desired index, it's obsolete." Of two slices claiming one index, the
  // first listed is kept.
  const indexLength = sliceIndexLength(sliceCount);
  const matched: (StoredResourceSlice | undefined)[] = new Array<StoredResourceSlice | undefined>(
    sliceCount,
  );
  let matchedCount = 0;
  for (const slice of existing) {
    const index = decodeSliceIndex(slice.metadata.name, indexLength);
    const reason = obsoleteReason(slice, index, generation, matched, nodeLocal, input);
    if (reason !== undefined) {
      plan.deletes.push(deletion(slice, pool.name, reason));
    } else if (index !== undefined) {
      matched[index] = slice;
      matchedCount++;
    }
  }

  // Which matched slices publish something else than desired (compared at the current
  // generation, as upstream does), and which only need their owner reference repaired.
  const currentPool: ResourcePool = {
    name: pool.name,
    generation,
    resourceSliceCount: sliceCount,
  };
  const contentChanged: boolean[] = new Array<boolean>(sliceCount).fill(false);
  const ownerChanged: boolean[] = new Array<boolean>(sliceCount).fill(false);
  let changedCount = 0;
  for (let i = 0; i < sliceCount; i++) {
    const slice = matched[i];
    const content = layout[i];
    if (slice === undefined || content === undefined) continue;
    const desired = desiredSpec(content, content.devices, currentPool, pool, input);
    if (!sliceSpecsEqual(slice.spec, desired) && !onlyDropped(slice, desired, adopt)) {
      contentChanged[i] = true;
      // A change of taints only leaves every device where it was: the scheduler cannot see a
      // mix of old and new pool contents, so it does not count towards a generation bump
      // (a dead driver's taint on every slice, and its removal, keep the generation).
      if (!taintsOnlyChanged(slice.spec, desired)) changedCount++;
    }
    if (nodeLocal && !hasNodeOwner(slice, input)) ownerChanged[i] = true;
  }

  // Upstream: a driver-chosen higher generation wins; otherwise the generation stays when no
  // slice is created and at most one is updated — one API call cannot show the scheduler a mix
  // of old and new slices — and goes up by one otherwise, which then rewrites every slice.
  const newSliceCount = sliceCount - matchedCount;
  let bumped = true;
  if ((pool.generation ?? 0) > generation) generation = pool.generation ?? 0;
  else if (newSliceCount === 0 && changedCount <= 1) bumped = false;
  else generation++;
  const desiredPool: ResourcePool = { ...currentPool, generation };

  let deviceCount = 0;
  for (let i = 0; i < sliceCount; i++) {
    const content = layout[i];
    if (content === undefined) continue;
    deviceCount += content.devices.length;
    const slice = matched[i];
    if (slice === undefined) continue;
    if (bumped || contentChanged[i] === true || ownerChanged[i] === true) {
      plan.updates.push(updatedSlice(slice, content, desiredPool, pool, input));
    }
  }
  for (let i = 0; i < sliceCount; i++) {
    const content = layout[i];
    if (matched[i] !== undefined || content === undefined) continue;
    plan.creates.push(createdSlice(i, indexLength, content, desiredPool, pool, input));
  }
  plan.pools.push({ name: pool.name, generation, resourceSliceCount: sliceCount, deviceCount });
}

/** Why an existing slice of a desired pool must go, or undefined when it publishes `index`. */
function obsoleteReason(
  slice: StoredResourceSlice,
  index: number | undefined,
  generation: number,
  matched: readonly (StoredResourceSlice | undefined)[],
  nodeLocal: boolean,
  input: PlanSyncInput,
): SliceDeletionReason | undefined {
  if (slice.spec.pool.generation < generation) return 'outdated-generation';
  if (nodeLocal && hasStaleNodeOwner(slice, input)) return 'stale-owner';
  if (index === undefined) return 'unmatched-name';
  if (index >= matched.length) return 'index-out-of-range';
  if (matched[index] !== undefined) return 'duplicate-index';
  return undefined;
}

/**
 * Whether `stored` differs from `desired` only by lacking fields this server drops (`adopt`,
 * worded as the key's status words them): the server would drop them again, so the stored
 * slice is as close to the desired one as this server allows.
 */
function onlyDropped(
  stored: StoredResourceSlice,
  desired: ResourceSliceSpec,
  adopt: ReadonlySet<string>,
): boolean {
  if (adopt.size === 0) return false;
  const sent: ResourceSlice = { ...stored, spec: desired };
  const fields = droppedFields(sent, stored);
  if (fields.length === 0) return false;
  if (!summarizeDroppedFields(fields).every((line) => adopt.has(line))) return false;
  return sliceSpecsEqual(stored.spec, withoutFields(sent, fields).spec);
}

/** Whether the stored spec would be up to date but for its devices' taints. */
function taintsOnlyChanged(stored: ResourceSliceSpec, desired: ResourceSliceSpec): boolean {
  const storedDevices = stored.devices ?? [];
  const desiredDevices = desired.devices ?? [];
  if (storedDevices.length !== desiredDevices.length) return false;
  return sliceSpecsEqual(
    { ...stored, devices: storedDevices.map(untainted) },
    { ...desired, devices: desiredDevices.map(untainted) },
  );
}

function untainted(device: Device): Device {
  if (device.taints === undefined) return device;
  const rest = { ...device };
  delete rest.taints;
  return rest;
}

/**
 * The spec that publishes `content` (`devices` are its devices, with taint times kept) in
 * `pool`: the node selection of the pool's scope, the devices as resource.k8s.io/v1 spells them,
 * and the pool's pass-through members under the typed fields.
 *
 * A `per-device` pool (upstream's `perDeviceNodeSelection`) sets no node selection on the
 * slice: each device carries its own `nodeName`, `nodeSelector` or `allNodes`.
 */
function desiredSpec(
  content: SliceContent,
  devices: Device[],
  resourcePool: ResourcePool,
  pool: Pool,
  input: PlanSyncInput,
): ResourceSliceSpec {
  const spec: ResourceSliceSpec = {
    ...untypedMembers(pool.passThrough, TYPED_SLICE_SPEC_FIELDS),
    driver: input.driver,
    pool: resourcePool,
  };
  const scope = pool.scope;
  switch (scope.kind) {
    case 'node':
      spec.nodeName = input.node;
      break;
    case 'all-nodes':
      spec.allNodes = true;
      break;
    case 'node-selector':
      spec.nodeSelector = scope.nodeSelector;
      break;
    case 'per-device':
      spec.perDeviceNodeSelection = true;
      break;
  }
  // Empty lists are left out, as the API server would: a slice holds devices or counters.
  if (devices.length > 0) spec.devices = publishedDevices(devices);
  if (content.sharedCounters !== undefined && content.sharedCounters.length > 0) {
    spec.sharedCounters = content.sharedCounters;
  }
  return spec;
}

/**
 * A new slice, named as upstream's controller names it (`<index>-<driver>-`, then the owner's
 * name): only a node-local slice has an owner, its Node. Slices of cluster-level pools
 * (all nodes, a node selector, per-device node selection) have no owner and no node part.
 */
function createdSlice(
  index: number,
  indexLength: number,
  content: SliceContent,
  resourcePool: ResourcePool,
  pool: Pool,
  input: PlanSyncInput,
): ResourceSlice {
  const nodeLocal = pool.scope.kind === 'node';
  const metadata: ObjectMeta = {
    generateName: sliceGenerateName({
      index,
      indexLength,
      driver: input.driver,
      node: nodeLocal ? input.node : '',
    }),
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
  };
  if (nodeLocal) metadata.ownerReferences = [nodeOwner(input)];
  return {
    apiVersion: RESOURCE_SLICE_API_VERSION,
    kind: RESOURCE_SLICE_KIND,
    metadata,
    spec: desiredSpec(content, content.devices, resourcePool, pool, input),
  };
}

/**
 * The stored slice with the desired spec (replaced whole: a pass-through member the pool no
 * longer has goes too) and, for a node-local slice, its Node as owner.
 */
function updatedSlice(
  slice: StoredResourceSlice,
  content: SliceContent,
  resourcePool: ResourcePool,
  pool: Pool,
  input: PlanSyncInput,
): StoredResourceSlice {
  const devices = copyTaintTimeAdded(slice.spec.devices, content.devices);
  let metadata = slice.metadata;
  if (pool.scope.kind === 'node' && !hasNodeOwner(slice, input)) {
    const others = (metadata.ownerReferences ?? []).filter((owner) => !isNodeReference(owner));
    metadata = { ...metadata, ownerReferences: [...others, nodeOwner(input)] };
  }
  return { ...slice, metadata, spec: desiredSpec(content, devices, resourcePool, pool, input) };
}

function nodeOwner(input: PlanSyncInput): OwnerReference {
  return { apiVersion: 'v1', kind: 'Node', name: input.node, uid: input.nodeUid, controller: true };
}

function isNodeReference(owner: OwnerReference): boolean {
  return owner.apiVersion === 'v1' && owner.kind === 'Node';
}

function hasNodeOwner(slice: ResourceSlice, input: PlanSyncInput): boolean {
  for (const owner of slice.metadata.ownerReferences ?? []) {
    if (
      isNodeReference(owner) &&
      owner.name === input.node &&
      owner.uid === input.nodeUid &&
      owner.controller === true
    ) {
      return true;
    }
  }
  return false;
}

/**
 * Whether the slice belongs to an earlier Node of the same name (recreated by a cloud provider,
 * say). The garbage collector deletes such slices because their owner is gone; updating one
 * would be lost, so it is replaced instead. Upstream never meets this: its controller runs with
 * the node and restarts with it.
 */
function hasStaleNodeOwner(slice: ResourceSlice, input: PlanSyncInput): boolean {
  for (const owner of slice.metadata.ownerReferences ?? []) {
    if (isNodeReference(owner) && owner.name === input.node && owner.uid !== input.nodeUid) {
      return true;
    }
  }
  return false;
}

/**
 * Upstream `copyTaintTimeAdded`: a desired taint without `timeAdded` keeps the time of the same
 * taint (key, value, effect) of the same device in the stored slice, so that an update does not
 * reset when a taint was added. Copies only the devices it changes.
 */
function copyTaintTimeAdded(stored: readonly Device[] | undefined, desired: Device[]): Device[] {
  if (stored === undefined || stored.length === 0) return desired;
  let result = desired;
  let storedByName: Map<string, Device> | undefined;
  for (let i = 0; i < desired.length; i++) {
    const device = desired[i];
    const taints = device?.taints;
    if (device === undefined || taints === undefined) continue;
    if (!taints.some((taint) => taint.timeAdded === undefined)) continue;
    storedByName ??= new Map(stored.map((storedDevice) => [storedDevice.name, storedDevice]));
    const storedTaints = storedByName.get(device.name)?.taints;
    if (storedTaints === undefined) continue;
    const copied = taints.map((taint) => {
      if (taint.timeAdded !== undefined) return taint;
      const match = storedTaints.find(
        (old) =>
          old.key === taint.key &&
          (old.value ?? '') === (taint.value ?? '') &&
          old.effect === taint.effect,
      );
      return match?.timeAdded === undefined ? taint : { ...taint, timeAdded: match.timeAdded };
    });
    if (result === desired) result = desired.slice();
    result[i] = { ...device, taints: copied };
  }
  return result;
}

function deletion(
  slice: StoredResourceSlice,
  pool: string,
  reason: SliceDeletionReason,
): SliceDeletion {
  return {
    name: slice.metadata.name,
    uid: slice.metadata.uid,
    resourceVersion: slice.metadata.resourceVersion,
    pool,
    reason,
  };
}
