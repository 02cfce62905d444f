import type { Device, Pool } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import { DRIVER } from './testing/fixtures';
import { validateDriverResources } from './validate-driver-resources';

function withDevice(passThrough: Device['passThrough']): Pool[] {
  return [{ name: 'node-1', scope: { kind: 'node' }, devices: [{ name: 'gpu-0', passThrough }] }];
}

function withPool(passThrough: Pool['passThrough']): Pool[] {
  return [{ name: 'node-1', scope: { kind: 'node' }, devices: [], passThrough }];
}

/** A JSON object of one string member, `bytes` long as JSON. */
function sized(bytes: number): Record<string, string> {
  // {"x":""} is 8 bytes.
  return { x: 'y'.repeat(bytes - 8) };
}

const DEVICE = 'pools[0].devices[0].passThrough';
const POOL = 'pools[0].passThrough';
const NAME_MESSAGE =
  "a field name must be a lowerCamelCase identifier, as resource.k8s.io's JSON fields are (e.g. 'newField', regex used for validation is '[a-z][A-Za-z0-9]*')";
const TYPED_MESSAGE =
  'Forbidden: names a field slicekeeper publishes from its typed data; set that field instead';

interface PassThroughCase {
  name: string;
  pools: Pool[];
  errors: string[];
}

const cases: PassThroughCase[] = [
  {
    name: 'device passThrough: a field of a newer release',
    pools: withDevice({
      nodeAllocatableResources: { cpu: { mapping: { deviceMultiplier: '8' } } },
    }),
    errors: [],
  },
  { name: 'device passThrough: empty', pools: withDevice({}), errors: [] },
  {
    name: 'device passThrough: names a typed field',
    pools: withDevice({ nodeName: 'node-2', bindingConditions: ['x'] }),
    errors: [
      `${DEVICE}[nodeName]: ${TYPED_MESSAGE}`,
      `${DEVICE}[bindingConditions]: ${TYPED_MESSAGE}`,
    ],
  },
  {
    name: "device passThrough: names v1beta1's basic wrapper",
    pools: withDevice({ basic: {} }),
    errors: [`${DEVICE}[basic]: ${TYPED_MESSAGE}`],
  },
  {
    name: 'device passThrough: names a field slicekeeper types but does not publish',
    pools: withDevice({ health: { status: 'healthy' } }),
    errors: [`${DEVICE}[health]: ${TYPED_MESSAGE}`],
  },
  {
    name: 'device passThrough: a member that is no JSON field name',
    pools: withDevice({ 'Node-Name': 'x', 'example.com/field': 1 }),
    errors: [
      `${DEVICE}: Invalid value: "Node-Name": ${NAME_MESSAGE}`,
      `${DEVICE}: Invalid value: "example.com/field": ${NAME_MESSAGE}`,
    ],
  },
  {
    name: 'device passThrough: 4 KiB',
    pools: withDevice(sized(4096)),
    errors: [],
  },
  {
    name: 'device passThrough: over 4 KiB',
    pools: withDevice(sized(4097)),
    errors: [`${DEVICE}: Too long: may not be more than 4096 bytes`],
  },
  {
    name: 'device passThrough: not JSON',
    pools: withDevice({ count: 1n }),
    errors: [`${DEVICE}: Invalid value: "<value omitted>": must be a JSON object`],
  },
  {
    name: 'pool passThrough: a slice spec field of a newer release',
    pools: withPool({ partitionTypeAttribute: 'gpu.example.com/profile' }),
    errors: [],
  },
  {
    name: 'pool passThrough: names a typed slice spec field',
    pools: withPool({ perDeviceNodeSelection: true, driver: 'other.example.com' }),
    errors: [
      `${POOL}[perDeviceNodeSelection]: ${TYPED_MESSAGE}`,
      `${POOL}[driver]: ${TYPED_MESSAGE}`,
    ],
  },
  {
    name: 'pool passThrough: a member that is no JSON field name',
    pools: withPool({ _private: true }),
    errors: [`${POOL}: Invalid value: "_private": ${NAME_MESSAGE}`],
  },
  {
    name: 'pool passThrough: 16 KiB',
    pools: withPool(sized(16384)),
    errors: [],
  },
  {
    name: 'pool passThrough: over 16 KiB',
    pools: withPool(sized(16385)),
    errors: [`${POOL}: Too long: may not be more than 16384 bytes`],
  },
];

describe('validatePassThrough', () => {
  it.each(cases)('$name', ({ pools, errors }) => {
    expect(validateDriverResources(DRIVER, pools).map(formatFieldError)).toEqual(errors);
  });
});
