import {
  BOOL,
  INT32,
  INT64,
  MICROTIME,
  QUANTITY,
  RAW,
  STRING,
  TIME,
  atomicList,
  atomicListKeepingEmpty,
  isJsonObject,
  mapList,
  mapOf,
  setList,
  struct,
} from './object-schema';
import type { FieldSpec, JsonObject, JsonValue, StructSchema } from './object-schema';

/**
 * The Go types of the objects this server stores (k8s.io/api v1.34), in struct field order.
 * Field order, omitempty and pointer-ness decide the exact JSON the server returns.
 */

export const ownerReferenceSchema = struct(
  'OwnerReference',
  [
    ['apiVersion', STRING],
    ['kind', STRING],
    ['name', STRING],
    ['uid', STRING],
    ['controller', BOOL, 'omitempty,ptr'],
    ['blockOwnerDeletion', BOOL, 'omitempty,ptr'],
  ],
  true,
);

export const managedFieldsEntrySchema = struct('ManagedFieldsEntry', [
  ['manager', STRING, 'omitempty'],
  ['operation', STRING, 'omitempty'],
  ['apiVersion', STRING, 'omitempty'],
  ['time', TIME, 'omitempty,ptr'],
  ['fieldsType', STRING, 'omitempty'],
  ['fieldsV1', RAW, 'omitempty,ptr'],
  ['subresource', STRING, 'omitempty'],
]);

export const objectMetaSchema = struct('ObjectMeta', [
  ['name', STRING, 'omitempty'],
  ['generateName', STRING, 'omitempty'],
  ['namespace', STRING, 'omitempty'],
  ['selfLink', STRING, 'omitempty'],
  ['uid', STRING, 'omitempty'],
  ['resourceVersion', STRING, 'omitempty'],
  ['generation', INT64, 'omitempty'],
  ['creationTimestamp', TIME, 'omitempty,ptr'],
  ['deletionTimestamp', TIME, 'omitempty,ptr'],
  ['deletionGracePeriodSeconds', INT64, 'omitempty,ptr'],
  ['labels', mapOf(STRING), 'omitempty'],
  ['annotations', mapOf(STRING), 'omitempty'],
  ['ownerReferences', mapList(ownerReferenceSchema, ['uid']), 'omitempty'],
  ['finalizers', setList(STRING), 'omitempty'],
  ['managedFields', atomicList(managedFieldsEntrySchema), 'omitempty'],
]);

const nodeSelectorRequirement = struct('NodeSelectorRequirement', [
  ['key', STRING],
  ['operator', STRING],
  ['values', atomicList(STRING), 'omitempty'],
]);

const nodeSelectorTerm = struct(
  'NodeSelectorTerm',
  [
    ['matchExpressions', atomicList(nodeSelectorRequirement), 'omitempty'],
    ['matchFields', atomicList(nodeSelectorRequirement), 'omitempty'],
  ],
  true,
);

const nodeSelector = struct(
  'NodeSelector',
  [['nodeSelectorTerms', atomicList(nodeSelectorTerm)]],
  true,
);

const taint = struct('Taint', [
  ['key', STRING],
  ['value', STRING, 'omitempty'],
  ['effect', STRING],
  ['timeAdded', TIME, 'omitempty,ptr'],
]);

const nodeSpec = struct('NodeSpec', [
  ['podCIDR', STRING, 'omitempty'],
  ['podCIDRs', setList(STRING), 'omitempty'],
  ['providerID', STRING, 'omitempty'],
  ['unschedulable', BOOL, 'omitempty'],
  ['taints', atomicList(taint), 'omitempty'],
  ['configSource', RAW, 'omitempty,ptr'],
  ['externalID', STRING, 'omitempty'],
]);

const nodeCondition = struct('NodeCondition', [
  ['type', STRING],
  ['status', STRING],
  ['lastHeartbeatTime', TIME, 'ptr'],
  ['lastTransitionTime', TIME, 'ptr'],
  ['reason', STRING, 'omitempty'],
  ['message', STRING, 'omitempty'],
]);

const nodeAddress = struct('NodeAddress', [
  ['type', STRING],
  ['address', STRING],
]);

