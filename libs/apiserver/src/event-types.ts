import { eventSchema, eventsV1EventSchema, objAt, strAt } from './api-schemas';
import { validateEventCreate, validateEventUpdate } from './event-validation';
import { normalize } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { NAME_COLUMN, column, humanDuration } from './resource-types';
import type { ResourceType, VersionConversion } from './resource-types';

/**
 * Events, one stored object behind two APIs as in kube-apiserver: core/v1 `Event` is the stored
 * (hub) shape, events.k8s.io/v1 `Event` a converted version of it (pkg/apis/events/v1/
 * conversion.go). The registry strategy is pkg/registry/core/event: no defaulting, no
 * generation, a Success Status on delete, create on update, no garbage collection, and a time
 * to live after every write (`--event-ttl`).
 */

/** kube-apiserver's `--event-ttl` default: an Event goes 1 h after its last write. */
export const DEFAULT_EVENT_TTL_MS = 60 * 60 * 1000;

/** The selectable fields of an Event (`ToSelectableFields` of the event registry). */
function eventFields(obj: JsonObject): Record<string, string> {
  const meta = objAt(obj, 'metadata');
  const involved = objAt(obj, 'involvedObject');
  const controller = strAt(obj, 'reportingComponent') ?? '';
  const component = strAt(objAt(obj, 'source') ?? {}, 'component') ?? '';
  return {
    'involvedObject.kind': strAt(involved, 'kind') ?? '',
    'involvedObject.namespace': strAt(involved, 'namespace') ?? '',
    'involvedObject.name': strAt(involved, 'name') ?? '',
    'involvedObject.uid': strAt(involved, 'uid') ?? '',
    'involvedObject.apiVersion': strAt(involved, 'apiVersion') ?? '',
    'involvedObject.resourceVersion': strAt(involved, 'resourceVersion') ?? '',
    'involvedObject.fieldPath': strAt(involved, 'fieldPath') ?? '',
    reason: strAt(obj, 'reason') ?? '',
    reportingComponent: controller,
    source: component === '' ? controller : component,
    type: strAt(obj, 'type') ?? '',
    'metadata.name': strAt(meta, 'name') ?? '',
    'metadata.namespace': strAt(meta, 'namespace') ?? '',
  };
}

/** `translateTimestampSince` of the printers: `<unknown>` for an unset time. */
function since(time: JsonValue | undefined, nowMs: number): string {
  if (typeof time !== 'string') return '<unknown>';
  return humanDuration(nowMs - Date.parse(time));
}

function firstNonEmpty(first: string | undefined, second: string | undefined): string {
  return first !== undefined && first !== '' ? first : (second ?? '');
}

/** `printEvent` of pkg/printers/internalversion (the server prints wide). */
function eventCells(obj: JsonObject, nowMs: number): JsonValue[] {
  const first =
    typeof obj.firstTimestamp === 'string'
      ? since(obj.firstTimestamp, nowMs)
      : since(obj.eventTime, nowMs);
  let last = typeof obj.lastTimestamp === 'string' ? since(obj.lastTimestamp, nowMs) : first;
  let count = typeof obj.count === 'number' ? obj.count : 0;
  const series = objAt(obj, 'series');
  if (series !== undefined) {
    last = since(series.lastObservedTime, nowMs);
    count = typeof series.count === 'number' ? series.count : 0;
  } else if (count === 0) {
    // Singleton events have no count in the new API.
    count = 1;
  }
  const involved = objAt(obj, 'involvedObject');
  const kind = (strAt(involved, 'kind') ?? '').toLowerCase();
  const name = strAt(involved, 'name') ?? '';
  const source = objAt(obj, 'source');
  const component = firstNonEmpty(strAt(source, 'component'), strAt(obj, 'reportingComponent'));
  const instance = firstNonEmpty(strAt(source, 'host'), strAt(obj, 'reportingInstance'));
  return [
    last,
    strAt(obj, 'type') ?? '',
    strAt(obj, 'reason') ?? '',
    name === '' ? kind : `${kind}/${name}`,
    strAt(involved, 'fieldPath') ?? '',
    instance === '' ? component : `${component}, ${instance}`,
    (strAt(obj, 'message') ?? '').trim(),
    first,
    count,
    strAt(objAt(obj, 'metadata'), 'name') ?? '',
  ];
}

