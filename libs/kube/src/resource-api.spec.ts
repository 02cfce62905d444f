import type { ResourceSlice } from '@slicekeeper/slices';
import { sliceFromWire, sliceToWire, slicesCollection } from './resource-api';

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

  it('names the collection of each version', () => {
    expect(slicesCollection('v1beta1')).toBe('/apis/resource.k8s.io/v1beta1/resourceslices');
  });
});
