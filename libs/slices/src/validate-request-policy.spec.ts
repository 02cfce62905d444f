import type { CapacityRequestPolicy, Device, Pool } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import { QUANTITY_FORMAT_MESSAGE } from './quantity';
import { DRIVER } from './testing/fixtures';
import { validateDriverResources } from './validate-driver-resources';

/** A NIC whose bandwidth several claims share (consumable capacity). */
function nic(policy: CapacityRequestPolicy | undefined, overrides: Partial<Device> = {}): Device {
  return {
    name: 'nic-0',
    allowMultipleAllocations: true,
    capacity: {
      bandwidth:
        policy === undefined ? { value: '100G' } : { value: '100G', requestPolicy: policy },
    },
    ...overrides,
  };
}

function pools(device: Device): Pool[] {
  return [{ name: 'node-1', scope: { kind: 'node' }, devices: [device] }];
}

const POLICY = 'pools[0].devices[0].capacity[bandwidth].requestPolicy';

interface PolicyCase {
  name: string;
  device: Device;
  errors: string[];
}

const cases: PolicyCase[] = [
  { name: 'validateMultiAllocatableDeviceCapacity: no policy', device: nic(undefined), errors: [] },
  {
    name: 'validateRequestPolicy: default alone',
    device: nic({ default: '10G' }),
    errors: [],
  },
  {
    name: 'validateRequestPolicyValidValues: valid',
    device: nic({ default: '10G', validValues: ['1G', '10G', '100G'] }),
    errors: [],
  },
  {
    name: 'validateRequestPolicyRange: valid',
    device: nic({ default: '10G', validRange: { min: '1G', max: '100G', step: '1G' } }),
    errors: [],
  },
  {
    name: 'validateRequestPolicyRange: valid in other units',
    device: nic({ default: '2Gi', validRange: { min: '1024Mi', step: '1Gi' } }),
    errors: [],
  },
  {
    name: 'validateSingleAllocatableDeviceCapacity: requestPolicy without allowMultipleAllocations',
    device: nic({ default: '10G' }, { allowMultipleAllocations: false }),
    errors: [`${POLICY}: Forbidden: allowMultipleAllocations must be true`],
  },
  {
    name: 'validateSingleAllocatableDeviceCapacity: requestPolicy with allowMultipleAllocations unset',
    device: nic({ default: '10G' }, { allowMultipleAllocations: undefined }),
    errors: [`${POLICY}: Forbidden: allowMultipleAllocations must be true`],
  },
  {
    name: 'validateRequestPolicy: validValues and validRange',
    device: nic({ default: '10G', validValues: ['10G'], validRange: { min: '1G' } }),
    errors: [
      `${POLICY}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time`,
    ],
  },
  {
    name: 'validateValidRequestValues: validValues without default',
    device: nic({ validValues: ['10G'] }),
    errors: [`${POLICY}.default: Required value: required when validValues is defined`],
  },
  {
    name: 'validateValidRequestValues: validRange without default',
    device: nic({ validRange: { min: '1G' } }),
    errors: [`${POLICY}.default: Required value: required when validRange is defined`],
  },
  {
    name: 'validateValidRequestValues: an empty default is unset (proto3)',
    device: nic({ default: '', validRange: { min: '1G' } }),
    errors: [`${POLICY}.default: Required value: required when validRange is defined`],
  },
  {
    name: 'validateRequestPolicyValidValues: not sorted',
    device: nic({ default: '10G', validValues: ['10G', '1G'] }),
    errors: [
      `${POLICY}.validValues[1]: Invalid value: "1G": values must be sorted in ascending order`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: sorted by value, not by text',
    device: nic({ default: '1G', validValues: ['999M', '1G', '1000000001'] }),
    errors: [],
  },
  {
    name: 'validateRequestPolicyValidValues: option larger than capacity',
    device: nic({ default: '10G', validValues: ['10G', '200G'] }),
    errors: [
      `${POLICY}.validValues[1]: Invalid value: "200G": option is larger than capacity value: 100G`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: default not among them',
    device: nic({ default: '5G', validValues: ['1G', '10G'] }),
    errors: [
      `${POLICY}.validValues: Invalid value: "5G": default value is not valid according to the requestPolicy`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: default found in another unit',
    device: nic({ default: '1000M', validValues: ['1G', '10G'] }),
    errors: [],
  },
  {
    name: 'validateRequestPolicyValidValues: duplicate (validateSet)',
    device: nic({ default: '10G', validValues: ['10G', '10000M'] }),
    errors: [`${POLICY}.validValues[1]: Duplicate value: "10000000000"`],
  },
  {
    name: 'validateRequestPolicyValidValues: duplicate once rounded up (quantityKeyInt)',
    device: nic({ default: '1', validValues: ['500m', '1'] }),
    errors: [`${POLICY}.validValues[1]: Duplicate value: "1"`],
  },
  {
    name: 'validateRequestPolicyValidValues: more than CapacityRequestPolicyDiscreteMaxOptions',
    device: nic({
      default: '1G',
      validValues: Array.from({ length: 11 }, (_, i) => `${i + 1}G`),
    }),
    errors: [
      `${POLICY}.validValues: Too many: 11: must have at most 10 items`,
      // The items over the limit are not looked into, so the default is not found among them.
      `${POLICY}.validValues: Invalid value: "1G": default value is not valid according to the requestPolicy`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: an option that is no quantity',
    device: nic({ default: '1G', validValues: ['1G', 'ten'] }),
    errors: [`${POLICY}.validValues[1]: Invalid value: "ten": ${QUANTITY_FORMAT_MESSAGE}`],
  },
  {
    name: 'validateRequestPolicyRange: min required',
    device: nic({ default: '1G', validRange: { min: '' } }),
    errors: [`${POLICY}.validRange.min: Required value: required when validRange is defined`],
  },
  {
    name: 'validateRequestPolicyRange: min larger than capacity',
    device: nic({ default: '200G', validRange: { min: '150G' } }),
    errors: [
      `${POLICY}.validRange.min: Invalid value: "150G": min is larger than capacity value: 100G`,
    ],
  },
  {
    name: 'validateRequestPolicyRange: default less than min',
    device: nic({ default: '1G', validRange: { min: '2G' } }),
    errors: [`${POLICY}.validRange.default: Invalid value: "1G": default is less than min: 2G`],
  },
  {
    name: 'validateRequestPolicyRange: min larger than max',
    device: nic({ default: '5G', validRange: { min: '5G', max: '4G' } }),
    errors: [
      `${POLICY}.validRange.max: Invalid value: "5G": min is larger than max: 4G`,
      `${POLICY}.validRange.default: Invalid value: "5G": default is more than max: 4G`,
    ],
  },
  {
    name: 'validateRequestPolicyRange: max larger than capacity',
    device: nic({ default: '1G', validRange: { min: '1G', max: '101G' } }),
    errors: [
      `${POLICY}.validRange.max: Invalid value: "101G": max is larger than capacity value: 100G`,
    ],
  },
  {
    name: 'validateRequestPolicyRange: default more than max',
    device: nic({ default: '20G', validRange: { min: '1G', max: '10G' } }),
    errors: [`${POLICY}.validRange.default: Invalid value: "20G": default is more than max: 10G`],
  },
  {
    name: 'validateRequestPolicyRange: step zero',
    device: nic({ default: '1G', validRange: { min: '1G', step: '0' } }),
    errors: [`${POLICY}.validRange.step: Invalid value: "0": must be greater than zero`],
  },
  {
    name: 'validateRequestPolicyRange: step negative',
    device: nic({ default: '1G', validRange: { min: '1G', step: '-1G' } }),
    errors: [`${POLICY}.validRange.step: Invalid value: "-1G": must be greater than zero`],
  },
  {
    name: 'validateRequestPolicyRange: one step larger than capacity',
    device: nic({ default: '60G', validRange: { min: '60G', step: '50G' } }),
    errors: [
      `${POLICY}.validRange.step: Invalid value: "50G": one step 110000000000 is larger than capacity value: 100G`,
    ],
  },
  {
    name: 'validateRequestPolicyRangeStep: default not on a step',
    device: nic({ default: '3G', validRange: { min: '1G', step: '5G' } }),
    errors: [
      `${POLICY}.validRange.step: Invalid value: "3G": value is not a multiple of a given step (5G) from (1G)`,
    ],
  },
  {
    name: 'validateRequestPolicyRangeStep: max not on a step',
    device: nic({ default: '1G', validRange: { min: '1G', max: '8G', step: '2G' } }),
    errors: [
      `${POLICY}.validRange.step: Invalid value: "8G": value is not a multiple of a given step (2G) from (1G)`,
    ],
  },
  {
    name: 'validateRequestPolicyRangeStep: whole numbers rounded up, as Quantity.Value()',
    // 1.5 reads as 2 and 500m as 1: (2 - 1) % 1 is 0.
    device: nic({ default: '1.5', validRange: { min: '500m', step: '1' } }),
    errors: [],
  },
  {
    name: 'validateInt64Range: a negative min',
    device: nic({ default: '0', validRange: { min: '-1', step: '1' } }),
    errors: [`${POLICY}.validRange.min: Invalid value: "-1": must be greater than or equal to 0`],
  },
  {
    name: 'validateRequestPolicyRange: a bound that is no quantity',
    device: nic({ default: '1G', validRange: { min: '1G', max: 'lots' } }),
    errors: [`${POLICY}.validRange.max: Invalid value: "lots": ${QUANTITY_FORMAT_MESSAGE}`],
  },
  {
    name: 'validateRequestPolicy: a default that is no quantity',
    device: nic({ default: '1 G', validValues: ['1G'] }),
    errors: [`${POLICY}.default: Invalid value: "1 G": ${QUANTITY_FORMAT_MESSAGE}`],
  },
];

describe('validateCapacityRequestPolicy', () => {
  it.each(cases)('$name', ({ device, errors }) => {
    expect(validateDriverResources(DRIVER, pools(device)).map(formatFieldError)).toEqual(errors);
  });
});
