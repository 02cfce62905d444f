import { DNS1123_SUBDOMAIN_MESSAGE } from '@slicekeeper/contracts';
import type { Device, NodeSelector, Pool } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import { DRIVER } from './testing/fixtures';
import { validateDriverResources } from './validate-driver-resources';
import type { ValidateDriverResourcesOptions } from './validate-driver-resources';

/** Per-device node selection (DRAPartitionableDevices), validated through the driver's pools. */

const RACK_7: NodeSelector = {
  nodeSelectorTerms: [
    { matchExpressions: [{ key: 'example.com/rack', operator: 'In', values: ['7'] }] },
  ],
};

function fabric(devices: Device[], scope: Pool['scope'] = { kind: 'per-device' }): Pool[] {
  return [{ name: 'fabric', scope, devices }];
}

const ONE_OF =
  'exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec';
const ONLY_PER_DEVICE =
  '`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec';

interface NodeSelectionCase {
  name: string;
  pools: Pool[];
  options?: ValidateDriverResourcesOptions;
  errors: string[];
}

const cases: NodeSelectionCase[] = [
  {
    name: 'validateDevice: each device names its nodes in its own way',
    pools: fabric([
      { name: 'a', nodeName: 'node-1' },
      { name: 'b', nodeSelector: RACK_7 },
      { name: 'c', allNodes: true },
    ]),
    options: { node: '' },
    errors: [],
  },
  {
    name: 'validateDevice: exactly one of, none set',
    pools: fabric([{ name: 'a' }]),
    errors: [`pools[0].devices[0]: Required value: ${ONE_OF}`],
  },
  {
    name: 'validateDevice: exactly one of, two set',
    pools: fabric([{ name: 'a', nodeName: 'node-1', allNodes: true }]),
    errors: [`pools[0].devices[0]: Invalid value: "{\`nodeName\`, \`allNodes\`}": ${ONE_OF}`],
  },
  {
    name: 'validateDevice: exactly one of, all three set',
    pools: fabric([{ name: 'a', nodeName: 'node-1', nodeSelector: RACK_7, allNodes: true }]),
    errors: [
      `pools[0].devices[0]: Invalid value: "{\`nodeName\`, \`nodeSelector\`, \`allNodes\`}": ${ONE_OF}`,
    ],
  },
  {
    name: 'validateDevice: nodeName must not be empty',
    pools: fabric([{ name: 'a', nodeName: '' }]),
    errors: [
      'pools[0].devices[0].nodeName: Invalid value: "": must not be empty',
      `pools[0].devices[0]: Required value: ${ONE_OF}`,
    ],
  },
  {
    name: 'validateNodeName: nodeName is a node name',
    pools: fabric([{ name: 'a', nodeName: 'Node_1' }]),
    errors: [`pools[0].devices[0].nodeName: Invalid value: "Node_1": ${DNS1123_SUBDOMAIN_MESSAGE}`],
  },
  {
    name: 'validateDevice: allNodes must be either unset or set to true',
    pools: fabric([{ name: 'a', allNodes: false }]),
    errors: [
      'pools[0].devices[0].allNodes: Invalid value: false: must be either unset or set to true',
      `pools[0].devices[0]: Required value: ${ONE_OF}`,
    ],
  },
  {
    name: 'ValidateNodeSelector: a device selector is checked as the pool one',
    pools: fabric([
      {
        name: 'a',
        nodeSelector: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'rack', operator: 'Near' }] }],
        },
      },
    ]),
    errors: [
      'pools[0].devices[0].nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
    ],
  },
  {
    name: 'ValidateNodeSelector: a device selector without terms',
    pools: fabric([{ name: 'a', nodeSelector: { nodeSelectorTerms: [] } }]),
    errors: [
      'pools[0].devices[0].nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term',
      'pools[0].devices[0].nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node selector term',
    ],
  },
  {
    name: 'validateDevice: node selection only with perDeviceNodeSelection (node pool)',
    pools: fabric([{ name: 'a', nodeName: 'node-1' }], { kind: 'node' }),
    errors: [`pools[0].devices[0]: Invalid value: null: ${ONLY_PER_DEVICE}`],
  },
  {
    name: 'validateDevice: node selection only with perDeviceNodeSelection (all-nodes pool)',
    pools: fabric([{ name: 'a', allNodes: false }], { kind: 'all-nodes' }),
    errors: [`pools[0].devices[0]: Invalid value: null: ${ONLY_PER_DEVICE}`],
  },
  {
    name: 'validateDevice: per-device choice in explicit slices too',
    pools: [
      {
        name: 'fabric',
        scope: { kind: 'per-device' },
        devices: [],
        slices: [{ devices: [{ name: 'a', allNodes: true }] }, { devices: [{ name: 'b' }] }],
      },
    ],
    errors: [`pools[0].slices[1].devices[0]: Required value: ${ONE_OF}`],
  },
  {
    name: 'validateScope: a per-device pool is cluster-level',
    pools: fabric([{ name: 'a', allNodes: true }]),
    options: { node: 'node-1' },
    errors: [
      'pools[0].scope.kind: Invalid value: "per-device": a cluster-scoped pool belongs to the cluster-scoped key (empty node name), not to node "node-1"',
    ],
  },
];

describe('validateDevice: per-device node selection', () => {
  it.each(cases)('$name', ({ pools, options, errors }) => {
    expect(validateDriverResources(DRIVER, pools, options).map(formatFieldError)).toEqual(errors);
  });
});
