import fc from 'fast-check';
import type { CounterSet, Device, Pool, PoolScope } from '@slicekeeper/contracts';
import { layoutPool } from './layout-pool';
import { isEmptyPlan, planSync } from './plan-sync';
import type { PlanSyncInput } from './plan-sync';
import type { StoredResourceSlice } from './resource-slice';
import { isManagedSlice } from './resource-slice';
import { publishedDevices } from './published-device';
import { devicesEqual } from './semantic-equality';
import { decodeSliceIndex, sliceIndexLength } from './slice-name';
import { FakeResourceSliceApi } from './testing/fake-resource-slice-api';
import { DRIVER, NODE, NODE_UID } from './testing/fixtures';
import { validateResourceSlice } from './validate-resource-slice';

/**
 * Invariants of the planner for random inventories against random stored states: whatever was
 * published before and however it was damaged since, one applied plan leaves exactly the
 * desired pools published, valid, at one generation each, and the next plan is empty.
 */

const SHARED_COUNTER_SET: CounterSet = { name: 'shared', counters: { memory: { value: '1Ti' } } };

const deviceFeaturesArb = fc.record({
  model: fc.constantFrom('a100', 'h100', 'b200'),
  /** Several spellings of equal quantities, so that stored and desired differ in form only. */
  memory: fc.constantFrom('40Gi', '80Gi', '81920Mi', '85899345920', '80G'),
  tainted: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  consumesCounters: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  /** Consumable capacity: several claims share the device (DRAConsumableCapacity). */
  shared: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
  /** Binding conditions (DRADeviceBindingConditions). */
  binding: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  /** A list-type attribute (DRAListTypeAttributes, 1.36). */
  listAttribute: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  /** A field of a newer release, passed through. */
  passThrough: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
});
type DeviceFeatures = typeof deviceFeaturesArb extends fc.Arbitrary<infer T> ? T : never;

const devicesArb = fc
  .integer({ min: 0, max: 300 })
  .chain((count) => fc.array(deviceFeaturesArb, { minLength: count, maxLength: count }));

interface PoolShape {
  name: string;
  devices: DeviceFeatures[];
  counters: boolean;
  /** Explicit slices of this many devices, or automatic layout. */
  explicitSliceSize: number | undefined;
  generation: number | undefined;
  /** A slice field of a newer release, passed through on every slice of the pool. */
  passThrough: boolean;
}

const poolShapeArb: fc.Arbitrary<PoolShape> = fc.record({
  name: fc.constantFrom('pool-a', 'pool-b', 'rack.example.com/pool-c'),
  devices: devicesArb,
  counters: fc.boolean(),
  explicitSliceSize: fc.option(fc.integer({ min: 1, max: 64 }), { nil: undefined }),
  generation: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
  passThrough: fc.boolean(),
});

const poolShapesArb = fc.uniqueArray(poolShapeArb, {
  selector: (shape) => shape.name,
  maxLength: 3,
});

function device(
  features: DeviceFeatures,
  index: number,
  counters: boolean,
  scope: PoolScope,
): Device {
  const result: Device = {
    name: `dev-${index}`,
    attributes: { model: { string: features.model }, index: { int: index } },
    capacity: { memory: { value: features.memory } },
  };
  if (features.tainted) result.taints = [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }];
  if (counters && features.consumesCounters) {
    result.consumesCounters = [{ counterSet: 'shared', counters: { memory: { value: '1Gi' } } }];
  }
  if (features.shared) {
    result.allowMultipleAllocations = true;
    result.capacity = {
      memory: {
        value: features.memory,
        // Spelled unlike the server's canonical form, so that a resync compares by value.
        requestPolicy: { default: '1024Mi', validRange: { min: '1Gi', step: '1073741824' } },
      },
    };
  }
  if (features.binding) {
    result.bindsToNode = true;
    result.bindingConditions = ['example.com/attached'];
    result.bindingFailureConditions = ['example.com/attach-failed'];
  }
  if (features.listAttribute) {
    result.attributes = { ...result.attributes, numaNodes: { ints: [0, index % 4] } };
  }
  if (features.passThrough) {
    result.passThrough = { nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } } };
  }
  if (scope.kind === 'per-device') {
    switch (index % 3) {
      case 0:
        result.nodeName = `node-${index % 5}`;
        break;
      case 1:
        result.allNodes = true;
        break;
      default:
        result.nodeSelector = {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'example.com/rack', operator: 'In', values: ['7'] }] },
          ],
        };
    }
  }
  return result;
}

