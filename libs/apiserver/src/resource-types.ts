import {
  nodeSchema,
  objAt,
  resourceSliceSchema,
  listAt,
  metaOf,
  strAt,
  jsonEqual,
  stringMapAt,
} from './api-schemas';
import type { FieldError } from './field-errors';
import { formatTime, isJsonObject } from './object-schema';
import type { JsonObject, JsonValue, StructSchema } from './object-schema';
import type { ResourceIndexing } from './object-store';
import type { SliceLayoutRules } from './validation';
import {
  validateNode,
  validateNodeUpdate,
  validateResourceSlice,
  validateResourceSliceUpdate,
} from './validation';

/**
 * The registry strategies of the two resources this server stores: what happens to an object
 * on create and update (defaulting, generation, dropped fields, admission), how it validates,
 * which fields selectors can use, and how `kubectl get` prints it (the server-side Table).
 */

/**
 * The DRA feature gates of kube-apiserver 1.32–1.37 that change what a ResourceSlice keeps
 * (pkg/registry/resource/resourceslice/strategy.go, one `dropDisabled…Fields` per gate). The
 * emulator is the server: it knows the gates of the releases it passes for, which may be more
 * than the client side (`DraFeatureGateName` of libs/slices) knows.
 */
export const DRA_FEATURE_GATES = [
  'DRADeviceTaints',
  'DRAPartitionableDevices',
  'DRADeviceBindingConditions',
  'DRAConsumableCapacity',
  'DRAResourceClaimDeviceStatus',
  'DRAListTypeAttributes',
  'DRANodeAllocatableResources',
] as const;

/** A DRA feature gate that changes what a ResourceSlice keeps. */
export type DraFeatureGate = (typeof DRA_FEATURE_GATES)[number];

/** Whether `name` is one of {@link DRA_FEATURE_GATES}. */
export function isDraFeatureGate(name: string): name is DraFeatureGate {
  return (DRA_FEATURE_GATES as readonly string[]).includes(name);
}

/**
 * Feature gates as kube-apiserver's `--feature-gates` sets them; a gate left out has its 1.34
 * default ({@link DEFAULT_FEATURE_GATES}).
 */
export type FeatureGates = Readonly<Partial<Record<DraFeatureGate, boolean>>>;

/**
 * kube-apiserver 1.34's defaults: the DRA gates that guard ResourceSlice fields are alpha and
 * off, except `DRAResourceClaimDeviceStatus` (beta since 1.33), which binding conditions also
 * need. The two gates of 1.36 do not exist in 1.34, which is the same as off.
 */
export const DEFAULT_FEATURE_GATES: Readonly<Record<DraFeatureGate, boolean>> = {
  DRADeviceTaints: false,
  DRAPartitionableDevices: false,
  DRADeviceBindingConditions: false,
  DRAConsumableCapacity: false,
  DRAResourceClaimDeviceStatus: true,
  DRAListTypeAttributes: false,
  DRANodeAllocatableResources: false,
};

function enabled(gates: FeatureGates, gate: DraFeatureGate): boolean {
  return gates[gate] ?? DEFAULT_FEATURE_GATES[gate];
}

export interface TableColumn {
  readonly name: string;
  readonly type: string;
  readonly format: string;
  readonly description: string;
  readonly priority: number;
}

/** The `/status` subresource's strategy (the registry's `StatusStrategy`). */
export interface StatusStrategy {
  /** Top-level fields a status write ignores and field tracking leaves out (`spec`). */
  readonly resetFields: readonly string[];
  /** What a status write may not change is put back from the stored object. */
  prepareForUpdate(obj: JsonObject, old: JsonObject): void;
  validateUpdate(obj: JsonObject, old: JsonObject): FieldError[];
}

/**
 * How a served version other than the storage one converts: objects are stored, defaulted,
 * validated and judged by the strategy in the storage version's shape (`schema`), and read and
 * written by clients in this version's.
 */
