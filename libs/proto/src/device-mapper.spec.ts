import type { Device, DriverInventory, Pool } from '@slicekeeper/contracts';
import fc from 'fast-check';
import { fromDriverInventory, mapDriverResources, toDriverInventory } from './inventory-mapper';
import { publisher } from './index';

/** The message as a driver's stream delivers it: encoded, then decoded. */
function overTheWire(message: publisher.DriverResources): publisher.DriverResources {
  return publisher.DriverResources.decode(publisher.DriverResources.encode(message).finish());
}

/** One pool `p` holding devices `d0`, `d1` and `device` (third, at `pools[0].devices[2]`). */
function wirePool(device: publisher.DeepPartial<publisher.Device>, pool = {}) {
  return publisher.DriverResources.fromPartial({
    pools: [{ name: 'p', devices: [{ name: 'd0' }, { name: 'd1' }, device], ...pool }],
  });
}

function domainPool(device: Device, pool: Partial<Pool> = {}): DriverInventory {
  return {
    pools: [
      {
        name: 'p',
        scope: { kind: 'node' },
        devices: [{ name: 'd0' }, { name: 'd1' }, device],
        ...pool,
      },
    ],
  };
}

const RACK_SELECTOR = {
  nodeSelectorTerms: [
    {
      matchExpressions: [{ key: 'rack', operator: 'In', values: ['r1', 'r2'] }],
      matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-z'] }],
    },
  ],
};
const WIRE_RACK_SELECTOR = {
  terms: [
    {
      matchExpressions: [{ key: 'rack', operator: 'In', values: ['r1', 'r2'] }],
      matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-z'] }],
    },
  ],
};

/** (case, the wire device, the domain device): each maps to the other. */
const DEVICE_CASES: [string, publisher.DeepPartial<publisher.Device>, Device][] = [
  ['node-name', { name: 'x', nodeName: 'node-a' }, { name: 'x', nodeName: 'node-a' }],
  // Upstream's validateDevice: "must not be empty" — the validator's to say, not the mapper's.
  ['empty-node-name-for-the-validator', { name: 'x', nodeName: '' }, { name: 'x', nodeName: '' }],
  [
    'device-node-selector',
    { name: 'x', nodeSelector: WIRE_RACK_SELECTOR },
    { name: 'x', nodeSelector: RACK_SELECTOR },
  ],
  ['all-nodes', { name: 'x', allNodes: true }, { name: 'x', allNodes: true }],
  // Upstream's validateDevice: "must be either unset or set to true".
  [
    'all-nodes-false-for-the-validator',
    { name: 'x', allNodes: false },
    { name: 'x', allNodes: false },
  ],
  [
    'allow-multiple-allocations',
    { name: 'x', allowMultipleAllocations: true },
    { name: 'x', allowMultipleAllocations: true },
  ],
  [
    'allow-multiple-allocations-false',
    { name: 'x', allowMultipleAllocations: false },
    { name: 'x', allowMultipleAllocations: false },
  ],
  ['binds-to-node', { name: 'x', bindsToNode: true }, { name: 'x', bindsToNode: true }],
  [
    'binding-conditions',
    {
      name: 'x',
      bindingConditions: ['example.com/attached', 'Ready'],
      bindingFailureConditions: ['example.com/failed'],
    },
    {
      name: 'x',
      bindingConditions: ['example.com/attached', 'Ready'],
      bindingFailureConditions: ['example.com/failed'],
    },
  ],
  // validateDeviceBindingParameters: "bindingFailureConditions are required…" — the validator's.
  [
    'binding-conditions-alone-for-the-validator',
    { name: 'x', bindingConditions: ['Ready'] },
    { name: 'x', bindingConditions: ['Ready'] },
  ],
  [
    'request-policy-valid-values',
    {
      name: 'x',
      allowMultipleAllocations: true,
      capacity: {
        bandwidth: {
          value: '100G',
          requestPolicy: { default: '10G', validValues: ['10G', '25G', '100G'] },
        },
      },
    },
    {
      name: 'x',
      allowMultipleAllocations: true,
      capacity: {
        bandwidth: {
          value: '100G',
          requestPolicy: { default: '10G', validValues: ['10G', '25G', '100G'] },
        },
      },
    },
  ],
  [
    'request-policy-valid-range',
    {
      name: 'x',
      allowMultipleAllocations: true,
      capacity: {
        memory: {
          value: '80Gi',
          requestPolicy: { default: '1Gi', validRange: { min: '1Gi', max: '40Gi', step: '1Gi' } },
        },
      },
    },
    {
      name: 'x',
      allowMultipleAllocations: true,
      capacity: {
        memory: {
          value: '80Gi',
          requestPolicy: { default: '1Gi', validRange: { min: '1Gi', max: '40Gi', step: '1Gi' } },
        },
      },
    },
  ],
  [
    'request-policy-range-of-min-only',
    {
      name: 'x',
      capacity: { memory: { value: '80Gi', requestPolicy: { validRange: { min: '0' } } } },
    },
    {
      name: 'x',
      capacity: { memory: { value: '80Gi', requestPolicy: { validRange: { min: '0' } } } },
    },
  ],
  // validateSingleAllocatableDeviceCapacity: "allowMultipleAllocations must be true" — the
  // validator's; an empty policy is still a policy.
  [
    'empty-request-policy-for-the-validator',
    { name: 'x', capacity: { memory: { value: '80Gi', requestPolicy: {} } } },
    { name: 'x', capacity: { memory: { value: '80Gi', requestPolicy: {} } } },
  ],
  [
    'list-attributes',
    {
      name: 'x',
      attributes: {
        ports: { value: { $case: 'intValues', value: { values: [1n, -2n, 9007199254740991n] } } },
        lanes: { value: { $case: 'boolValues', value: { values: [true, false] } } },
        'example.com/models': { value: { $case: 'stringValues', value: { values: ['a', 'b'] } } },
        firmware: { value: { $case: 'versionValues', value: { values: ['1.2.3', '2.0.0-rc.1'] } } },
      },
    },
    {
      name: 'x',
      attributes: {
        ports: { ints: [1, -2, 9007199254740991] },
        lanes: { bools: [true, false] },
        'example.com/models': { strings: ['a', 'b'] },
        firmware: { versions: ['1.2.3', '2.0.0-rc.1'] },
      },
    },
  ],
  // validateDeviceAttribute: "must not be empty if specified" — the validator's.
  [
    'empty-list-attribute-for-the-validator',
    { name: 'x', attributes: { ports: { value: { $case: 'intValues', value: { values: [] } } } } },
    { name: 'x', attributes: { ports: { ints: [] } } },
  ],
  [
    'pass-through',
    {
      name: 'x',
      passThroughJson: '{"nodeAllocatableResources":{"cpu":{"mapping":{"deviceMultiplier":"8"}}}}',
    },
    {
      name: 'x',
      passThrough: { nodeAllocatableResources: { cpu: { mapping: { deviceMultiplier: '8' } } } },
    },
  ],
];