function buildPool(shape: PoolShape, scope: PoolScope): Pool {
  const devices = shape.devices.map((features, i) => device(features, i, shape.counters, scope));
  const pool: Pool = { name: shape.name, scope, devices };
  if (shape.generation !== undefined) pool.generation = shape.generation;
  if (shape.passThrough) pool.passThrough = { partitionTypeAttribute: 'example.com/profile' };
  if (shape.explicitSliceSize === undefined) {
    if (shape.counters) pool.sharedCounters = [SHARED_COUNTER_SET];
    return pool;
  }
  const slices: NonNullable<Pool['slices']> = [];
  for (let start = 0; start < devices.length; start += shape.explicitSliceSize) {
    slices.push({ devices: devices.slice(start, start + shape.explicitSliceSize) });
  }
  if (shape.counters) slices.push({ devices: [], sharedCounters: [SHARED_COUNTER_SET] });
  return { ...pool, devices: [], slices };
}

interface Key {
  node: string;
  scopes: PoolScope[];
}

const keyArb: fc.Arbitrary<Key> = fc.constantFrom<Key>(
  { node: NODE, scopes: [{ kind: 'node' }] },
  {
    node: '',
    scopes: [
      { kind: 'all-nodes' },
      { kind: 'per-device' },
      {
        kind: 'node-selector',
        nodeSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'example.com/fabric', operator: 'In', values: ['a'] }] },
          ],
        },
      },
    ],
  },
);

/** Ways a stored slice can differ from what the planner last wrote. */
const damageArb = fc.constantFrom(
  'none',
  'none',
  'none',
  'drop',
  'older-generation',
  'newer-generation',
  'random-name',
  'duplicate',
  'unlabelled',
  'changed-device',
  'no-owner',
  'earlier-node',
);
type Damage = typeof damageArb extends fc.Arbitrary<infer T> ? T : never;

function damaged(slice: StoredResourceSlice, damage: Damage, n: number): StoredResourceSlice[] {
  const copy = structuredClone(slice);
  switch (damage) {
    case 'none':
      return [copy];
    case 'drop':
      return [];
    case 'older-generation':
      copy.spec.pool.generation = Math.max(0, copy.spec.pool.generation - 1);
      return [copy];
    case 'newer-generation':
      copy.spec.pool.generation += 1;
      return [copy];
    case 'random-name':
      copy.metadata.name = `random-${n}-${copy.metadata.name}`;
      return [copy];
    case 'duplicate': {
      const twin = structuredClone(slice);
      twin.metadata.name = `${slice.metadata.name}-twin${n}`;
      twin.metadata.uid = `${slice.metadata.uid}-twin`;
      return [copy, twin];
    }
    case 'unlabelled':
      copy.metadata.labels = {};
      return [copy];
    case 'changed-device': {
      const first = copy.spec.devices?.[0];
      if (first !== undefined) first.attributes = { model: { string: 'changed' } };
      return [copy];
    }
    case 'no-owner':
      delete copy.metadata.ownerReferences;
      return [copy];
    case 'earlier-node':
      for (const owner of copy.metadata.ownerReferences ?? []) owner.uid = 'earlier-node-uid';
      return [copy];
  }
}

interface Scenario {
  input: PlanSyncInput;
  /** Slices of other drivers and nodes, and unmanaged ones, that must come through untouched. */
  bystanders: StoredResourceSlice[];
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    key: keyArb,
    desired: poolShapesArb,
    previous: poolShapesArb,
    scopeChoice: fc.nat(),
    damages: fc.array(damageArb, { maxLength: 12 }),
    withBystanders: fc.boolean(),
  })
  .map(({ key, desired, previous, scopeChoice, damages, withBystanders }) => {
    const scope = key.scopes[scopeChoice % key.scopes.length] ?? { kind: 'node' };
    const base = { node: key.node, nodeUid: key.node === '' ? '' : NODE_UID, driver: DRIVER };
    const api = new FakeResourceSliceApi();
    api.apply(
      planSync({ ...base, pools: previous.map((shape) => buildPool(shape, scope)), existing: [] }),
    );
    const existing = api
      .list()
      .flatMap((slice, i) => damaged(slice, damages[i % Math.max(damages.length, 1)] ?? 'none', i));

    const bystanders: StoredResourceSlice[] = [];
    if (withBystanders) {
      const other = new FakeResourceSliceApi();
      const nodeScope: PoolScope = { kind: 'node' };
      other.apply(
        planSync({
          ...base,
          node: 'node-2',
          nodeUid: NODE_UID,
          pools: [buildPool({ ...emptyShape, name: 'pool-a' }, nodeScope)],
          existing: [],
        }),
      );
      other.apply(
        planSync({
          ...base,
          driver: 'nic.example.com',
          pools: [buildPool({ ...emptyShape, name: 'pool-a' }, scope)],
          existing: [],
        }),
      );
      bystanders.push(
        ...other.list().map((slice) => ({
          ...slice,
          metadata: { ...slice.metadata, name: `other-${slice.metadata.name}` },
        })),
      );
    }
    bystanders.push(...existing.filter((slice) => !isManagedSlice(slice)));
    return {
      input: {
        ...base,
        pools: desired.map((shape) => buildPool(shape, scope)),
        existing: [...existing, ...bystanders.filter((slice) => isManagedSlice(slice))],
      },
      bystanders,
    };
  });

