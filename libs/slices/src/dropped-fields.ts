import type { ResourceSlice, StoredResourceSlice } from './resource-slice';
import { semanticEqual } from './semantic-equality';

/**
 * Fields the API server dropped from a ResourceSlice we wrote. kube-apiserver silently clears
 * alpha fields whose feature gate is off (its ResourceSlice strategy's `dropDisabledFields`),
 * unless the object it replaces already uses them; the write succeeds and the answer simply
 * lacks them. Upstream's resourceslice controller then reports a `DroppedFieldsError` and adopts
 * what was stored, so that it does not rewrite the slice on every sync; this module is the
 * detection half of that, without I/O.
 */

/**
 * The DRA feature gates of kube-apiserver 1.34–1.36 that decide which ResourceSlice fields it
 * keeps. On 1.34 all are alpha (off by default) except `DRAResourceClaimDeviceStatus` (beta, on),
 * which binding conditions need as well as `DRADeviceBindingConditions`;
 * `DRAListTypeAttributes` and `DRANodeAllocatableResources` appeared in 1.36 (alpha).
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

export type DraFeatureGateName = (typeof DRA_FEATURE_GATES)[number];

/** One field of what we sent that the stored object lacks. */
export interface DroppedField {
  /** In the API's field-path syntax: `spec.devices[3].taints`, `spec.sharedCounters`. */
  readonly path: string;
  /** The gate that most likely guards the field; absent when no gate is known to. */
  readonly gate?: DraFeatureGateName;
}

/**
 * Which gate guards each field kube-apiserver 1.34–1.36 drops, keyed by path with `[*]` for any
 * list index or map key. Read from `pkg/registry/resource/resourceslice/strategy.go`: one
 * `dropDisabled…Fields` function per gate (`dropDisableDRAListTypeAttributesFields` clears the
 * four list values of an attribute and leaves the attribute's entry). Binding conditions need
 * `DRAResourceClaimDeviceStatus` as well, which is on by default from 1.34; the gate named is
 * the one that is off by default. A field not listed here (a pass-through member, a field of a
 * newer release) is reported without a gate.
 */
export const GATED_SLICE_FIELDS: Readonly<Record<string, DraFeatureGateName>> = {
  'spec.devices[*].taints': 'DRADeviceTaints',
  'spec.sharedCounters': 'DRAPartitionableDevices',
  'spec.perDeviceNodeSelection': 'DRAPartitionableDevices',
  'spec.devices[*].consumesCounters': 'DRAPartitionableDevices',
  'spec.devices[*].nodeName': 'DRAPartitionableDevices',
  'spec.devices[*].nodeSelector': 'DRAPartitionableDevices',
  'spec.devices[*].allNodes': 'DRAPartitionableDevices',
  'spec.devices[*].bindsToNode': 'DRADeviceBindingConditions',
  'spec.devices[*].bindingConditions': 'DRADeviceBindingConditions',
  'spec.devices[*].bindingFailureConditions': 'DRADeviceBindingConditions',
  'spec.devices[*].allowMultipleAllocations': 'DRAConsumableCapacity',
  'spec.devices[*].capacity[*].requestPolicy': 'DRAConsumableCapacity',
  'spec.devices[*].attributes[*].ints': 'DRAListTypeAttributes',
  'spec.devices[*].attributes[*].bools': 'DRAListTypeAttributes',
  'spec.devices[*].attributes[*].strings': 'DRAListTypeAttributes',
  'spec.devices[*].attributes[*].versions': 'DRAListTypeAttributes',
  // KEP-5517's device field (1.36 alpha), renamed in 1.37; slicekeeper has no typed field for
  // it, so it comes as a pass-through member, and is still reported with its gate.
  'spec.devices[*].nodeAllocatableResourceMappings': 'DRANodeAllocatableResources',
  'spec.devices[*].nodeAllocatableResources': 'DRANodeAllocatableResources',
};

/** Patterns of {@link GATED_SLICE_FIELDS} and every path that leads to one of them. */
const GATED_PREFIXES: ReadonlySet<string> = new Set(
  Object.keys(GATED_SLICE_FIELDS).flatMap((pattern) => {
    const prefixes: string[] = [];
    for (let end = pattern.indexOf('.'); end !== -1; end = pattern.indexOf('.', end + 1)) {
      prefixes.push(pattern.slice(0, end));
    }
    for (let end = pattern.indexOf('['); end !== -1; end = pattern.indexOf('[', end + 1)) {
      prefixes.push(pattern.slice(0, end));
    }
    return prefixes;
  }),
);

/** Struct fields whose value is a map: their entries are named `[key]` in a field path. */
const MAP_FIELDS: ReadonlySet<string> = new Set(['attributes', 'capacity', 'counters']);