describe('device fields', () => {
  it.each(DEVICE_CASES)('maps %s from the wire', (_, wire, domain) => {
    expect(toDriverInventory(overTheWire(wirePool(wire)), { nodeName: 'n' })).toEqual(
      domainPool(domain),
    );
  });

  it.each(DEVICE_CASES)('sends %s on the wire', (_, wire, domain) => {
    expect(fromDriverInventory(domainPool(domain))).toEqual(wirePool(wire));
  });

  it('leaves every new field unset for a device that sets none', () => {
    const message = fromDriverInventory(domainPool({ name: 'x' })).pools[0]?.devices[2];
    expect(message).toEqual(publisher.Device.fromPartial({ name: 'x' }));
    expect(toDriverInventory(overTheWire(wirePool({ name: 'x' })), { nodeName: 'n' })).toEqual(
      domainPool({ name: 'x' }),
    );
  });
});

describe('pool fields', () => {
  /** (case, the wire pool's fields, the domain pool's fields): each maps to the other. */
  const POOL_CASES: [string, publisher.DeepPartial<publisher.Pool>, Partial<Pool>][] = [
    [
      'per-device-node-selection',
      { nodeScope: { $case: 'perDeviceNodeSelection', value: true } },
      { scope: { kind: 'per-device' } },
    ],
    [
      'pass-through',
      { passThroughJson: '{"newSpecField":["a",1]}' },
      { passThrough: { newSpecField: ['a', 1] } },
    ],
  ];

  it.each(POOL_CASES)('maps %s from the wire', (_, wire, domain) => {
    expect(
      toDriverInventory(overTheWire(wirePool({ name: 'x' }, wire)), { nodeName: 'n' }),
    ).toEqual(domainPool({ name: 'x' }, domain));
  });

  it.each(POOL_CASES)('sends %s on the wire', (_, wire, domain) => {
    expect(fromDriverInventory(domainPool({ name: 'x' }, domain))).toEqual(
      wirePool({ name: 'x' }, wire),
    );
  });

  it('treats per_device_node_selection=false as node-local', () => {
    const message = wirePool(
      { name: 'x' },
      {
        nodeScope: { $case: 'perDeviceNodeSelection', value: false },
      },
    );
    expect(toDriverInventory(overTheWire(message), { nodeName: 'n' }).pools[0]?.scope).toEqual({
      kind: 'node',
    });
  });
});

