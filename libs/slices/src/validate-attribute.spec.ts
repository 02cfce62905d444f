import type { Device, DeviceAttribute, Pool } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import { DRIVER } from './testing/fixtures';
import { validateDriverResources } from './validate-driver-resources';

function withAttributes(attributes: Record<string, DeviceAttribute>): Pool[] {
  const device: Device = { name: 'gpu-0', attributes };
  return [{ name: 'node-1', scope: { kind: 'node' }, devices: [device] }];
}

/** `count` scalar attributes `a0`… plus the given ones. */
function scalars(
  count: number,
  more: Record<string, DeviceAttribute> = {},
): Record<string, DeviceAttribute> {
  return {
    ...Object.fromEntries(Array.from({ length: count }, (_, i) => [`a${i}`, { int: i }])),
    ...more,
  };
}

const ATTRIBUTES = 'pools[0].devices[0].attributes';
const SEMVER_MESSAGE = 'must be a string compatible with semver.org spec 2.0.0';

interface AttributeCase {
  name: string;
  attributes: Record<string, DeviceAttribute>;
  errors: string[];
}

const cases: AttributeCase[] = [
  {
    name: 'validateDeviceAttribute: every list form',
    attributes: {
      pcieRoots: { strings: ['pci0000:00', 'pci0000:80'] },
      numaNodes: { ints: [0, 1] },
      links: { bools: [true, false] },
      firmware: { versions: ['1.2.3', '2.0.0-rc.1'] },
    },
    errors: [],
  },
  {
    name: 'validateDeviceAttribute: exactly one value, a scalar and a list',
    attributes: { mixed: { int: 1, ints: [1] } },
    errors: [
      `${ATTRIBUTES}[mixed]: Invalid value: {"int":1,"ints":[1]}: exactly one value must be specified`,
    ],
  },
  {
    name: 'validateDeviceAttribute: exactly one value, two lists',
    attributes: { mixed: { strings: ['a'], versions: ['1.0.0'] } },
    errors: [
      `${ATTRIBUTES}[mixed]: Invalid value: {"strings":["a"],"versions":["1.0.0"]}: exactly one value must be specified`,
    ],
  },
  {
    name: 'validateDeviceAttribute: ints must not be empty if specified',
    attributes: { numaNodes: { ints: [] } },
    errors: [`${ATTRIBUTES}[numaNodes].ints: Invalid value: []: must not be empty if specified`],
  },
  {
    name: 'validateDeviceAttribute: bools must not be empty if specified',
    attributes: { links: { bools: [] } },
    errors: [`${ATTRIBUTES}[links].bools: Invalid value: []: must not be empty if specified`],
  },
  {
    name: 'validateDeviceAttribute: strings must not be empty if specified',
    attributes: { roots: { strings: [] } },
    errors: [`${ATTRIBUTES}[roots].strings: Invalid value: []: must not be empty if specified`],
  },
  {
    name: 'validateDeviceAttribute: versions must not be empty if specified',
    attributes: { firmware: { versions: [] } },
    errors: [`${ATTRIBUTES}[firmware].versions: Invalid value: []: must not be empty if specified`],
  },
  {
    name: 'validateDeviceAttributeStringValue: a list item over 64 bytes',
    attributes: { roots: { strings: ['ok', 'x'.repeat(65)] } },
    errors: [`${ATTRIBUTES}[roots].strings[1]: Too long: may not be more than 64 bytes`],
  },
  {
    name: 'validateDeviceAttributeStringValue: 64 bytes counted in UTF-8',
    attributes: { roots: { strings: ['é'.repeat(32), 'é'.repeat(33)] } },
    errors: [`${ATTRIBUTES}[roots].strings[1]: Too long: may not be more than 64 bytes`],
  },
  {
    name: 'validateDeviceAttributeVersionValue: a list item that is no semver',
    attributes: { firmware: { versions: ['1.2.3', 'v1.2'] } },
    errors: [`${ATTRIBUTES}[firmware].versions[1]: Invalid value: "v1.2": ${SEMVER_MESSAGE}`],
  },
  {
    name: 'ResourceSliceMaxAttributeValuesPerDevice: 48 values',
    attributes: scalars(8, { roots: { strings: Array.from({ length: 40 }, (_, i) => `r${i}`) } }),
    errors: [],
  },
  {
    name: 'ResourceSliceMaxAttributeValuesPerDevice: 49 values',
    attributes: scalars(9, { roots: { strings: Array.from({ length: 40 }, (_, i) => `r${i}`) } }),
    errors: [
      'pools[0].devices[0]: Invalid value: 49: the total number of attribute values must not exceed 48',
    ],
  },
  {
    name: 'numEntriesDeviceAttribute: every list of an attribute counts',
    attributes: {
      mixed: {
        ints: Array.from({ length: 25 }, (_, i) => i),
        bools: Array.from({ length: 24 }, () => true),
      },
    },
    errors: [
      `${ATTRIBUTES}[mixed]: Invalid value: ${JSON.stringify({
        ints: Array.from({ length: 25 }, (_, i) => i),
        bools: Array.from({ length: 24 }, () => true),
      })}: exactly one value must be specified`,
      'pools[0].devices[0]: Invalid value: 49: the total number of attribute values must not exceed 48',
    ],
  },
];

describe('validateAttribute', () => {
  it.each(cases)('$name', ({ attributes, errors }) => {
    expect(
      validateDriverResources(DRIVER, withAttributes(attributes)).map(formatFieldError),
    ).toEqual(errors);
  });
});