const EVENT_COLUMNS = [
  column('Last Seen', 'The time at which the most recent occurrence of this event was recorded.'),
  column('Type', 'Type of this event (Normal, Warning), new types could be added in the future'),
  column(
    'Reason',
    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
  ),
  column('Object', 'The object that this event is about.'),
  column(
    'Subobject',
    'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
    1,
  ),
  column(
    'Source',
    'The component reporting this event. Should be a short machine understandable string.',
    1,
  ),
  column('Message', 'A human-readable description of the status of this operation.'),
  column(
    'First Seen',
    'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)',
    1,
  ),
  column('Count', 'The number of times this event has occurred.', 1),
  { ...NAME_COLUMN, priority: 1 },
];

const CORE_FIELD_LABELS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'source',
  'type',
  'metadata.namespace',
  'metadata.name',
];

/** core/v1 Events, the stored shape. */
export const coreEventType: ResourceType = {
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  resource: 'events',
  kind: 'Event',
  listKind: 'EventList',
  schema: eventSchema,
  namespaced: true,
  indexing: {
    kind: 'Event',
    apiVersion: 'v1',
    fieldsOf: eventFields,
    // kubectl describe finds an object's events by involvedObject.name.
    indexedFields: ['involvedObject.name'],
  },
  fieldLabels: CORE_FIELD_LABELS,
  fieldLabelError: (label) => `field label not supported: ${label}`,
  allowCreateOnUpdate: true,
  expires: true,
  garbageCollectionUnsupported: true,
  hasGeneration: false,
  returnDeletedObject: false,
  resetFields: [],
  applyDefaults() {
    // core/v1 Events have no defaulting.
  },
  prepareForCreate() {
    // The event strategy's PrepareForCreate does nothing.
  },
  prepareForUpdate() {
    // Nor does its PrepareForUpdate.
  },
  admitCreate() {
    // No mutating admission plugin of a default kube-apiserver changes Events.
  },
  validate: (obj) => validateEventCreate(obj, 'core/v1'),
  validateUpdate: (obj, old) => validateEventUpdate(obj, old, 'core/v1'),
  columns: EVENT_COLUMNS,
  cells: eventCells,
};

/** Renames fields of `obj` by `names` (from → to), keeping the others. */
function renamed(obj: JsonObject, names: Readonly<Record<string, string>>): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(obj)) out[names[key] ?? key] = value;
  return out;
}

/** events.k8s.io/v1 name → core/v1 name (`Convert_v1_Event_To_core_Event`). */
const V1_TO_CORE: Readonly<Record<string, string>> = {
  regarding: 'involvedObject',
  note: 'message',
  reportingController: 'reportingComponent',
  deprecatedSource: 'source',
  deprecatedFirstTimestamp: 'firstTimestamp',
  deprecatedLastTimestamp: 'lastTimestamp',
  deprecatedCount: 'count',
};

const CORE_TO_V1: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(V1_TO_CORE).map(([v1, core]) => [core, v1]),
);

const EVENTS_V1: VersionConversion = {
  schema: eventsV1EventSchema,
  toHub: (obj) => normalize(eventSchema, renamed(obj, V1_TO_CORE)),
  fromHub: (obj) => normalize(eventsV1EventSchema, renamed(obj, CORE_TO_V1)),
};

/** `AddFieldLabelConversionsForEvent` of pkg/apis/events/v1. */
const EVENTS_V1_FIELD_LABELS: Readonly<Record<string, string>> = {
  reason: 'reason',
  'regarding.kind': 'involvedObject.kind',
  'regarding.namespace': 'involvedObject.namespace',
  'regarding.name': 'involvedObject.name',
  'regarding.uid': 'involvedObject.uid',
  'regarding.apiVersion': 'involvedObject.apiVersion',
  'regarding.resourceVersion': 'involvedObject.resourceVersion',
  'regarding.fieldPath': 'involvedObject.fieldPath',
  reportingController: 'reportingComponent',
  source: 'source',
  type: 'type',
  'metadata.namespace': 'metadata.namespace',
  'metadata.name': 'metadata.name',
};

/** events.k8s.io/v1 Events: the same objects, converted; strict validation on writes. */
export const eventsV1EventType: ResourceType = {
  ...coreEventType,
  group: 'events.k8s.io',
  version: 'v1',
  apiVersion: 'events.k8s.io/v1',
  conversion: EVENTS_V1,
  internalGroup: '',
  fieldLabels: Object.keys(EVENTS_V1_FIELD_LABELS),
  fieldLabelAliases: EVENTS_V1_FIELD_LABELS,
  validate: (obj) => validateEventCreate(obj, 'events.k8s.io/v1'),
  validateUpdate: (obj, old) => validateEventUpdate(obj, old, 'events.k8s.io/v1'),
};
