import type { Device } from '@slicekeeper/contracts';
import {
  publishedDevice,
  publishedDevices,
  TYPED_SLICE_SPEC_FIELDS,
  untypedMembers,
} from './published-device';
import { gpu } from './testing/fixtures';

const NEWER_FIELD = { nodeAllocatableResources: { cpu: { deviceMultiplier: '8' } } };

const cases: { name: string; device: Device; published: Device }[] = [
  { name: 'typed-fields-as-given', device: gpu(0), published: gpu(0) },
  {
    name: 'never-publish-health',
    device: gpu(0, { health: { status: 'unhealthy', message: 'ECC errors' } }),
    published: gpu(0),
  },
  {
    name: 'pass-through-merged',
    device: gpu(0, { passThrough: NEWER_FIELD }),
    published: { ...gpu(0), ...NEWER_FIELD },
  },
  {
    // The validator refuses such members; the planner must not publish them all the same.
    name: 'pass-through-never-overrides',
    device: gpu(0, {
      passThrough: {
        ...NEWER_FIELD,
        name: 'gpu-9',
        capacity: {},
        allNodes: true,
        health: { status: 'healthy' },
        passThrough: { x: 1 },
      },
    }),
    published: { ...gpu(0), ...NEWER_FIELD },
  },
];

describe('publishedDevice', () => {
  it.each(cases)('$name', ({ device, published }) => {
    expect(publishedDevice(device)).toEqual(published);
    expect(Object.keys(publishedDevice(device))).not.toContain('passThrough');
  });

  it('shares structure when there is nothing to leave out', () => {
    const devices = [gpu(0), gpu(1)];
    expect(publishedDevices(devices)).toBe(devices);
    const withHealth = [gpu(0), gpu(1, { health: { status: 'healthy' } })];
    const published = publishedDevices(withHealth);
    expect(published[0]).toBe(withHealth[0]);
    expect(published[1]).toEqual(gpu(1));
  });
});

describe('untypedMembers', () => {
  it('leaves out members that name a typed ResourceSliceSpec field', () => {
    expect(
      untypedMembers(
        { partitionTypeAttribute: 'gpu.example.com/profile', driver: 'x', devices: [] },
        TYPED_SLICE_SPEC_FIELDS,
      ),
    ).toEqual({ partitionTypeAttribute: 'gpu.example.com/profile' });
  });
});