const nodeStatus = struct('NodeStatus', [
  ['capacity', mapOf(QUANTITY), 'omitempty'],
  ['allocatable', mapOf(QUANTITY), 'omitempty'],
  ['phase', STRING, 'omitempty'],
  ['conditions', mapList(nodeCondition, ['type']), 'omitempty'],
  ['addresses', mapList(nodeAddress, ['type']), 'omitempty'],
  [
    'daemonEndpoints',
    struct('NodeDaemonEndpoints', [
      ['kubeletEndpoint', struct('DaemonEndpoint', [['Port', INT32]]), 'omitempty'],
    ]),
    'omitempty',
  ],
  [
    'nodeInfo',
    struct('NodeSystemInfo', [
      ['machineID', STRING],
      ['systemUUID', STRING],
      ['bootID', STRING],
      ['kernelVersion', STRING],
      ['osImage', STRING],
      ['containerRuntimeVersion', STRING],
      ['kubeletVersion', STRING],
      ['kubeProxyVersion', STRING],
      ['operatingSystem', STRING],
      ['architecture', STRING],
      ['swap', RAW, 'omitempty,ptr'],
    ]),
    'omitempty',
  ],
  [
    'images',
    atomicList(
      struct('ContainerImage', [
        ['names', atomicList(STRING)],
        ['sizeBytes', INT64, 'omitempty'],
      ]),
    ),
    'omitempty',
  ],
  ['volumesInUse', atomicList(STRING), 'omitempty'],
  [
    'volumesAttached',
    atomicList(
      struct('AttachedVolume', [
        ['name', STRING],
        ['devicePath', STRING],
      ]),
    ),
    'omitempty',
  ],
  ['config', RAW, 'omitempty,ptr'],
  ['runtimeHandlers', atomicList(RAW), 'omitempty'],
  ['features', RAW, 'omitempty,ptr'],
]);

export const nodeSchema = struct('Node', [
  ['metadata', objectMetaSchema, 'omitempty'],
  ['spec', nodeSpec, 'omitempty'],
  ['status', nodeStatus, 'omitempty'],
]);

/**
 * What a release's ResourceSlice types have, by the minor release a field appeared in (k8s.io/api
 * resource/v1 types.go of each release). A server decodes a field it does not know as unknown
 * (a warning, or 400 with `fieldValidation=Strict`), which is not what it does with a field it
 * knows but whose gate is off (dropped silently): the two are told apart here and in the strategy.
 */
export interface SliceSchemaFeatures {
  /** Taints, counters and per-device node selection (1.33). */
  readonly partitionable: boolean;
  /** Binding conditions, `allowMultipleAllocations` and capacity `requestPolicy` (1.34). */
  readonly bindingAndConsumable: boolean;
  /** `ints`, `bools`, `strings`, `versions` of a DeviceAttribute (1.36). */
  readonly listAttributes: boolean;
  /** 1.36's `nodeAllocatableResourceMappings` (KEP-5517's first shape). */
  readonly nodeAllocatableResourceMappings: boolean;
  /** 1.37's `nodeAllocatableResources` (the field renamed, `mapping` and `overhead`). */
  readonly nodeAllocatableResources: boolean;
}

/** The device fields a release of the given minor version serves. */
export function sliceSchemaFeatures(minor: number): SliceSchemaFeatures {
  return {
    partitionable: minor >= 33,
    bindingAndConsumable: minor >= 34,
    listAttributes: minor >= 36,
    nodeAllocatableResourceMappings: minor === 36,
    nodeAllocatableResources: minor >= 37,
  };
}

function deviceAttributeSchema(features: SliceSchemaFeatures): StructSchema {
  return struct('DeviceAttribute', [
    ['int', INT64, 'omitempty,ptr'],
    ['bool', BOOL, 'omitempty,ptr'],
    ['string', STRING, 'omitempty,ptr'],
    ['version', STRING, 'omitempty,ptr'],
    ...(features.listAttributes
      ? ([
          // Empty is not unset here: validateDeviceAttribute refuses an empty list.
          ['ints', atomicListKeepingEmpty(INT64), 'omitempty'],
          ['bools', atomicListKeepingEmpty(BOOL), 'omitempty'],
          ['strings', atomicListKeepingEmpty(STRING), 'omitempty'],
          ['versions', atomicListKeepingEmpty(STRING), 'omitempty'],
        ] satisfies FieldSpec[])
      : []),
  ]);
}

