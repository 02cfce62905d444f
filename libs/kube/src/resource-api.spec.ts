import fc from 'fast-check';
import type { Device, Pool } from '@slicekeeper/contracts';
import { planSync } from '@slicekeeper/slices';
import type { ResourceSlice } from '@slicekeeper/slices';
import { resourceApiVersions, sliceFromWire, sliceToWire, slicesCollection } from './resource-api';

const slice: ResourceSlice = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceSlice',
  metadata: { generateName: '00000-gpu.example.com-node-a-' },
  spec: {
    driver: 'gpu.example.com',
    nodeName: 'node-a',
    pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
    devices: [
      {
        name: 'gpu-0',
        attributes: { model: { string: 'H100' } },
        capacity: { memory: { value: '80Gi' } },
        taints: [{ key: 'gpu.example.com/unhealthy', effect: 'NoSchedule' }],
      },
    ],
  },
};

/** A device with every typed field a 1.36 driver may set, and a field of a newer release. */
function everyField(index: number): Device {
  return {
    name: `dev-${index}`,
    attributes: { model: { string: 'X1' }, numa: { ints: [0, 1] }, roots: { strings: ['a'] } },
    capacity: {
      bandwidth: {
        value: '100Gi',
        requestPolicy: { default: '1Gi', validRange: { min: '1Gi', max: '100Gi', step: '1Gi' } },
      },
      queues: { value: '16', requestPolicy: { default: '4', validValues: ['4', '8'] } },
    },
    taints: [{ key: 'fabric.example.com/maintenance', effect: 'NoSchedule' }],
    nodeSelector: {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: 'example.com/rack', operator: 'In', values: ['7'] }] },
      ],
    },
    allowMultipleAllocations: true,
    bindsToNode: true,
    bindingConditions: ['fabric.example.com/attached'],
    bindingFailureConditions: ['fabric.example.com/attach-failed'],
    passThrough: { nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } } },
  };
}

/** A cluster-level pool whose devices choose their own nodes, with a slice pass-through field. */
function fabricPool(devices: Device[]): Pool {
  return {
    name: 'fabric',
    scope: { kind: 'per-device' },
    devices,
    passThrough: { partitionTypeAttribute: 'fabric.example.com/profile' },
  };
}

describe('resource.k8s.io wire versions', () => {
  it('v1beta1 keeps every field of a device but its name under basic, and back', () => {
    const wire = sliceToWire(slice, 'v1beta1') as {
      apiVersion: string;
      spec: { devices: unknown[] };
    };
    expect(wire.apiVersion).toBe('resource.k8s.io/v1beta1');
    expect(wire.spec.devices).toEqual([
      {
        name: 'gpu-0',
        basic: {
          attributes: { model: { string: 'H100' } },
          capacity: { memory: { value: '80Gi' } },
          taints: [{ key: 'gpu.example.com/unhealthy', effect: 'NoSchedule' }],
        },
      },
    ]);
    expect(sliceFromWire(wire, 'v1beta1')).toEqual(slice);
  });

  it("v1beta2 has v1's shape: only the apiVersion differs", () => {
    const wire = sliceToWire(slice, 'v1beta2');
    expect(wire).toEqual({ ...slice, apiVersion: 'resource.k8s.io/v1beta2' });
    expect(sliceFromWire(wire, 'v1beta2')).toEqual(slice);
  });

  it('a slice of counters only, or a list item without apiVersion, converts too', () => {
    const counters: ResourceSlice = {
      ...slice,
      spec: { ...slice.spec, devices: undefined, sharedCounters: [{ name: 's', counters: {} }] },
    };
    expect(sliceFromWire(sliceToWire(counters, 'v1beta1'), 'v1beta1')).toEqual(counters);
    const item = { ...(sliceToWire(slice, 'v1beta1') as Record<string, unknown>) };
    delete item.apiVersion;
    expect(sliceFromWire(item, 'v1beta1')).toEqual(slice);
  });

  it('v1beta1 nests every field of 1.34–1.36 and pass-through members under basic', () => {
    const published = planSync({
      node: '',
      nodeUid: '',
      driver: 'fabric.example.com',
      pools: [fabricPool([everyField(0)])],
      existing: [],
    }).creates[0];
    if (published === undefined) throw new Error('the fixture pool published no slice');
    const wire = sliceToWire(published, 'v1beta1') as {
      spec: { devices: unknown[]; perDeviceNodeSelection: boolean; partitionTypeAttribute: string };
    };
    expect(wire.spec.perDeviceNodeSelection).toBe(true);
    expect(wire.spec.partitionTypeAttribute).toBe('fabric.example.com/profile');
    const { name, passThrough, ...basic } = everyField(0);
    expect(wire.spec.devices).toEqual([{ name, basic: { ...basic, ...passThrough } }]);
  });

  it('every version carries every device field of 1.34–1.36 and pass-through, and back', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()), {
          minLength: 0,
          maxLength: 70,
        }),
        fc.boolean(),
        (shapes, passThrough) => {
          const devices = shapes.map(([every, shared, listed], i) => {
            if (every) return everyField(i);
            const device: Device = { name: `dev-${i}`, allNodes: true };
            if (shared) Object.assign(device, { allowMultipleAllocations: true });
            if (listed) device.attributes = { numa: { ints: [i] } };
            return device;
          });
          const pool = fabricPool(devices);
          if (!passThrough) delete pool.passThrough;
          const plan = planSync({
            node: '',
            nodeUid: '',
            driver: 'fabric.example.com',
            pools: [pool],
            existing: [],
          });
          for (const created of plan.creates) {
            for (const version of resourceApiVersions) {
              // Through JSON, as on the wire.
              const wire = JSON.parse(JSON.stringify(sliceToWire(created, version))) as unknown;
              expect(sliceFromWire(wire, version)).toEqual(JSON.parse(JSON.stringify(created)));
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('names the collection of each version', () => {
    expect(slicesCollection('v1beta1')).toBe('/apis/resource.k8s.io/v1beta1/resourceslices');
  });
});