export interface VersionConversion {
  /** This version's schema (decoding, patches, field tracking). */
  readonly schema: StructSchema;
  toHub(obj: JsonObject): JsonObject;
  /** Also puts the fields in this version's struct order. */
  fromHub(obj: JsonObject): JsonObject;
}

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** `v1` or `resource.k8s.io/v1`. */
  readonly apiVersion: string;
  readonly resource: string;
  readonly kind: string;
  readonly listKind: string;
  /** The stored (hub) shape. */
  readonly schema: StructSchema;
  /** Set when requests in this version are converted to and from the stored shape. */
  readonly conversion?: VersionConversion;
  readonly indexing: ResourceIndexing;
  /**
   * Whether objects live in namespaces: served under `/namespaces/{namespace}/` (and listed and
   * watched across namespaces without it), stored under `<namespace>/<name>`.
   */
  readonly namespaced: boolean;
  /** Field labels the selector accepts; others get `fieldLabelError`. */
  readonly fieldLabels: readonly string[];
  /**
   * Field labels of this version that select a field under another name (the scheme's field
   * label conversion, e.g. events.k8s.io's `regarding.name` → `involvedObject.name`).
   */
  readonly fieldLabelAliases?: Readonly<Record<string, string>>;
  /** A PUT of a missing object creates it (the strategy's `AllowCreateOnUpdate`). */
  readonly allowCreateOnUpdate?: boolean;
  /**
   * Objects are deleted a time after their last write, as the Event registry's `TTLFunc`
   * (kube-apiserver's `--event-ttl`) makes etcd do.
   */
  readonly expires?: boolean;
  /**
   * `DefaultGarbageCollectionPolicy` is `Unsupported`: a deletion's propagation policy adds no
   * `orphan` or `foregroundDeletion` finalizer.
   */
  readonly garbageCollectionUnsupported?: boolean;
  /**
   * The group of the internal type when it is not this version's: events.k8s.io Events are the
   * core group's internal Event, so their Invalid errors say `Event "x" is invalid`.
   */
  readonly internalGroup?: string;
  /** Served for reads only (the emulator stores none): writes are answered 405. */
  readonly readOnly?: boolean;
  fieldLabelError(label: string): string;
  /** Whether the registry maintains `metadata.generation` (bumped on spec changes). */
  readonly hasGeneration: boolean;
  /** DELETE answers with the deleted object (true) or a Success Status (false). */
  readonly returnDeletedObject: boolean;
  /** Top-level fields the main resource ignores and field tracking leaves out (`status`). */
  readonly resetFields: readonly string[];
  /** Set when the type has a `/status` subresource. */
  readonly status?: StatusStrategy;
  /**
   * The API version's defaulting (`SetDefaults_*`), which the server runs on every object it
   * decodes from a request, and on the result of a patch or an apply, before the strategy.
   * Keeps the fields in struct order.
   */
  applyDefaults(obj: JsonObject, nowMs: number): void;
  prepareForCreate(obj: JsonObject, gates: FeatureGates): void;
  prepareForUpdate(obj: JsonObject, old: JsonObject, gates: FeatureGates): void;
  /** Mutating admission on create (the plugins a default kube-apiserver runs). */
  admitCreate(obj: JsonObject): void;
  validate(obj: JsonObject, rules: SliceLayoutRules): FieldError[];
  validateUpdate(obj: JsonObject, old: JsonObject, rules: SliceLayoutRules): FieldError[];
  readonly columns: readonly TableColumn[];
  cells(obj: JsonObject, nowMs: number): JsonValue[];
}

/** The Name column every type's Table has. */
export const NAME_COLUMN: TableColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description:
    'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names',
  priority: 0,
};

/** The Age column (creation timestamp) of most types' Tables. */
export const AGE_COLUMN: TableColumn = {
  name: 'Age',
  type: 'string',
  format: '',
  description:
    'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
  priority: 0,
};

/** A string column of a Table. */
export function column(name: string, description: string, priority = 0): TableColumn {
  return { name, type: 'string', format: '', description, priority };
}