describe('what the domain model cannot hold', () => {
  it.each<[string, publisher.DeepPartial<publisher.DriverResources>, string]>([
    [
      'device-pass-through-not-json',
      wirePool({ name: 'x', passThroughJson: 'newField: 1' }),
      'pools[0].devices[2].passThrough: must be a JSON object (is not JSON: ',
    ],
    [
      'device-pass-through-an-array',
      wirePool({ name: 'x', passThroughJson: '[]' }),
      'pools[0].devices[2].passThrough: must be a JSON object (is an array)',
    ],
    [
      'device-pass-through-inexact-integer',
      wirePool({ name: 'x', passThroughJson: '{"a":{"b":18446744073709551615}}' }),
      'pools[0].devices[2].passThrough.a.b: 18446744073709551615 is outside the range ' +
        'slicekeeper can publish exactly (±9007199254740991)',
    ],
    [
      'pool-pass-through-null',
      wirePool({ name: 'x' }, { passThroughJson: 'null' }),
      'pools[0].passThrough: must be a JSON object (is null)',
    ],
    [
      'explicit-slice-device-pass-through',
      { pools: [{ name: 'p', slices: [{ devices: [{ name: 'x', passThroughJson: '1' }] }] }] },
      'pools[0].slices[0].devices[0].passThrough: must be a JSON object (is a number)',
    ],
    [
      'list-int-beyond-2^53',
      wirePool({
        name: 'x',
        attributes: {
          ports: { value: { $case: 'intValues', value: { values: [1n, 2n ** 53n] } } },
        },
      }),
      'pools[0].devices[2].attributes[ports].ints[1]: 9007199254740992 is outside the range ' +
        'slicekeeper can publish exactly (±9007199254740991)',
    ],
  ])('rejects %s, naming the field and the rule', (_, message, problem) => {
    const mapping = mapDriverResources(
      overTheWire(publisher.DriverResources.fromPartial(message)),
      { nodeName: 'n' },
    );
    expect(mapping.kind).toBe('rejected');
    expect(mapping.kind === 'rejected' && mapping.problem.startsWith(problem)).toBe(true);
  });
});

describe('round trip of the 1.34–1.36 fields', () => {
  const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
  const quantity = fc.constantFrom('0', '1', '10G', '1500m', '80Gi', '1e3');
  const nonEmpty = <T>(arb: fc.Arbitrary<T>) => fc.array(arb, { minLength: 1, maxLength: 4 });

  /** JSON values a driver may pass through: numbers a JavaScript number holds as written. */
  const { json } = fc.letrec<{ json: unknown }>((tie) => ({
    json: fc.oneof(
      { depthSize: 'small' },
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.maxSafeInteger(),
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
      fc.array(tie('json'), { maxLength: 3 }),
      fc.dictionary(fc.string(), tie('json'), { maxKeys: 3 }),
    ),
  }));

  const selector = fc.record({
    nodeSelectorTerms: nonEmpty(
      fc.record(
        {
          matchExpressions: nonEmpty(
            fc.record(
              { key: name, operator: fc.constantFrom('In', 'Exists'), values: nonEmpty(name) },
              { requiredKeys: ['key', 'operator'] },
            ),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  });

  const requestPolicy = fc.record(
    {
      default: quantity,
      validValues: nonEmpty(quantity),
      validRange: fc.record(
        { min: quantity, max: quantity, step: quantity },
        { requiredKeys: ['min'] },
      ),
    },
    { requiredKeys: [] },
  );

  const attribute = fc.oneof(
    fc.record({ ints: fc.array(fc.maxSafeInteger(), { maxLength: 4 }) }),
    fc.record({ bools: fc.array(fc.boolean(), { maxLength: 4 }) }),
    fc.record({ strings: fc.array(fc.string(), { maxLength: 4 }) }),
    fc.record({ versions: fc.array(fc.constantFrom('1.2.3', '0.1.0-rc.1'), { maxLength: 4 }) }),
  );

  const device: fc.Arbitrary<Device> = fc.record(
    {
      name,
      attributes: fc.dictionary(name, attribute, { minKeys: 1, maxKeys: 3 }),
      capacity: fc.dictionary(
        name,
        fc.record({ value: quantity, requestPolicy }, { requiredKeys: ['value'] }),
        { minKeys: 1, maxKeys: 3 },
      ),
      nodeName: fc.string(),
      nodeSelector: selector,
      allNodes: fc.boolean(),
      allowMultipleAllocations: fc.boolean(),
      bindsToNode: fc.boolean(),
      bindingConditions: nonEmpty(fc.string()),
      bindingFailureConditions: nonEmpty(fc.string()),
      passThrough: fc.dictionary(fc.string(), json, { maxKeys: 4 }),
    },
    { requiredKeys: ['name'] },
  );

  const inventory: fc.Arbitrary<DriverInventory> = fc.record({
    pools: fc.array(
      fc.record(
        {
          name,
          scope: fc.constantFrom<Pool['scope']>({ kind: 'per-device' }, { kind: 'all-nodes' }),
          devices: fc.array(device, { maxLength: 4 }),
          passThrough: fc.dictionary(fc.string(), json, { maxKeys: 3 }),
        },
        { requiredKeys: ['name', 'scope', 'devices'] },
      ),
      { maxLength: 3 },
    ),
  });

  it('carries every new field unchanged through the wire format and back', () => {
    fc.assert(
      fc.property(inventory, (sent) => {
        const received = toDriverInventory(overTheWire(fromDriverInventory(sent)), {
          nodeName: 'n',
        });
        expect(received).toEqual(sent);
      }),
    );
  });
});
