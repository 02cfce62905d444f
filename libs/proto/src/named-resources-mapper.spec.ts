import { BinaryWriter } from '@bufbuild/protobuf/wire';
import type { NamedResourcesAttributeValue } from './generated/k8s.io/api/resource/v1alpha2/generated';
import { NodeListAndWatchResourcesResponse } from './generated/k8s.io/kubelet/pkg/apis/dra/v1alpha3/api';
import { mapNodeResources } from './named-resources-mapper';

const node = { nodeName: 'node-a' };

/** A message of one model with one instance `gpu-0` whose attribute `a` has `value`. */
function oneAttribute(value: NamedResourcesAttributeValue): NodeListAndWatchResourcesResponse {
  return {
    resources: [
      {
        namedResources: {
          instances: [{ name: 'gpu-0', attributes: [{ name: 'a', attributeValue: value }] }],
        },
      },
    ],
  };
}

function devices(message: NodeListAndWatchResourcesResponse) {
  const mapping = mapNodeResources(message, node);
  if (mapping.kind !== 'inventory') throw new Error(mapping.problem);
  return mapping.inventory.pools.flatMap((pool) => pool.devices);
}

describe('mapNodeResources', () => {
  it('publishes the instances of every model as one node-local pool named after the node', () => {
    const mapping = mapNodeResources(
      {
        resources: [
          { namedResources: { instances: [{ name: 'gpu-0', attributes: [] }] } },
          { namedResources: { instances: [{ name: 'gpu-1', attributes: [] }] } },
        ],
      },
      node,
    );
    expect(mapping).toEqual({
      kind: 'inventory',
      inventory: {
        pools: [
          {
            name: 'node-a',
            scope: { kind: 'node' },
            devices: [{ name: 'gpu-0' }, { name: 'gpu-1' }],
          },
        ],
      },
    });
  });

  it('publishes nothing for a message without models', () => {
    expect(mapNodeResources({ resources: [] }, node)).toEqual({
      kind: 'inventory',
      inventory: { pools: [] },
    });
  });

  it.each<[string, NamedResourcesAttributeValue, object]>([
    ['bool', { bool: true }, { attributes: { a: { bool: true } } }],
    ['int', { int: -42n }, { attributes: { a: { int: -42 } } }],
    ['string', { string: 'A100' }, { attributes: { a: { string: 'A100' } } }],
    ['version', { version: '1.2.3-rc.1' }, { attributes: { a: { version: '1.2.3-rc.1' } } }],
    ['quantity', { quantity: { string: '80Gi' } }, { capacity: { a: { value: '80Gi' } } }],
    [
      'intSlice',
      { intSlice: { ints: [0n, -1n, 7n] } },
      { attributes: { a: { string: '0,-1,7' } } },
    ],
    ['empty intSlice', { intSlice: { ints: [] } }, { attributes: { a: { string: '' } } }],
    [
      'stringSlice',
      { stringSlice: { strings: ['nvlink', 'pcie'] } },
      { attributes: { a: { string: 'nvlink,pcie' } } },
    ],
    ['no value (left to the validator)', {}, { attributes: { a: {} } }],
  ])('maps a %s attribute', (_name, value, expected) => {
    expect(devices(oneAttribute(value))).toEqual([{ name: 'gpu-0', ...expected }]);
  });

  it.each<[string, NodeListAndWatchResourcesResponse, string, RegExp]>([
    [
      'a model that is not named resources',
      { resources: [{ namedResources: { instances: [] } }, {}] },
      'node-a',
      /^resources\[1\]\.namedResources: must be set/,
    ],
    [
      'two values in one attribute',
      oneAttribute({ bool: true, int: 1n }),
      'node-a',
      /^resources\[0\]\.namedResources\.instances\[0\]\.attributes\[0\]\.attributeValue: must set exactly one value \(sets bool, int\)$/,
    ],
    [
      'an int beyond 2^53',
      oneAttribute({ int: 9223372036854775807n }),
      'node-a',
      /attributes\[0\]\.attributeValue\.int: 9223372036854775807 is outside the range/,
    ],
    [
      'a string slice value with the separator',
      oneAttribute({ stringSlice: { strings: ['a', 'b,c'] } }),
      'node-a',
      /attributeValue\.stringSlice\.strings\[1\]: must be non-empty and not contain ","/,
    ],
    [
      'an empty string slice value',
      oneAttribute({ stringSlice: { strings: [''] } }),
      'node-a',
      /attributeValue\.stringSlice\.strings\[0\]: must be non-empty/,
    ],
    [
      'two attributes of one name',
      {
        resources: [
          {
            namedResources: {
              instances: [
                {
                  name: 'gpu-0',
                  attributes: [
                    { name: 'memory', attributeValue: { int: 1n } },
                    { name: 'memory', attributeValue: { quantity: { string: '1Gi' } } },
                  ],
                },
              ],
            },
          },
        ],
      },
      'node-a',
      /instances\[0\]\.attributes\[1\]\.name: "memory" is also the name of attributes\[0\]$/,
    ],
    [
      'a plugin without a node',
      oneAttribute({ bool: true }),
      '',
      /^resources: a kubelet 1\.30 driver publishes node-local resources/,
    ],
  ])('rejects %s, naming the field', (_name, message, nodeName, problem) => {
    const mapping = mapNodeResources(message, { nodeName });
    expect(mapping.kind).toBe('rejected');
    expect(mapping.kind === 'rejected' && mapping.problem).toMatch(problem);
  });

  it('keeps a zero value over the wire (bool false is a value, not its absence)', () => {
    const bytes = NodeListAndWatchResourcesResponse.encode(oneAttribute({ bool: false })).finish();
    expect(devices(NodeListAndWatchResourcesResponse.decode(bytes))).toEqual([
      { name: 'gpu-0', attributes: { a: { bool: false } } },
    ]);
  });

  it("decodes upstream's field numbers", () => {
    // NodeListAndWatchResourcesResponse{resources: [ResourceModel{namedResources:
    // {instances: [{name: "gpu-0", attributes: [{name: "v", attributeValue: {version: "1.0.0"}},
    // {name: "n", attributeValue: {int: 5}}]}]}}]}, written by field number as kubelet 1.30's
    // Go types encode it.
    const attribute = (name: string, value: (w: BinaryWriter) => void) =>
      new BinaryWriter()
        .uint32((1 << 3) | 2)
        .string(name)
        .uint32((2 << 3) | 2)
        .bytes(((w) => (value(w), w.finish()))(new BinaryWriter()))
        .finish();
    const instance = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .string('gpu-0')
      .uint32((2 << 3) | 2)
      .bytes(attribute('v', (w) => w.uint32((10 << 3) | 2).string('1.0.0')))
      .uint32((2 << 3) | 2)
      .bytes(attribute('n', (w) => w.uint32((7 << 3) | 0).int64(5n)))
      .finish();
    const named = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .bytes(instance)
      .finish();
    const model = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .bytes(named)
      .finish();
    const bytes = new BinaryWriter()
      .uint32((1 << 3) | 2)
      .bytes(model)
      .finish();
    expect(devices(NodeListAndWatchResourcesResponse.decode(bytes))).toEqual([
      { name: 'gpu-0', attributes: { v: { version: '1.0.0' }, n: { int: 5 } } },
    ]);
  });
});