/** apimachinery's `duration.HumanDuration`, which the Age column uses. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.floor(hours / 24) % 365;
    return dy === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** The Age cell: the time since creation. */
export function age(obj: JsonObject, nowMs: number): string {
  const created = strAt(objAt(obj, 'metadata'), 'creationTimestamp');
  if (created === undefined) return '<unknown>';
  return humanDuration(nowMs - Date.parse(created));
}

// ---------------------------------------------------------------------------------------------
// ResourceSlice

/*
 * The strategy's `dropDisabledFields` (pkg/registry/resource/resourceslice/strategy.go,
 * 1.34–1.37): one function per gate, each clearing its fields from the new object unless the gate
 * is on or the old object already uses any of them ("in use" as upstream judges it: a non-empty
 * list or map, a set pointer, an attribute's list value set at all). On create there is no old
 * object.
 */

type Slice = JsonObject | undefined;

function specOf(slice: Slice): JsonObject | undefined {
  return slice === undefined ? undefined : objAt(slice, 'spec');
}

function devicesOf(slice: Slice): JsonObject[] {
  return (listAt(specOf(slice), 'devices') ?? []).filter(isJsonObject);
}

/** Go's `x != nil` for a pointer field of the JSON form. */
function isSet(obj: JsonObject | undefined, field: string): boolean {
  const value = obj?.[field];
  return value !== undefined && value !== null;
}

/** Go's `len(x) > 0` for a list field of the JSON form. */
function hasItems(obj: JsonObject | undefined, field: string): boolean {
  return (listAt(obj, field) ?? []).length > 0;
}

function clearDeviceFields(slice: JsonObject, fields: readonly string[]): void {
  for (const device of devicesOf(slice)) {
    for (const field of fields) Reflect.deleteProperty(device, field);
  }
}

const TAINT_FIELDS = ['taints'];
const PARTITIONABLE_DEVICE_FIELDS = ['consumesCounters', 'nodeName', 'nodeSelector', 'allNodes'];
const BINDING_CONDITION_FIELDS = ['bindingConditions', 'bindingFailureConditions', 'bindsToNode'];

function deviceTaintsInUse(old: Slice): boolean {
  return devicesOf(old).some((d) => hasItems(d, 'taints'));
}

function partitionableDevicesInUse(old: Slice): boolean {
  const spec = specOf(old);
  if (hasItems(spec, 'sharedCounters') || isSet(spec, 'perDeviceNodeSelection')) return true;
  return devicesOf(old).some(
    (d) =>
      hasItems(d, 'consumesCounters') ||
      isSet(d, 'nodeName') ||
      isSet(d, 'nodeSelector') ||
      isSet(d, 'allNodes'),
  );
}

function bindingConditionsInUse(old: Slice): boolean {
  return devicesOf(old).some(
    (d) =>
      hasItems(d, 'bindingConditions') ||
      hasItems(d, 'bindingFailureConditions') ||
      isSet(d, 'bindsToNode'),
  );
}

function capacitiesOf(device: JsonObject): JsonObject[] {
  return Object.values(objAt(device, 'capacity') ?? {}).filter(isJsonObject);
}

function consumableCapacityInUse(old: Slice): boolean {
  return devicesOf(old).some(
    (d) =>
      isSet(d, 'allowMultipleAllocations') ||
      capacitiesOf(d).some((c) => isSet(c, 'requestPolicy')),
  );
}

const LIST_ATTRIBUTE_FIELDS = ['ints', 'bools', 'strings', 'versions'];

function attributesOf(device: JsonObject): JsonObject[] {
  return Object.values(objAt(device, 'attributes') ?? {}).filter(isJsonObject);
}

/** `draListTypeAttributesFeatureInUse`: any list value set, even an empty one (a non-nil slice). */
function listTypeAttributesInUse(old: Slice): boolean {
  return devicesOf(old).some((d) =>
    attributesOf(d).some((a) => LIST_ATTRIBUTE_FIELDS.some((field) => isSet(a, field))),
  );
}

