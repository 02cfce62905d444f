import type { Device } from '@slicekeeper/contracts';
import { maxDevicesPerSlice, usesAdvancedFeatures } from './device-limits';
import { gpu, gpus, taintedGpu } from './testing/fixtures';

function consuming(index: number): Device {
  return gpu(index, {
    consumesCounters: [{ counterSet: 'c', counters: { memory: { value: '1Gi' } } }],
  });
}

function withAttribute(attribute: NonNullable<Device['attributes']>[string]): Device {
  return gpu(0, { attributes: { pcieRoots: attribute } });
}

describe('usesAdvancedFeatures', () => {
  const cases: [name: string, device: Device, advanced: boolean][] = [
    ['plain', gpu(0), false],
    ['haveDeviceTaints: tainted', taintedGpu(0), true],
    ['haveDeviceTaints: empty taint list', gpu(0, { taints: [] }), false],
    ['haveConsumesCounters: consumes counters', consuming(0), true],
    ['haveConsumesCounters: empty list', gpu(0, { consumesCounters: [] }), false],
    ['haveListAttributes: strings', withAttribute({ strings: ['a', 'b'] }), true],
    ['haveListAttributes: ints', withAttribute({ ints: [1] }), true],
    ['haveListAttributes: bools', withAttribute({ bools: [true] }), true],
    ['haveListAttributes: versions', withAttribute({ versions: ['1.0.0'] }), true],
    // Upstream tests `!= nil`: an empty list (itself invalid) still lowers the cap.
    ['haveListAttributes: empty list', withAttribute({ strings: [] }), true],
    ['scalar attributes only', withAttribute({ string: 'a' }), false],
    ['binding conditions are not advanced', gpu(0, { bindingConditions: ['a'] }), false],
    ['per-device node selection is not advanced', gpu(0, { allNodes: true }), false],
    [
      'consumable capacity is not advanced',
      gpu(0, {
        allowMultipleAllocations: true,
        capacity: { memory: { value: '80Gi', requestPolicy: { default: '1Gi' } } },
      }),
      false,
    ],
    ['passThrough: unknown fields count', gpu(0, { passThrough: { futureField: 1 } }), true],
    ['passThrough: empty object', gpu(0, { passThrough: {} }), false],
  ];

  it.each(cases)('%s', (_, device, advanced) => {
    expect(usesAdvancedFeatures(device)).toBe(advanced);
  });
});

describe('maxDevicesPerSlice', () => {
  const cases: [name: string, devices: Device[], max: number][] = [
    ['ResourceSliceMaxDevices: none', [], 128],
    ['ResourceSliceMaxDevices: plain devices', gpus(3), 128],
    [
      'ResourceSliceMaxDevicesWithAdvancedFeatures: one advanced device',
      [...gpus(3), taintedGpu(3)],
      64,
    ],
  ];

  it.each(cases)('%s', (_, devices, max) => {
    expect(maxDevicesPerSlice(devices)).toBe(max);
  });
});
