import { droppedFields, GATED_SLICE_FIELDS } from '@slicekeeper/slices';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import type { JsonObject, JsonValue } from './object-schema';
import { resourceSliceType } from './resource-types';
import type { DraFeatureGate, FeatureGates } from './resource-types';

/**
 * The ResourceSlice strategy's dropped fields, gate by gate, as kube-apiserver 1.34–1.37's
 * `dropDisabledFields` (pkg/registry/resource/resourceslice/strategy.go) has them: a gated field
 * is cleared on create unless its gate is on, and on update unless its gate is on or the old
 * object already uses any field of that gate.
 */

/** The fields each gate guards, in a slice built by {@link fullSlice}. */
const FIELDS_BY_GATE: Readonly<
  Record<Exclude<DraFeatureGate, 'DRAResourceClaimDeviceStatus'>, readonly string[]>
> = {
  DRADeviceTaints: ['spec.devices[0].taints'],
  DRAPartitionableDevices: [
    'spec.sharedCounters',
    'spec.perDeviceNodeSelection',
    'spec.devices[0].consumesCounters',
    'spec.devices[0].nodeName',
    'spec.devices[0].nodeSelector',
    'spec.devices[0].allNodes',
  ],
  DRADeviceBindingConditions: [
    'spec.devices[0].bindsToNode',
    'spec.devices[0].bindingConditions',
    'spec.devices[0].bindingFailureConditions',
  ],
  DRAConsumableCapacity: [
    'spec.devices[0].allowMultipleAllocations',
    'spec.devices[0].capacity[memory].requestPolicy',
  ],
  DRANodeAllocatableResources: [
    'spec.devices[0].nodeAllocatableResourceMappings',
    'spec.devices[0].nodeAllocatableResources',
  ],
  // dropDisableDRAListTypeAttributesFields clears the list values and keeps the attribute.
  DRAListTypeAttributes: [
    'spec.devices[0].attributes[cores].ints',
    'spec.devices[0].attributes[flags].bools',
    'spec.devices[0].attributes[model].strings',
    'spec.devices[0].attributes[firmware].versions',
  ],
};
const GATES = Object.keys(FIELDS_BY_GATE) as (keyof typeof FIELDS_BY_GATE)[];
const ALL_FIELDS = GATES.flatMap((gate) => FIELDS_BY_GATE[gate]);

/** A slice that uses no gated field. */
function baseSlice(): JsonObject {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: 'node-1-gpu.example.com-x7k2p', generation: 1 },
    spec: {
      driver: 'gpu.example.com',
      pool: { name: 'node-1', generation: 1, resourceSliceCount: 1 },
      nodeName: 'node-1',
      devices: [
        {
          name: 'gpu-0',
          attributes: {
            cores: { int: 8 },
            flags: { bool: true },
            model: { string: 'a100' },
            firmware: { version: '1.0.0' },
          },
          capacity: { memory: { value: '80Gi' } },
        },
        { name: 'gpu-1', capacity: { memory: { value: '80Gi' } } },
      ],
    },
  };
}

/**
 * A slice that uses every gated field (not a valid one: the strategy runs before validation and
 * does not care).
 */
function fullSlice(): JsonObject {
  const slice = baseSlice();
  const spec = slice.spec as JsonObject;
  spec.perDeviceNodeSelection = true;
  spec.sharedCounters = [{ name: 'gpu-0-memory', counters: { memory: { value: '80Gi' } } }];
  const [device] = spec.devices as JsonObject[];
  Object.assign(device ?? {}, {
    capacity: {
      memory: { value: '80Gi', requestPolicy: { default: '10Gi', validValues: ['10Gi', '20Gi'] } },
    },
    consumesCounters: [{ counterSet: 'gpu-0-memory', counters: { memory: { value: '40Gi' } } }],
    nodeName: 'node-1',
    nodeSelector: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
    },
    allNodes: true,
    taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }],
    bindsToNode: true,
    bindingConditions: ['gpu.example.com/attached'],
    bindingFailureConditions: ['gpu.example.com/attach-failed'],
    allowMultipleAllocations: true,
    // 1.36's name and 1.37's: each release's schema has one of them.
    nodeAllocatableResourceMappings: { cpu: { allocationMultiplier: '2' } },
    nodeAllocatableResources: { cpu: { mapping: { deviceMultiplier: '2' } } },
  });
  const attributes = (device ?? {}).attributes as Record<string, JsonObject>;
  Object.assign(attributes.cores ?? {}, { ints: [0, 1] });
  Object.assign(attributes.flags ?? {}, { bools: [true] });
  Object.assign(attributes.model ?? {}, { strings: ['a100', 'a100-80g'] });
  Object.assign(attributes.firmware ?? {}, { versions: ['1.0.0'] });
  return slice;
}

/** `spec.devices[0].capacity[memory]` → `['spec', 'devices', 0, 'capacity', 'memory']`. */
function steps(path: string): (string | number)[] {
  return [...path.matchAll(/[^.[\]]+/g)].map(([step]) =>
    /^\d+$/.test(step) ? Number(step) : step,
  );
}

function valueAt(obj: JsonValue | undefined, path: string): JsonValue | undefined {
  let value = obj;
  for (const step of steps(path)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, JsonValue | undefined>)[step];
  }
  return value;
}

function setAt(obj: JsonObject, path: string, value: JsonValue | undefined): void {
  const path_ = steps(path);
  const last = path_.pop();
  let parent: JsonValue | undefined = obj;
  for (const step of path_) parent = (parent as Record<string | number, JsonValue>)[step];
  (parent as Record<string | number, JsonValue | undefined>)[last as string | number] = value;
}

