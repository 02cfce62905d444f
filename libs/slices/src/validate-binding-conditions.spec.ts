import { qualifiedNameProblems } from '@slicekeeper/contracts';
import type { Device, Pool } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import { DRIVER } from './testing/fixtures';
import { validateDriverResources } from './validate-driver-resources';

/** A fabric-attached device, ready once the fabric manager reports it attached. */
function fabricDevice(overrides: Partial<Device>): Device {
  return {
    name: 'fabric-gpu-0',
    bindsToNode: true,
    bindingConditions: ['example.com/attached'],
    bindingFailureConditions: ['example.com/attach-failed'],
    ...overrides,
  };
}

function pools(device: Device): Pool[] {
  return [{ name: 'fabric', scope: { kind: 'all-nodes' }, devices: [device] }];
}

const DEVICE = 'pools[0].devices[0]';

interface BindingCase {
  name: string;
  device: Device;
  errors: string[];
}

const cases: BindingCase[] = [
  { name: 'validateDeviceBindingParameters: valid', device: fabricDevice({}), errors: [] },
  {
    name: 'validateDeviceBindingParameters: bindsToNode alone (not checked upstream)',
    device: { name: 'fabric-gpu-0', bindsToNode: false },
    errors: [],
  },
  {
    name: 'validateDeviceBindingParameters: BindingConditionsMaxSize',
    device: fabricDevice({ bindingConditions: ['a', 'b', 'c', 'd', 'e'] }),
    errors: [`${DEVICE}.bindingConditions: Too many: 5: must have at most 4 items`],
  },
  {
    name: 'validateDeviceBindingParameters: BindingFailureConditionsMaxSize',
    device: fabricDevice({ bindingFailureConditions: ['f1', 'f2', 'f3', 'f4', 'f5'] }),
    errors: [`${DEVICE}.bindingFailureConditions: Too many: 5: must have at most 4 items`],
  },
  {
    name: 'validateDeviceBindingParameters: ValidateLabelName of a condition',
    device: fabricDevice({ bindingConditions: ['example.com/not ready'] }),
    errors: qualifiedNameProblems('example.com/not ready').map(
      (problem) =>
        `${DEVICE}.bindingConditions[0]: Invalid value: "example.com/not ready": ${problem}`,
    ),
  },
  {
    name: 'validateDeviceBindingParameters: ValidateLabelName of an empty failure condition',
    device: fabricDevice({ bindingFailureConditions: [''] }),
    errors: qualifiedNameProblems('').map(
      (problem) => `${DEVICE}.bindingFailureConditions[0]: Invalid value: "": ${problem}`,
    ),
  },
  {
    name: 'validateDeviceBindingParameters: duplicate binding condition',
    device: fabricDevice({ bindingConditions: ['ready', 'ready'] }),
    errors: [`${DEVICE}.bindingConditions[1]: Duplicate value: "ready"`],
  },
  {
    name: 'validateDeviceBindingParameters: duplicate failure condition',
    device: fabricDevice({ bindingFailureConditions: ['failed', 'failed'] }),
    errors: [`${DEVICE}.bindingFailureConditions[1]: Duplicate value: "failed"`],
  },
  {
    name: 'validateDeviceBindingParameters: failure condition overlaps a binding condition',
    device: fabricDevice({ bindingConditions: ['ready'], bindingFailureConditions: ['ready'] }),
    errors: [
      `${DEVICE}.bindingFailureConditions[0]: Invalid value: "ready": bindingFailureConditions must not overlap with bindingConditions`,
    ],
  },
  {
    name: 'validateDeviceBindingParameters: failure conditions need binding conditions',
    device: fabricDevice({ bindingConditions: undefined }),
    errors: [
      `${DEVICE}.bindingConditions: Invalid value: null: bindingConditions are required to use bindingFailureConditions`,
    ],
  },
  {
    name: 'validateDeviceBindingParameters: binding conditions need failure conditions',
    device: fabricDevice({ bindingFailureConditions: [] }),
    errors: [
      `${DEVICE}.bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to use bindingConditions`,
    ],
  },
  {
    name: 'validateDeviceBindingParameters: duplicates are found in a list over its limit',
    device: fabricDevice({ bindingConditions: ['a', 'a', 'b', 'c', 'd'] }),
    errors: [
      `${DEVICE}.bindingConditions: Too many: 5: must have at most 4 items`,
      `${DEVICE}.bindingConditions[1]: Duplicate value: "a"`,
    ],
  },
];

describe('validateBindingConditions', () => {
  it.each(cases)('$name', ({ device, errors }) => {
    expect(validateDriverResources(DRIVER, pools(device)).map(formatFieldError)).toEqual(errors);
  });
});
