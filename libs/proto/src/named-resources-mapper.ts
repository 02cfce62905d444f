import type { Device, DeviceAttribute, DriverInventory } from '@slicekeeper/contracts';
import { listProblems } from '@slicekeeper/errors';
import type * as wire from './generated/k8s.io/api/resource/v1alpha2/generated';
import type { NodeListAndWatchResourcesResponse } from './generated/k8s.io/kubelet/pkg/apis/dra/v1alpha3/api';
import { toExactNumber } from './exact-number';
import type { InventoryMapping, ToInventoryOptions } from './inventory-mapper';

/** What joins the values of an intSlice or stringSlice into one string attribute. */
export const NAMED_RESOURCES_SLICE_SEPARATOR = ',';

/** The value fields of a NamedResourcesAttributeValue, in upstream's order. */
const VALUE_FIELDS = [
  'quantity',
  'bool',
  'int',
  'intSlice',
  'string',
  'stringSlice',
  'version',
] as const satisfies readonly (keyof wire.NamedResourcesAttributeValue)[];

/**
 * Maps a kubelet 1.30 driver's `NodeListAndWatchResourcesResponse` (the named resources model
 * of resource.k8s.io/v1alpha2) to the domain inventory, and never throws; a message that
 * cannot be published is `rejected`, naming the fields (`resources[0].namedResources...`).
 *
 * The instances of every ResourceModel become the devices of one pool named after the node,
 * local to it (kubelet 1.30 published one slice per model; slicekeeper lays the pool out
 * itself). A message without models is an empty inventory: nothing published. Each instance is
 * a device of the same name; each attribute becomes, by its value:
 *
 * - `bool`, `int`, `string`, `version`: a device attribute of the same type and name;
 * - `quantity`: a capacity entry of the same name, which is what resource.k8s.io/v1 has for
 *   quantities (CEL: `device.capacity["driver"].name`, a quantity as before);
 * - `intSlice`, `stringSlice`: a string attribute holding the values joined with
 *   {@link NAMED_RESOURCES_SLICE_SEPARATOR} (`"0,1"`), as v1 attributes have no list type;
 *   a selector splits it again (`device.attributes["driver"].name.split(",")`). To keep that
 *   lossless, a stringSlice value that is empty or contains the separator is rejected.
 *
 * Rejected, as v1 has no place for them: a ResourceModel without `namedResources`, an
 * attribute value with more than one field set, two attributes of an instance with one name
 * (attribute and capacity names share one namespace), an int beyond ±(2^53−1), and a
 * plugin that is not registered for a node. As in {@link mapDriverResources}, what breaks a
 * Kubernetes rule (a bad name, a value that is not semver, a string over 64 bytes, an
 * attribute without a value) is carried over for the slice validator to report.
 */
export function mapNodeResources(
  message: NodeListAndWatchResourcesResponse,
  { nodeName }: ToInventoryOptions,
): InventoryMapping {
  const problems: string[] = [];
  if (nodeName === '') {
    problems.push(
      'resources: a kubelet 1.30 driver publishes node-local resources, so it must be registered for a node',
    );
  }
  const devices: Device[] = [];
  message.resources.forEach((model, i) => {
    const path = `resources[${i}]`;
    if (model.namedResources === undefined) {
      problems.push(
        `${path}.namedResources: must be set (the only resource model slicekeeper publishes)`,
      );
      return;
    }
    model.namedResources.instances.forEach((instance, j) => {
      const instancePath = () => `${path}.namedResources.instances[${j}]`;
      devices.push(toDevice(instance, instancePath, problems));
    });
  });
  if (problems.length > 0) return { kind: 'rejected', problem: listProblems(problems) };
  const inventory: DriverInventory = {
    pools:
      message.resources.length === 0 ? [] : [{ name: nodeName, scope: { kind: 'node' }, devices }],
  };
  return { kind: 'inventory', inventory };
}

function toDevice(
  instance: wire.NamedResourcesInstance,
  path: () => string,
  problems: string[],
): Device {
  const device: Device = { name: instance.name ?? '' };
  const attributes: Record<string, DeviceAttribute> = {};
  const capacity: Record<string, { value: string }> = {};
  const firstIndex = new Map<string, number>();
  instance.attributes.forEach((attribute, k) => {
    const attributePath = () => `${path()}.attributes[${k}]`;
    const name = attribute.name ?? '';
    const first = firstIndex.get(name);
    if (first !== undefined) {
      problems.push(`${attributePath()}.name: "${name}" is also the name of attributes[${first}]`);
      return;
    }
    firstIndex.set(name, k);
    const value = attribute.attributeValue ?? {};
    const set = VALUE_FIELDS.filter((field) => value[field] !== undefined);
    if (set.length > 1) {
      problems.push(
        `${attributePath()}.attributeValue: must set exactly one value (sets ${set.join(', ')})`,
      );
      return;
    }
    if (value.quantity !== undefined) {
      capacity[name] = { value: value.quantity.string ?? '' };
      return;
    }
    attributes[name] = toAttribute(value, () => `${attributePath()}.attributeValue`, problems);
  });
  if (Object.keys(attributes).length > 0) device.attributes = attributes;
  if (Object.keys(capacity).length > 0) device.capacity = capacity;
  return device;
}

/** The attribute of a value with at most one field set, other than a quantity. */
function toAttribute(
  value: wire.NamedResourcesAttributeValue,
  path: () => string,
  problems: string[],
): DeviceAttribute {
  if (value.bool !== undefined) return { bool: value.bool };
  if (value.int !== undefined) {
    return { int: toExactNumber(value.int, () => `${path()}.int`, problems) };
  }
  if (value.string !== undefined) return { string: value.string };
  if (value.version !== undefined) return { version: value.version };
  if (value.intSlice !== undefined) {
    return { string: value.intSlice.ints.map(String).join(NAMED_RESOURCES_SLICE_SEPARATOR) };
  }
  if (value.stringSlice !== undefined) {
    value.stringSlice.strings.forEach((s, n) => {
      if (s === '' || s.includes(NAMED_RESOURCES_SLICE_SEPARATOR)) {
        problems.push(
          `${path()}.stringSlice.strings[${n}]: must be non-empty and not contain ` +
            `"${NAMED_RESOURCES_SLICE_SEPARATOR}" (a string slice is published as one string ` +
            `attribute, its values joined with "${NAMED_RESOURCES_SLICE_SEPARATOR}")`,
        );
      }
    });
    return { string: value.stringSlice.strings.join(NAMED_RESOURCES_SLICE_SEPARATOR) };
  }
  return {};
}