const capacityRequestPolicy = struct('CapacityRequestPolicy', [
  ['default', QUANTITY, 'omitempty,ptr'],
  ['validValues', atomicList(QUANTITY), 'omitempty'],
  [
    'validRange',
    struct('CapacityRequestPolicyRange', [
      ['min', QUANTITY, 'omitempty,ptr'],
      ['max', QUANTITY, 'omitempty,ptr'],
      ['step', QUANTITY, 'omitempty,ptr'],
    ]),
    'omitempty,ptr',
  ],
]);

function deviceCapacitySchema(features: SliceSchemaFeatures): StructSchema {
  return struct('DeviceCapacity', [
    ['value', QUANTITY],
    ...(features.bindingAndConsumable
      ? ([['requestPolicy', capacityRequestPolicy, 'omitempty,ptr']] satisfies FieldSpec[])
      : []),
  ]);
}

const counter = struct('Counter', [['value', QUANTITY]]);

const deviceTaint = struct('DeviceTaint', [
  ['key', STRING],
  ['value', STRING, 'omitempty'],
  ['effect', STRING],
  ['timeAdded', TIME, 'omitempty,ptr'],
]);

/** 1.36's `NodeAllocatableResourceMapping`. */
const nodeAllocatableResourceMapping = struct('NodeAllocatableResourceMapping', [
  ['capacityKey', STRING, 'omitempty,ptr'],
  ['allocationMultiplier', QUANTITY, 'omitempty,ptr'],
]);

/** 1.37's `NodeAllocatableResource` (a `mapping`, an `overhead`, or both). */
const nodeAllocatableResource = struct('NodeAllocatableResource', [
  [
    'mapping',
    struct('NodeAllocatableMapping', [
      ['capacityKey', STRING, 'omitempty,ptr'],
      ['capacityMultiplier', QUANTITY, 'omitempty,ptr'],
      ['deviceMultiplier', QUANTITY, 'omitempty,ptr'],
    ]),
    'omitempty,ptr',
  ],
  [
    'overhead',
    struct('NodeAllocatableOverhead', [
      ['perPod', QUANTITY, 'omitempty,ptr'],
      ['perContainer', QUANTITY, 'omitempty,ptr'],
    ]),
    'omitempty,ptr',
  ],
]);

/** The fields of a device after its name: v1 and v1beta2 `Device`, v1beta1 `BasicDevice`. */
function deviceFieldsOf(features: SliceSchemaFeatures): FieldSpec[] {
  const fields: FieldSpec[] = [
    ['attributes', mapOf(deviceAttributeSchema(features)), 'omitempty'],
    ['capacity', mapOf(deviceCapacitySchema(features)), 'omitempty'],
  ];
  if (features.partitionable) {
    fields.push(
      [
        'consumesCounters',
        atomicList(
          struct('DeviceCounterConsumption', [
            ['counterSet', STRING],
            ['counters', mapOf(counter)],
          ]),
        ),
        'omitempty',
      ],
      ['nodeName', STRING, 'omitempty,ptr'],
      ['nodeSelector', nodeSelector, 'omitempty,ptr'],
      ['allNodes', BOOL, 'omitempty,ptr'],
      ['taints', atomicList(deviceTaint), 'omitempty'],
    );
  }
  if (features.bindingAndConsumable) {
    fields.push(
      ['bindsToNode', BOOL, 'omitempty,ptr'],
      ['bindingConditions', atomicList(STRING), 'omitempty'],
      ['bindingFailureConditions', atomicList(STRING), 'omitempty'],
      ['allowMultipleAllocations', BOOL, 'omitempty,ptr'],
    );
  }
  if (features.nodeAllocatableResourceMappings)
    fields.push([
      'nodeAllocatableResourceMappings',
      mapOf(nodeAllocatableResourceMapping),
      'omitempty',
    ]);
  if (features.nodeAllocatableResources)
    fields.push(['nodeAllocatableResources', mapOf(nodeAllocatableResource), 'omitempty']);
  return fields;
}