/**
 * Both names KEP-5517's device field has had: 1.36's `nodeAllocatableResourceMappings` and
 * 1.37's `nodeAllocatableResources`. A release's schema has only one of them, so clearing both
 * is clearing the one it has.
 */
const NODE_ALLOCATABLE_FIELDS = ['nodeAllocatableResourceMappings', 'nodeAllocatableResources'];

function nodeAllocatableResourcesInUse(old: Slice): boolean {
  return devicesOf(old).some((d) =>
    NODE_ALLOCATABLE_FIELDS.some((field) => Object.keys(objAt(d, field) ?? {}).length > 0),
  );
}

function dropDisabledSliceFields(obj: JsonObject, old: Slice, gates: FeatureGates): void {
  if (!enabled(gates, 'DRADeviceTaints') && !deviceTaintsInUse(old)) {
    clearDeviceFields(obj, TAINT_FIELDS);
  }
  if (!enabled(gates, 'DRAPartitionableDevices') && !partitionableDevicesInUse(old)) {
    const spec = specOf(obj);
    if (spec !== undefined) {
      Reflect.deleteProperty(spec, 'sharedCounters');
      Reflect.deleteProperty(spec, 'perDeviceNodeSelection');
    }
    clearDeviceFields(obj, PARTITIONABLE_DEVICE_FIELDS);
  }
  const bindingConditions =
    enabled(gates, 'DRADeviceBindingConditions') && enabled(gates, 'DRAResourceClaimDeviceStatus');
  if (!bindingConditions && !bindingConditionsInUse(old)) {
    clearDeviceFields(obj, BINDING_CONDITION_FIELDS);
  }
  if (!enabled(gates, 'DRAConsumableCapacity') && !consumableCapacityInUse(old)) {
    clearDeviceFields(obj, ['allowMultipleAllocations']);
    for (const device of devicesOf(obj)) {
      for (const capacity of capacitiesOf(device)) {
        Reflect.deleteProperty(capacity, 'requestPolicy');
      }
    }
  }
  if (!enabled(gates, 'DRANodeAllocatableResources') && !nodeAllocatableResourcesInUse(old)) {
    clearDeviceFields(obj, NODE_ALLOCATABLE_FIELDS);
  }
  // dropDisableDRAListTypeAttributesFields: the list values go, the attribute stays — one that
  // had only a list is left empty, which validation then refuses ("exactly one value").
  if (!enabled(gates, 'DRAListTypeAttributes') && !listTypeAttributesInUse(old)) {
    for (const device of devicesOf(obj)) {
      for (const attribute of attributesOf(device)) {
        for (const field of LIST_ATTRIBUTE_FIELDS) Reflect.deleteProperty(attribute, field);
      }
    }
  }
}