/** The gated fields `slice` has. */
function present(slice: JsonObject): string[] {
  return ALL_FIELDS.filter((path) => valueAt(slice, path) !== undefined);
}

/** The base slice plus one field of the full slice: an old object that uses just that field. */
function using(path: string): JsonObject {
  const slice = baseSlice();
  setAt(slice, path, structuredClone(valueAt(fullSlice(), path)));
  return slice;
}

function created(gates: FeatureGates, slice = fullSlice()): JsonObject {
  resourceSliceType.prepareForCreate(slice, gates);
  return slice;
}

function updated(old: JsonObject, gates: FeatureGates, slice = fullSlice()): JsonObject {
  resourceSliceType.prepareForUpdate(slice, old, gates);
  return slice;
}

function allBut(gate: string): string[] {
  return ALL_FIELDS.filter(
    (path) => !FIELDS_BY_GATE[gate as keyof typeof FIELDS_BY_GATE].includes(path),
  );
}

describe('ResourceSlice strategy: fields of disabled feature gates', () => {
  it('drops every gated field on create with the 1.34 defaults', () => {
    const slice = created({});
    expect(present(slice)).toEqual([]);
    expect(slice.spec).toEqual({ ...(baseSlice().spec as JsonObject) });
  });

  describe.each(GATES)('%s', (gate) => {
    const fields = FIELDS_BY_GATE[gate];
    const onlyItOff: FeatureGates = {
      ...Object.fromEntries(GATES.map((g) => [g, true])),
      [gate]: false,
    };

    it('off: drops its fields on create and leaves the rest to their gates', () => {
      expect(present(created(onlyItOff))).toEqual(allBut(gate));
    });

    it('on: keeps its fields on create', () => {
      expect(present(created({ [gate]: true }))).toEqual(fields);
    });

    it('on: keeps its fields on update', () => {
      expect(present(updated(baseSlice(), { [gate]: true }))).toEqual(fields);
    });

    it('off: drops its fields on update when the old object uses none of them', () => {
      expect(present(updated(baseSlice(), onlyItOff))).toEqual(allBut(gate));
    });

    it.each(fields)('off: keeps all its fields on update when the old object uses %s', (path) => {
      expect(present(updated(using(path), {}))).toEqual(fields);
    });
  });

  it('drops binding conditions when DRAResourceClaimDeviceStatus is off, whatever their own gate', () => {
    const gates = { DRADeviceBindingConditions: true, DRAResourceClaimDeviceStatus: false };
    expect(present(created(gates))).toEqual([]);
    expect(present(created({ DRADeviceBindingConditions: true }))).toEqual(
      FIELDS_BY_GATE.DRADeviceBindingConditions,
    );
  });

  it('counts an empty list in the old object as not in use, as Go’s len(x) > 0', () => {
    const old = baseSlice();
    setAt(old, 'spec.devices[0].taints', []);
    setAt(old, 'spec.sharedCounters', []);
    expect(present(updated(old, {}))).toEqual([]);
  });

  it('judges use by any device of the old object, and keeps the field on every device', () => {
    const old = baseSlice();
    setAt(old, 'spec.devices[1].taints', [{ key: 'k', effect: 'NoSchedule' }]);
    const slice = fullSlice();
    setAt(slice, 'spec.devices[1].taints', [{ key: 'k', effect: 'NoExecute' }]);
    const result = updated(old, {}, slice);
    expect(valueAt(result, 'spec.devices[0].taints')).toBeDefined();
    expect(valueAt(result, 'spec.devices[1].taints')).toBeDefined();
  });

  it('bumps the generation when only a dropped field was resent, as upstream compares first', () => {
    const old = created({});
    const stored = structuredClone(old);
    const result = updated(stored, {});
    expect(result.spec).toEqual(old.spec);
    expect(valueAt(result, 'metadata.generation')).toBe(2);
  });

  it('keeps the generation when the spec is unchanged', () => {
    const old = created({}, baseSlice());
    expect(valueAt(updated(old, {}, baseSlice()), 'metadata.generation')).toBe(1);
  });
});

describe('the dropped-field detector of libs/slices against this strategy', () => {
  it('names every field the strategy drops, with the gate that guards it', () => {
    const sent = fullSlice();
    const stored = created({}, structuredClone(sent));
    const reported = droppedFields(
      sent as unknown as ResourceSlice,
      stored as unknown as StoredResourceSlice,
    );
    // The fields slicekeeper has no gate for (a newer release's) are reported by path alone.
    const known = new Set<string>(Object.values(GATED_SLICE_FIELDS));
    const expected = GATES.flatMap((gate) =>
      FIELDS_BY_GATE[gate].map((path) => (known.has(gate) ? { path, gate } : { path })),
    );
    expect(reported).toEqual(expect.arrayContaining(expected));
    expect(reported).toHaveLength(expected.length);
    const patterns = reported
      .filter(({ gate }) => gate !== undefined)
      .map(({ path }) => path.replace(/\[[^\]]*\]/g, '[*]'));
    expect(new Set(patterns)).toEqual(new Set(Object.keys(GATED_SLICE_FIELDS)));
  });

  it('reports nothing when every gate is on', () => {
    const sent = fullSlice();
    const on = Object.fromEntries(GATES.map((gate) => [gate, true]));
    const stored = created(on, structuredClone(sent));
    expect(
      droppedFields(sent as unknown as ResourceSlice, stored as unknown as StoredResourceSlice),
    ).toEqual([]);
  });
});