/**
 * A ResourceSliceSpec around `deviceSchema`: v1 and v1beta2 make nodeName and allNodes pointers,
 * v1beta1 plain values (omitted when empty/false). Everything else has the same names and order.
 */
function resourceSliceSpecOf(
  deviceSchema: StructSchema,
  nodeFieldOptions: 'omitempty' | 'omitempty,ptr',
  features: SliceSchemaFeatures,
) {
  return struct('ResourceSliceSpec', [
    ['driver', STRING],
    [
      'pool',
      struct('ResourcePool', [
        ['name', STRING],
        ['generation', INT64],
        ['resourceSliceCount', INT64],
      ]),
    ],
    ['nodeName', STRING, nodeFieldOptions],
    ['nodeSelector', nodeSelector, 'omitempty,ptr'],
    ['allNodes', BOOL, nodeFieldOptions],
    ['devices', atomicList(deviceSchema)],
    ...(features.partitionable
      ? ([
          ['perDeviceNodeSelection', BOOL, 'omitempty,ptr'],
          [
            'sharedCounters',
            atomicList(
              struct('CounterSet', [
                ['name', STRING],
                ['counters', mapOf(counter)],
              ]),
            ),
            'omitempty',
          ],
        ] satisfies FieldSpec[])
      : []),
  ]);
}

/** A release's ResourceSlice schemas: v1's (also v1beta2's and the stored shape) and v1beta1's. */
export interface ResourceSliceSchemas {
  readonly v1: StructSchema;
  readonly v1beta1: StructSchema;
}

/** The ResourceSlice schemas of the release with the given minor version. */
export function resourceSliceSchemasFor(minor: number): ResourceSliceSchemas {
  const features = sliceSchemaFeatures(minor);
  const fields = deviceFieldsOf(features);
  const device = struct('Device', [['name', STRING], ...fields]);
  // resource.k8s.io/v1beta1 (staging/src/k8s.io/api/resource/v1beta1/types.go): a device's
  // fields sit in `basic`.
  const deviceV1beta1 = struct('Device', [
    ['name', STRING],
    ['basic', struct('BasicDevice', fields), 'omitempty,ptr'],
  ]);
  return {
    v1: struct('ResourceSlice', [
      ['metadata', objectMetaSchema, 'omitempty'],
      ['spec', resourceSliceSpecOf(device, 'omitempty,ptr', features)],
    ]),
    v1beta1: struct('ResourceSlice', [
      ['metadata', objectMetaSchema, 'omitempty'],
      ['spec', resourceSliceSpecOf(deviceV1beta1, 'omitempty', features)],
    ]),
  };
}

const SLICE_SCHEMAS_1_34 = resourceSliceSchemasFor(34);

/** kube-apiserver 1.34's ResourceSlice (v1, v1beta2 and the stored shape). */
export const resourceSliceSchema = SLICE_SCHEMAS_1_34.v1;

/** kube-apiserver 1.34's resource.k8s.io/v1beta1 ResourceSlice. */
export const resourceSliceV1beta1Schema = SLICE_SCHEMAS_1_34.v1beta1;

/*
 * Events (k8s.io/api core/v1 and events/v1). Go's `omitempty` does not omit a struct, so a zero
 * metav1.Time or MicroTime is written as `null` and an empty EventSource as `{}`.
 */

/** `+structType=atomic`: tracked and applied as one field. */
export const objectReferenceSchema = struct(
  'ObjectReference',
  [
    ['kind', STRING, 'omitempty'],
    ['namespace', STRING, 'omitempty'],
    ['name', STRING, 'omitempty'],
    ['uid', STRING, 'omitempty'],
    ['apiVersion', STRING, 'omitempty'],
    ['resourceVersion', STRING, 'omitempty'],
    ['fieldPath', STRING, 'omitempty'],
  ],
  true,
);

const eventSourceSchema = struct('EventSource', [
  ['component', STRING, 'omitempty'],
  ['host', STRING, 'omitempty'],
]);