/**
 * What the API server dropped from `sent` when it stored `stored` (its answer to our create or
 * update): every spec field that `sent` sets and `stored` lacks, devices matched by name, each
 * with the gate that most likely guards it. One entry per device and field; see
 * {@link summarizeDroppedFields} for text.
 *
 * Only absence counts. What the server adds or rewrites (a taint's `timeAdded`, a quantity in
 * canonical form) is not a drop, and neither is an empty value (`[]`, `{}`, `false`, `""`),
 * which the server omits when it answers: emptiness is judged as the planner's
 * {@link semanticEqual} judges it, so an empty field the server left out is no drop, as it is no
 * difference to the planner. Lists other than `spec.devices` are compared whole. A device of
 * `sent` missing from `stored` is reported as `spec.devices[i]`, without a gate.
 */
export function droppedFields(sent: ResourceSlice, stored: StoredResourceSlice): DroppedField[] {
  const found: DroppedField[] = [];
  const sentSpec = fieldsOf(sent.spec);
  const storedSpec = fieldsOf(stored.spec);
  for (const key of Object.keys(sentSpec)) {
    if (key === 'devices') compareDevices(sentSpec[key], storedSpec[key], found);
    else compareField(sentSpec[key], storedSpec[key], `spec.${key}`, key, found);
  }
  return found;
}

/**
 * One line per dropped field, devices and map keys folded into `[*]`, with the likely gate:
 * `spec.devices[*].taints (DRADeviceTaints)`. In order of first appearance, for status and log
 * text whatever the number of devices.
 */
export function summarizeDroppedFields(fields: readonly DroppedField[]): string[] {
  const lines = new Map<string, string>();
  for (const field of fields) {
    const pattern = fieldPattern(field.path);
    if (lines.has(pattern)) continue;
    lines.set(pattern, field.gate === undefined ? pattern : `${pattern} (${field.gate})`);
  }
  return [...lines.values()];
}

function compareDevices(sent: unknown, stored: unknown, found: DroppedField[]): void {
  if (!Array.isArray(sent)) {
    compareField(sent, stored, 'spec.devices', 'devices', found);
    return;
  }
  const storedByName = new Map<unknown, unknown>();
  if (Array.isArray(stored)) {
    for (const device of stored) {
      if (isObject(device)) storedByName.set(device.name, device);
    }
  }
  sent.forEach((device: unknown, index) => {
    const storedDevice = isObject(device) ? storedByName.get(device.name) : undefined;
    compareField(device, storedDevice, `spec.devices[${index}]`, undefined, found);
  });
}

/**
 * Reports `path` when `sent` is set and `stored` is not; descends into objects set in both.
 * `field` is the struct field `path` ends in, undefined for a list item or map entry.
 */
function compareField(
  sent: unknown,
  stored: unknown,
  path: string,
  field: string | undefined,
  found: DroppedField[],
): void {
  if (isEmpty(sent)) return;
  if (isEmpty(stored)) {
    const pattern = fieldPattern(path);
    const gate = GATED_SLICE_FIELDS[pattern];
    // An object left empty (an attribute whose list value was cleared) names the gated fields
    // it lost rather than itself.
    if (
      gate === undefined &&
      stored !== undefined &&
      isObject(sent) &&
      GATED_PREFIXES.has(pattern)
    ) {
      descend(sent, {}, path, field, found);
      return;
    }
    found.push(gate === undefined ? { path } : { path, gate });
    return;
  }
  if (!isObject(sent) || !isObject(stored)) return;
  descend(sent, stored, path, field, found);
}

function descend(
  sent: Readonly<Record<string, unknown>>,
  stored: Readonly<Record<string, unknown>>,
  path: string,
  field: string | undefined,
  found: DroppedField[],
): void {
  const isMap = field !== undefined && MAP_FIELDS.has(field);
  for (const key of Object.keys(sent)) {
    if (isMap) compareField(sent[key], stored[key], `${path}[${key}]`, undefined, found);
    else compareField(sent[key], stored[key], `${path}.${key}`, key, found);
  }
}

/** `spec.devices[3].capacity[memory].requestPolicy` → `spec.devices[*].capacity[*].requestPolicy`. */
function fieldPattern(path: string): string {
  return path.replace(/\[[^\]]*\]/g, '[*]');
}

/** Empty as the planner's semantic equality counts it: absent, null, false, 0, "", [] or {}. */
function isEmpty(value: unknown): boolean {
  return semanticEqual(value, undefined);
}

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON object's fields, for keys the static type does not name (fields of newer versions). */
function fieldsOf(value: object): Readonly<Record<string, unknown>> {
  return value as Readonly<Record<string, unknown>>;
}
