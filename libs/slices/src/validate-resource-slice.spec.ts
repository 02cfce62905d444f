import { planSync } from './plan-sync';
import type { ResourceSlice } from './resource-slice';
import { formatFieldError } from './field-error';
import { gpu, gpus, planInput } from './testing/fixtures';
import { validateResourceSlice } from './validate-resource-slice';

const created = planSync(planInput()).creates[0];
if (created === undefined) throw new Error('fixture plan creates nothing');

function slice(change: (copy: ResourceSlice) => void): ResourceSlice {
  const copy = structuredClone(created as ResourceSlice);
  change(copy);
  return copy;
}

const cases: [name: string, slice: ResourceSlice, errors: string[]][] = [
  ['planned-slice-is-valid', slice(() => undefined), []],
  [
    'devices-and-counters',
    slice((s) => (s.spec.sharedCounters = [{ name: 'c', counters: { m: { value: '1' } } }])),
    ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'],
  ],
  [
    'no-node-selection',
    slice((s) => delete s.spec.nodeName),
    [
      'spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    ],
  ],
  [
    'two-node-selections',
    slice((s) => (s.spec.allNodes = true)),
    [
      'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set',
    ],
  ],
  [
    'all-nodes-false',
    slice((s) => {
      delete s.spec.nodeName;
      s.spec.allNodes = false;
    }),
    [
      'spec.allNodes: Invalid value: false: must be either unset or set to true',
      'spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    ],
  ],
  [
    'zero-slice-count',
    slice((s) => (s.spec.pool.resourceSliceCount = 0)),
    ['spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero'],
  ],
  [
    'duplicate-device-in-slice',
    slice((s) => (s.spec.devices = [gpu(0), gpu(0)])),
    ['spec.devices[1]: Duplicate value: "gpu-0"'],
  ],
  [
    'too-many-devices',
    slice((s) => (s.spec.devices = gpus(129))),
    ['spec.devices: Too many: 129: must have at most 128 items'],
  ],
  [
    'validateResourceSliceSpec: haveListAttributes caps the slice at 64',
    slice(
      (s) =>
        (s.spec.devices = gpus(65).map((device) => ({
          ...device,
          attributes: { pcieRoots: { strings: ['pci0000:00'] } },
        }))),
    ),
    ['spec.devices: Too many: 65: must have at most 64 items'],
  ],
  [
    'validateResourceSliceSpec: perDeviceNodeSelection with a node choice on every device',
    slice((s) => {
      delete s.spec.nodeName;
      s.metadata.ownerReferences = [];
      s.spec.perDeviceNodeSelection = true;
      s.spec.devices = [gpu(0, { nodeName: 'node-1' }), gpu(1, { allNodes: true })];
    }),
    [],
  ],
  [
    'validateDevice: perDeviceNodeSelection needs a node choice on each device',
    slice((s) => {
      delete s.spec.nodeName;
      s.spec.perDeviceNodeSelection = true;
      s.spec.devices = [gpu(0)];
    }),
    [
      'spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec',
    ],
  ],
  [
    'validateDevice: a device node choice without perDeviceNodeSelection',
    slice((s) => (s.spec.devices = [gpu(0, { nodeName: 'node-1' })])),
    [
      'spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec',
    ],
  ],
  [
    'validateSingleAllocatableDeviceCapacity: requestPolicy without allowMultipleAllocations',
    slice(
      (s) =>
        (s.spec.devices = [
          gpu(0, { capacity: { memory: { value: '80Gi', requestPolicy: { default: '1Gi' } } } }),
        ]),
    ),
    [
      'spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true',
    ],
  ],
  [
    'validateDevice: an invalid attribute name is reported on every device that has it',
    slice(
      (s) =>
        (s.spec.devices = [
          gpu(0, { attributes: { 'a/b/c': { int: 0 } } }),
          gpu(1, { attributes: { 'a/b/c': { int: 1 } } }),
        ]),
    ),
    [
      'spec.devices[0].attributes: Invalid value: "a/b/c": must not contain more than one slash',
      'spec.devices[1].attributes: Invalid value: "a/b/c": must not contain more than one slash',
    ],
  ],
  [
    'no-name',
    slice((s) => delete s.metadata.generateName),
    ['metadata.name: Required value: name or generateName is required'],
  ],
  [
    'two-controllers',
    slice((s) => {
      const owner = s.metadata.ownerReferences?.[0];
      if (owner !== undefined) s.metadata.ownerReferences = [owner, { ...owner, name: 'other' }];
    }),
    [
      'metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","kind":"Node","name":"node-1","uid":"0b3c9a52-6d1e-4f7a-9c2b-8e5d4a1f3c70","controller":true},{"apiVersion":"v1","kind":"Node","name":"other","uid":"0b3c9a52-6d1e-4f7a-9c2b-8e5d4a1f3c70","controller":true}]: Only one reference can have Controller set to true',
    ],
  ],
];

describe('validateResourceSlice', () => {
  it.each(cases)('%s', (_, input, errors) => {
    expect(validateResourceSlice(input).map(formatFieldError)).toEqual(errors);
  });
});