/** core/v1 `Event`, the stored shape of both Event APIs. */
export const eventSchema = struct('Event', [
  ['metadata', objectMetaSchema],
  ['involvedObject', objectReferenceSchema],
  ['reason', STRING, 'omitempty'],
  ['message', STRING, 'omitempty'],
  ['source', eventSourceSchema, 'omitempty'],
  ['firstTimestamp', TIME, 'ptr'],
  ['lastTimestamp', TIME, 'ptr'],
  ['count', INT32, 'omitempty'],
  ['type', STRING, 'omitempty'],
  ['eventTime', MICROTIME, 'ptr'],
  [
    'series',
    struct('EventSeries', [
      ['count', INT32, 'omitempty'],
      ['lastObservedTime', MICROTIME, 'ptr'],
    ]),
    'omitempty,ptr',
  ],
  ['action', STRING, 'omitempty'],
  ['related', objectReferenceSchema, 'omitempty,ptr'],
  ['reportingComponent', STRING],
  ['reportingInstance', STRING],
]);

/** events.k8s.io/v1 `Event`. */
export const eventsV1EventSchema = struct('Event', [
  ['metadata', objectMetaSchema, 'omitempty'],
  ['eventTime', MICROTIME, 'ptr'],
  [
    'series',
    struct('EventSeries', [
      ['count', INT32],
      ['lastObservedTime', MICROTIME, 'ptr'],
    ]),
    'omitempty,ptr',
  ],
  ['reportingController', STRING, 'omitempty'],
  ['reportingInstance', STRING, 'omitempty'],
  ['action', STRING, 'omitempty'],
  ['reason', STRING, 'omitempty'],
  ['regarding', objectReferenceSchema, 'omitempty'],
  ['related', objectReferenceSchema, 'omitempty,ptr'],
  ['note', STRING, 'omitempty'],
  ['type', STRING, 'omitempty'],
  ['deprecatedSource', eventSourceSchema, 'omitempty'],
  ['deprecatedFirstTimestamp', TIME, 'ptr'],
  ['deprecatedLastTimestamp', TIME, 'ptr'],
  ['deprecatedCount', INT32, 'omitempty'],
]);

/**
 * A Pod or a Lease as far as this server knows one: it stores none of them and serves only reads
 * (always empty), so their bodies are kept opaque.
 */
export const opaqueObjectSchema = (goName: string) =>
  struct(goName, [
    ['metadata', objectMetaSchema, 'omitempty'],
    ['spec', RAW, 'omitempty,ptr'],
    ['status', RAW, 'omitempty,ptr'],
  ]);

/** Typed, narrowing accessors for decoded objects. */
export function objAt(value: JsonObject, key: string): JsonObject | undefined {
  const v = value[key];
  return isJsonObject(v) ? v : undefined;
}

export function strAt(value: JsonObject | undefined, key: string): string | undefined {
  const v = value?.[key];
  return typeof v === 'string' ? v : undefined;
}

export function numAt(value: JsonObject | undefined, key: string): number | undefined {
  const v = value?.[key];
  return typeof v === 'number' ? v : undefined;
}

export function listAt(value: JsonObject | undefined, key: string): JsonValue[] | undefined {
  const v = value?.[key];
  return Array.isArray(v) ? v : undefined;
}

/** The string map at `key` (labels, annotations), empty when unset. */
export function stringMapAt(value: JsonObject | undefined, key: string): Record<string, string> {
  const v = value?.[key];
  const out: Record<string, string> = {};
  if (!isJsonObject(v)) return out;
  for (const [k, item] of Object.entries(v)) if (typeof item === 'string') out[k] = item;
  return out;
}

/** `metadata` of an object; every stored object has one. */
export function metaOf(obj: JsonObject): JsonObject {
  const meta = objAt(obj, 'metadata');
  if (meta !== undefined) return meta;
  const created: JsonObject = {};
  obj.metadata = created;
  return created;
}

export function deepClone<T extends JsonValue>(value: T): T {
  return structuredClone(value);
}

/** Structural equality of two JSON values, key order ignored. */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (typeof a !== 'object' || typeof b !== 'object' || Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  return aKeys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

export type { StructSchema };