const emptyShape: PoolShape = {
  name: '',
  devices: [],
  counters: false,
  explicitSliceSize: undefined,
  generation: undefined,
  passThrough: false,
};

describe('planSync properties', () => {
  it('converges in one plan: valid slices, exactly the desired devices, one generation per pool', () => {
    fc.assert(
      fc.property(scenarioArb, ({ input, bystanders }) => {
        const api = new FakeResourceSliceApi({ initial: input.existing });
        const plan = planSync(input);
        api.apply(plan); // rejects invalid objects, failed preconditions and immutable changes
        const after = api.list();

        const ours = after.filter(
          (slice) =>
            isManagedSlice(slice) &&
            slice.spec.driver === input.driver &&
            (slice.spec.nodeName ?? '') === input.node,
        );
        // (a) every slice of the key passes the API server's validation
        for (const slice of ours) expect(validateResourceSlice(slice)).toEqual([]);

        // (b) each desired pool publishes exactly its devices, at one generation, completely
        for (const pool of input.pools) {
          const summary = plan.pools.find((entry) => entry.name === pool.name);
          const slices = ours.filter((slice) => slice.spec.pool.name === pool.name);
          const layout = layoutPool(pool);
          expect(summary?.resourceSliceCount).toBe(layout.length);
          expect(slices).toHaveLength(layout.length);
          // Generations are per pool of the key: another driver's or Node's pool of the same
          // name (a bystander) has its own.
          const previousGeneration = Math.max(
            0,
            ...input.existing
              .filter(
                (slice) =>
                  isManagedSlice(slice) &&
                  slice.spec.driver === input.driver &&
                  (slice.spec.nodeName ?? '') === input.node &&
                  slice.spec.pool.name === pool.name,
              )
              .map((slice) => slice.spec.pool.generation),
          );
          for (const slice of slices) {
            expect(slice.spec.pool).toEqual({
              name: pool.name,
              generation: summary?.generation,
              resourceSliceCount: layout.length,
            });
            expect(slice.spec.pool.generation).toBeGreaterThanOrEqual(previousGeneration);
            if (pool.scope.kind === 'node') {
              expect(slice.metadata.ownerReferences).toContainEqual({
                apiVersion: 'v1',
                kind: 'Node',
                name: input.node,
                uid: input.nodeUid,
                controller: true,
              });
            }
          }
          const indexLength = sliceIndexLength(layout.length);
          const byIndex = [...slices].sort(
            (a, b) =>
              (decodeSliceIndex(a.metadata.name, indexLength) ?? -1) -
              (decodeSliceIndex(b.metadata.name, indexLength) ?? -1),
          );
          const published = byIndex.flatMap((slice) => slice.spec.devices ?? []);
          const desired = publishedDevices(layout.flatMap((content) => content.devices));
          expect(devicesEqual(published, desired)).toBe(true);
          for (const slice of slices) {
            // Every typed field and pass-through member as sent; domain-only fields never.
            expect(slice.spec.perDeviceNodeSelection === true).toBe(
              pool.scope.kind === 'per-device',
            );
            if (pool.scope.kind !== 'node') expect(slice.metadata.ownerReferences).toBeUndefined();
            const extra = (slice.spec as unknown as Record<string, unknown>).partitionTypeAttribute;
            expect(extra).toBe(pool.passThrough === undefined ? undefined : 'example.com/profile');
            for (const published of slice.spec.devices ?? []) {
              expect(published).not.toHaveProperty('passThrough');
              expect(published).not.toHaveProperty('health');
            }
          }
          expect(byIndex.flatMap((slice) => slice.spec.sharedCounters ?? [])).toEqual(
            layout.flatMap((content) => content.sharedCounters ?? []),
          );
        }
        const desiredNames = new Set(input.pools.map((pool) => pool.name));
        for (const slice of ours) expect(desiredNames.has(slice.spec.pool.name)).toBe(true);

        // Slices of other keys and unmanaged ones are never touched.
        for (const bystander of bystanders) {
          expect(after).toContainEqual(bystander);
        }

        // (c) the next sync has nothing to do
        expect(isEmptyPlan(planSync({ ...input, existing: after }))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('never changes its input', () => {
    fc.assert(
      fc.property(scenarioArb, ({ input }) => {
        const before = structuredClone(input);
        planSync(deepFreeze(input));
        expect(input).toEqual(before);
      }),
      { numRuns: 50 },
    );
  });
});

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