export const resourceSliceType: ResourceType = {
  group: 'resource.k8s.io',
  version: 'v1',
  apiVersion: 'resource.k8s.io/v1',
  resource: 'resourceslices',
  kind: 'ResourceSlice',
  listKind: 'ResourceSliceList',
  schema: resourceSliceSchema,
  namespaced: false,
  indexing: {
    kind: 'ResourceSlice',
    apiVersion: 'resource.k8s.io/v1',
    fieldsOf(obj) {
      const spec = objAt(obj, 'spec');
      return {
        'metadata.name': strAt(objAt(obj, 'metadata'), 'name') ?? '',
        'spec.nodeName': strAt(spec, 'nodeName') ?? '',
        'spec.driver': strAt(spec, 'driver') ?? '',
      };
    },
    indexedFields: ['spec.nodeName', 'spec.driver'],
  },
  fieldLabels: ['metadata.name', 'spec.nodeName', 'spec.driver'],
  fieldLabelError: (label) =>
    `field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: ${label}`,
  hasGeneration: true,
  returnDeletedObject: true,
  resetFields: [],
  applyDefaults(obj, nowMs) {
    // SetDefaults_DeviceTaint (pkg/apis/resource/v1/defaults.go): a taint without timeAdded gets
    // the current time, truncated to the second. It runs with DRADeviceTaints off too; the
    // strategy then drops the taints.
    for (const device of devicesOf(obj)) {
      for (const taint of listAt(device, 'taints') ?? []) {
        if (isJsonObject(taint) && (taint.timeAdded === undefined || taint.timeAdded === null))
          taint.timeAdded = formatTime(nowMs);
      }
    }
  },
  prepareForCreate(obj, gates) {
    metaOf(obj).generation = 1;
    dropDisabledSliceFields(obj, undefined, gates);
  },
  prepareForUpdate(obj, old, gates) {
    // Upstream compares the specs before it drops fields: resending a dropped field bumps the
    // generation although the stored spec stays the same.
    const meta = metaOf(obj);
    const oldGeneration =
      typeof metaOf(old).generation === 'number' ? (metaOf(old).generation as number) : 0;
    meta.generation = jsonEqual(obj.spec, old.spec) ? oldGeneration : oldGeneration + 1;
    dropDisabledSliceFields(obj, old, gates);
  },
  admitCreate() {
    // No admission plugin of a default kube-apiserver mutates ResourceSlices.
  },
  validate: validateResourceSlice,
  validateUpdate: validateResourceSliceUpdate,
  columns: [
    NAME_COLUMN,
    // The printer (pkg/printers/internalversion) describes each column with the v1 field's doc, whole.
    column(
      'Node',
      'NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.',
    ),
    column(
      'Driver',
      'Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. This field is immutable.',
    ),
    column(
      'Pool',
      'Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.',
    ),
    AGE_COLUMN,
  ],
  cells(obj, nowMs) {
    const spec = objAt(obj, 'spec');
    return [
      strAt(objAt(obj, 'metadata'), 'name') ?? '',
      strAt(spec, 'nodeName') ?? '',
      strAt(spec, 'driver') ?? '',
      strAt(objAt(spec ?? {}, 'pool'), 'name') ?? '',
      age(obj, nowMs),
    ];
  },
};

// ---------------------------------------------------------------------------------------------
// Node

const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';

function nodeStatusText(obj: JsonObject): string {
  const conditions = listAt(objAt(obj, 'status'), 'conditions') ?? [];
  const ready = conditions.find((c) => isJsonObject(c) && c.type === 'Ready');
  let status = 'Unknown';
  if (isJsonObject(ready))
    status = ready.status === 'True' ? 'Ready' : ready.status === 'False' ? 'NotReady' : 'Unknown';
  if (objAt(obj, 'spec')?.unschedulable === true) status += ',SchedulingDisabled';
  return status;
}

function nodeRoles(obj: JsonObject): string {
  const labels = stringMapAt(objAt(obj, 'metadata'), 'labels');
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(labels)) {
    if (key.startsWith('node-role.kubernetes.io/'))
      roles.add(key.slice('node-role.kubernetes.io/'.length));
    else if (key === 'kubernetes.io/role' && value !== '') roles.add(value);
  }
  return roles.size === 0 ? '<none>' : [...roles].sort().join(',');
}

function nodeAddress(obj: JsonObject, type: string): string {
  const addresses = listAt(objAt(obj, 'status'), 'addresses') ?? [];
  const found = addresses.find((a) => isJsonObject(a) && a.type === type);
  return isJsonObject(found) ? (strAt(found, 'address') ?? '<none>') : '<none>';
}

function orUnknown(value: string | undefined): string {
  return value === undefined || value === '' ? '<unknown>' : value;
}

export const nodeType: ResourceType = {
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  resource: 'nodes',
  kind: 'Node',
  listKind: 'NodeList',
  schema: nodeSchema,
  namespaced: false,
  indexing: {
    kind: 'Node',
    apiVersion: 'v1',
    fieldsOf(obj) {
      return {
        'metadata.name': strAt(objAt(obj, 'metadata'), 'name') ?? '',
        'spec.unschedulable': objAt(obj, 'spec')?.unschedulable === true ? 'true' : 'false',
      };
    },
    indexedFields: [],
  },
  fieldLabels: ['metadata.name', 'spec.unschedulable'],
  fieldLabelError: (label) => `field label not supported: ${label}`,
  hasGeneration: false,
  returnDeletedObject: false,
  resetFields: ['status'],
  status: {
    resetFields: ['spec'],
    prepareForUpdate(obj, old) {
      // nodeStatusStrategy.PrepareForUpdate (pkg/registry/core/node/strategy.go): the spec stays
      // as stored, status.config only if it was set before. Metadata is the request's, as for
      // any update (labels and annotations may change through /status).
      obj.spec = structuredClone(old.spec ?? {});
      const status = objAt(obj, 'status');
      if (status !== undefined && objAt(old, 'status')?.config === undefined)
        Reflect.deleteProperty(status, 'config');
    },
    // nodeStatusStrategy.ValidateUpdate is ValidateNodeUpdate alone.
    validateUpdate: validateNodeUpdate,
  },
  applyDefaults(obj) {
    // SetDefaults_NodeStatus (pkg/apis/core/v1/defaults.go): allocatable defaults to capacity.
    const status = objAt(obj, 'status');
    if (status === undefined || status.allocatable !== undefined) return;
    const capacity = objAt(status, 'capacity');
    if (capacity === undefined) return;
    const ordered: JsonObject = {};
    for (const [key, value] of Object.entries(status)) {
      ordered[key] = value;
      if (key === 'capacity') ordered.allocatable = structuredClone(capacity);
    }
    obj.status = ordered;
  },
  prepareForCreate(obj) {
    const spec = objAt(obj, 'spec');
    if (spec !== undefined) Reflect.deleteProperty(spec, 'configSource');
    const status = objAt(obj, 'status');
    if (status !== undefined) Reflect.deleteProperty(status, 'config');
  },
  prepareForUpdate(obj, old) {
    obj.status = structuredClone(old.status ?? {});
    const spec = objAt(obj, 'spec');
    if (spec !== undefined) Reflect.deleteProperty(spec, 'configSource');
  },
  admitCreate(obj) {
    // TaintNodesByCondition: a new Node is not ready until its kubelet says otherwise.
    let spec = objAt(obj, 'spec');
    if (spec === undefined) {
      spec = {};
      obj.spec = spec;
    }
    const taints = listAt(spec, 'taints') ?? [];
    const present = taints.some(
      (t) => isJsonObject(t) && t.key === NOT_READY_TAINT && t.effect === 'NoSchedule',
    );
    if (!present) spec.taints = [...taints, { key: NOT_READY_TAINT, effect: 'NoSchedule' }];
  },
  validate: validateNode,
  validateUpdate: validateNodeUpdate,
  columns: [
    NAME_COLUMN,
    column('Status', 'The status of the node'),
    column('Roles', 'The roles of the node'),
    AGE_COLUMN,
    column('Version', 'Kubelet Version reported by the node.'),
    column(
      'Internal-IP',
      'List of addresses reachable to the node. Queried from cloud provider, if available.',
      1,
    ),
    column(
      'External-IP',
      'List of addresses reachable to the node. Queried from cloud provider, if available.',
      1,
    ),
    column(
      'OS-Image',
      'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
      1,
    ),
    column(
      'Kernel-Version',
      "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
      1,
    ),
    column(
      'Container-Runtime',
      'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
      1,
    ),
  ],
  cells(obj, nowMs) {
    const info = objAt(objAt(obj, 'status') ?? {}, 'nodeInfo');
    return [
      strAt(objAt(obj, 'metadata'), 'name') ?? '',
      nodeStatusText(obj),
      nodeRoles(obj),
      age(obj, nowMs),
      strAt(info, 'kubeletVersion') ?? '',
      nodeAddress(obj, 'InternalIP'),
      nodeAddress(obj, 'ExternalIP'),
      orUnknown(strAt(info, 'osImage')),
      orUnknown(strAt(info, 'kernelVersion')),
      orUnknown(strAt(info, 'containerRuntimeVersion')),
    ];
  },
};

export const RESOURCE_TYPES: readonly ResourceType[] = [nodeType, resourceSliceType];
