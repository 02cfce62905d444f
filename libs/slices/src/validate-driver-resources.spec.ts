import type { Device, Pool } from '@slicekeeper/contracts';
import { formatFieldError } from './field-error';
import {
  C_IDENTIFIER_MESSAGE,
  DNS1123_LABEL_MESSAGE,
  DNS1123_SUBDOMAIN_MESSAGE,
} from '@slicekeeper/contracts';
import { QUANTITY_FORMAT_MESSAGE } from './quantity';
import { counterSet, DRIVER, gpu, gpus, pool, taintedGpu } from './testing/fixtures';
import { validateDriverResources } from './validate-driver-resources';
import type { ValidateDriverResourcesOptions } from './validate-driver-resources';

/** A pool whose first device is `device`. */
function withDevice(device: Device): Pool[] {
  return [pool({ devices: [device] })];
}

function attributes(count: number): Device['attributes'] {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`a${i}`, { int: i }]));
}

interface ValidationCase {
  name: string;
  driver?: string;
  pools: Pool[];
  options?: ValidateDriverResourcesOptions;
  errors: string[];
}

const cases: ValidationCase[] = [
  {
    name: 'valid-inventory',
    pools: [pool(), pool({ name: 'spare', devices: gpus(2, 8) })],
    errors: [],
  },
  {
    name: 'valid-partitionable-pool',
    pools: [
      pool({
        devices: [
          gpu(0, {
            consumesCounters: [{ counterSet: 'gpu-0', counters: { memory: { value: '10Gi' } } }],
          }),
        ],
        sharedCounters: [counterSet('gpu-0')],
      }),
    ],
    errors: [],
  },
  { name: 'no-pools', pools: [], errors: [] },
  { name: 'driver-name-required', driver: '', pools: [], errors: ['driver: Required value'] },
  {
    name: 'driver-name-too-long',
    driver: `${'a'.repeat(60)}.com`,
    pools: [],
    errors: ['driver: Too long: may not be more than 63 bytes'],
  },
  {
    name: 'driver-name-lowercase',
    driver: 'GPU.example.com',
    pools: [],
    errors: [`driver: Invalid value: "GPU.example.com": ${DNS1123_SUBDOMAIN_MESSAGE}`],
  },
  {
    name: 'pool-name-required',
    pools: [pool({ name: '' })],
    errors: ['pools[0].name: Required value'],
  },
  {
    name: 'pool-name-subdomains-joined-by-slash',
    pools: [pool({ name: 'rack.example.com/row-7/pool' })],
    errors: [],
  },
  {
    name: 'pool-name-empty-part',
    pools: [pool({ name: 'rack//pool' })],
    errors: [`pools[0].name: Invalid value: "": ${DNS1123_SUBDOMAIN_MESSAGE}`],
  },
  {
    name: 'pool-name-too-long',
    pools: [pool({ name: Array.from({ length: 5 }, () => 'a'.repeat(60)).join('/') })],
    errors: ['pools[0].name: Too long: may not be more than 253 bytes'],
  },
  {
    name: 'pool-name-duplicate',
    pools: [pool(), pool()],
    errors: ['pools[1].name: Duplicate value: "node-1"'],
  },
  {
    name: 'pool-generation-negative',
    pools: [pool({ generation: -1 })],
    errors: ['pools[0].generation: Invalid value: -1: must be greater than or equal to zero'],
  },
  {
    name: 'device-name-invalid',
    pools: withDevice(gpu(0, { name: 'GPU_0' })),
    errors: [`pools[0].devices[0].name: Invalid value: "GPU_0": ${DNS1123_LABEL_MESSAGE}`],
  },
  {
    name: 'device-name-too-long',
    pools: withDevice(gpu(0, { name: 'g'.repeat(64) })),
    errors: [
      `pools[0].devices[0].name: Invalid value: "${'g'.repeat(64)}": must be no more than 63 characters`,
    ],
  },
  {
    name: 'device-name-duplicate-in-pool',
    pools: [pool({ devices: [gpu(0), gpu(1), gpu(0)] })],
    errors: ['pools[0].devices[2].name: Duplicate value: "gpu-0"'],
  },
  {
    name: 'device-name-duplicate-across-explicit-slices',
    pools: [pool({ devices: [], slices: [{ devices: [gpu(0)] }, { devices: [gpu(0)] }] })],
    errors: ['pools[0].slices[1].devices[0].name: Duplicate value: "gpu-0"'],
  },
  {
    name: 'device-names-may-repeat-across-pools',
    pools: [pool(), pool({ name: 'spare' })],
    errors: [],
  },
  {
    name: 'attributes-and-capacities-at-most-32',
    pools: withDevice(
      gpu(0, { attributes: attributes(31), capacity: { memory: { value: '1Gi' } } }),
    ),
    errors: [],
  },
  {
    name: 'attributes-and-capacities-over-32',
    pools: withDevice(
      gpu(0, { attributes: attributes(32), capacity: { memory: { value: '1Gi' } } }),
    ),
    errors: [
      'pools[0].devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32',
    ],
  },
  {
    name: 'attribute-name-not-c-identifier',
    pools: withDevice(gpu(0, { attributes: { '1model': { string: 'x' } } })),
    errors: [`pools[0].devices[0].attributes: Invalid value: "1model": ${C_IDENTIFIER_MESSAGE}`],
  },
  {
    // The pool's devices share their valid names, checked once; an invalid one stays invalid.
    name: 'attribute-name-not-c-identifier-on-every-device',
    pools: [
      pool({
        devices: [
          gpu(0, { attributes: { '1model': { string: 'x' } } }),
          gpu(1, { attributes: { '1model': { string: 'x' } } }),
        ],
      }),
    ],
    errors: [
      `pools[0].devices[0].attributes: Invalid value: "1model": ${C_IDENTIFIER_MESSAGE}`,
      `pools[0].devices[1].attributes: Invalid value: "1model": ${C_IDENTIFIER_MESSAGE}`,
    ],
  },
  {
    name: 'capacity-name-invalid-in-every-explicit-slice',
    pools: [
      pool({
        devices: [],
        slices: [
          { devices: [gpu(0, { capacity: { 'Example.com/memory': { value: '1Gi' } } })] },
          { devices: [gpu(1, { capacity: { 'Example.com/memory': { value: '1Gi' } } })] },
        ],
      }),
    ],
    errors: [
      `pools[0].slices[0].devices[0].capacity: Invalid value: "Example.com": ${DNS1123_SUBDOMAIN_MESSAGE}`,
      `pools[0].slices[1].devices[0].capacity: Invalid value: "Example.com": ${DNS1123_SUBDOMAIN_MESSAGE}`,
    ],
  },
  {
    name: 'attribute-name-too-long',
    pools: withDevice(gpu(0, { attributes: { ['m'.repeat(33)]: { string: 'x' } } })),
    errors: ['pools[0].devices[0].attributes: Too long: may not be more than 32 bytes'],
  },
  {
    name: 'attribute-domain-invalid',
    pools: withDevice(gpu(0, { attributes: { 'Example.com/model': { string: 'x' } } })),
    errors: [
      `pools[0].devices[0].attributes: Invalid value: "Example.com": ${DNS1123_SUBDOMAIN_MESSAGE}`,
    ],
  },
  {
    name: 'attribute-domain-too-long',
    pools: withDevice(gpu(0, { attributes: { [`${'d'.repeat(64)}/model`]: { string: 'x' } } })),
    errors: ['pools[0].devices[0].attributes: Too long: may not be more than 63 bytes'],
  },
  {
    name: 'attribute-name-two-slashes',
    pools: withDevice(gpu(0, { attributes: { 'a.com/b/c': { string: 'x' } } })),
    errors: [
      'pools[0].devices[0].attributes: Invalid value: "a.com/b/c": must not contain more than one slash',
    ],
  },
  {
    name: 'attribute-without-value',
    pools: withDevice(gpu(0, { attributes: { model: {} } })),
    errors: [
      'pools[0].devices[0].attributes[model]: Invalid value: "": exactly one value must be specified',
    ],
  },
  {
    name: 'attribute-with-two-values',
    pools: withDevice(gpu(0, { attributes: { model: { int: 1, string: 'a' } } })),
    errors: [
      'pools[0].devices[0].attributes[model]: Invalid value: {"int":1,"string":"a"}: exactly one value must be specified',
    ],
  },
  {
    name: 'string-value-64-bytes',
    pools: withDevice(gpu(0, { attributes: { model: { string: 'é'.repeat(32) } } })),
    errors: [],
  },
  {
    name: 'string-value-over-64-bytes',
    pools: withDevice(gpu(0, { attributes: { model: { string: 'é'.repeat(33) } } })),
    errors: [
      'pools[0].devices[0].attributes[model].string: Too long: may not be more than 64 bytes',
    ],
  },
  {
    name: 'version-semver-with-prerelease-and-build',
    pools: withDevice(gpu(0, { attributes: { driver: { version: '1.2.3-rc.1+build.5' } } })),
    errors: [],
  },
  {
    name: 'version-not-semver',
    pools: withDevice(gpu(0, { attributes: { driver: { version: '1.2' } } })),
    errors: [
      'pools[0].devices[0].attributes[driver].version: Invalid value: "1.2": must be a string compatible with semver.org spec 2.0.0',
    ],
  },
  {
    name: 'version-leading-zero',
    pools: withDevice(gpu(0, { attributes: { driver: { version: '01.2.3' } } })),
    errors: [
      'pools[0].devices[0].attributes[driver].version: Invalid value: "01.2.3": must be a string compatible with semver.org spec 2.0.0',
    ],
  },
  {
    name: 'version-too-long',
    pools: withDevice(gpu(0, { attributes: { driver: { version: `1.2.3-${'a'.repeat(60)}` } } })),
    errors: [
      'pools[0].devices[0].attributes[driver].version: Too long: may not be more than 64 bytes',
    ],
  },
  {
    name: 'capacity-not-a-quantity',
    pools: withDevice(gpu(0, { capacity: { memory: { value: '12XB' } } })),
    errors: [
      `pools[0].devices[0].capacity[memory].value: Invalid value: "12XB": ${QUANTITY_FORMAT_MESSAGE}`,
    ],
  },
  {
    name: 'taints-at-most-16',
    pools: withDevice(
      gpu(0, { taints: Array.from({ length: 17 }, (_, i) => ({ key: `t${i}`, effect: 'None' })) }),
    ),
    errors: ['pools[0].devices[0].taints: Too many: 17: must have at most 16 items'],
  },
  {
    name: 'taint-effect-unsupported',
    pools: withDevice(gpu(0, { taints: [{ key: 'example.com/x', effect: 'PreferNoSchedule' }] })),
    errors: [
      'pools[0].devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"',
    ],
  },
  {
    name: 'taint-effect-required',
    pools: withDevice(gpu(0, { taints: [{ key: 'example.com/x', effect: '' }] })),
    errors: ['pools[0].devices[0].taints[0].effect: Required value'],
  },
  {
    name: 'taint-key-invalid',
    pools: withDevice(gpu(0, { taints: [{ key: 'example.com/-x', effect: 'None' }] })),
    errors: [
      "pools[0].devices[0].taints[0].key: Invalid value: \"example.com/-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ],
  },
  {
    name: 'taint-value-invalid',
    pools: withDevice(gpu(0, { taints: [{ key: 'example.com/x', value: 'a b', effect: 'None' }] })),
    errors: [
      "pools[0].devices[0].taints[0].value: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ],
  },
  {
    name: 'taint-time-not-rfc3339',
    pools: withDevice(
      gpu(0, { taints: [{ key: 'example.com/x', effect: 'None', timeAdded: '2025-01-01 10:00' }] }),
    ),
    errors: [
      'pools[0].devices[0].taints[0].timeAdded: Invalid value: "2025-01-01 10:00": must be an RFC 3339 time',
    ],
  },
  {
    name: 'counter-consumption-at-most-2',
    pools: [
      pool({
        devices: [
          gpu(0, {
            consumesCounters: ['a', 'b', 'c'].map((name) => ({
              counterSet: name,
              counters: { memory: { value: '1Gi' } },
            })),
          }),
        ],
        sharedCounters: [counterSet('a'), counterSet('b'), counterSet('c')],
      }),
    ],
    errors: ['pools[0].devices[0].consumesCounters: Too many: 3: must have at most 2 items'],
  },
  {
    name: 'counter-set-not-in-pool',
    pools: withDevice(
      gpu(0, {
        consumesCounters: [{ counterSet: 'missing', counters: { memory: { value: '1' } } }],
      }),
    ),
    errors: [
      'pools[0].devices[0].consumesCounters[0].counterSet: Not found: "missing": no counter set of this name in the pool',
    ],
  },
  {
    name: 'counter-not-in-counter-set',
    pools: [
      pool({
        devices: [
          gpu(0, {
            consumesCounters: [{ counterSet: 'gpu-0', counters: { cores: { value: '1' } } }],
          }),
        ],
        sharedCounters: [counterSet('gpu-0')],
      }),
    ],
    errors: [
      'pools[0].devices[0].consumesCounters[0].counters: Not found: "cores": no counter of this name in counter set "gpu-0"',
    ],
  },
  {
    name: 'counter-consumption-without-counters',
    pools: [
      pool({
        devices: [gpu(0, { consumesCounters: [{ counterSet: 'gpu-0', counters: {} }] })],
        sharedCounters: [counterSet('gpu-0')],
      }),
    ],
    errors: ['pools[0].devices[0].consumesCounters[0].counters: Required value'],
  },
  {
    name: 'counter-set-name-duplicate-in-pool',
    pools: [
      pool({
        devices: [],
        slices: [
          { devices: [], sharedCounters: [counterSet('gpu-0')] },
          { devices: [], sharedCounters: [counterSet('gpu-0')] },
        ],
      }),
    ],
    errors: ['pools[0].slices[1].sharedCounters[0].name: Duplicate value: "gpu-0"'],
  },
  {
    name: 'counter-set-name-invalid',
    pools: [pool({ sharedCounters: [counterSet('GPU')] })],
    errors: [`pools[0].sharedCounters[0].name: Invalid value: "GPU": ${DNS1123_LABEL_MESSAGE}`],
  },
  {
    name: 'counter-quantity-invalid',
    pools: [pool({ sharedCounters: [counterSet('gpu-0', 'lots')] })],
    errors: [
      `pools[0].sharedCounters[0].counters[memory].value: Invalid value: "lots": ${QUANTITY_FORMAT_MESSAGE}`,
    ],
  },
  {
    name: 'counters-at-most-32-per-set',
    pools: [
      pool({
        sharedCounters: [
          {
            name: 'big',
            counters: Object.fromEntries(
              Array.from({ length: 33 }, (_, i) => [`c${i}`, { value: '1' }]),
            ),
          },
        ],
      }),
    ],
    errors: ['pools[0].sharedCounters[0].counters: Too many: 33: must have at most 32 items'],
  },
  {
    name: 'explicit-slice-devices-and-counters',
    pools: [
      pool({ devices: [], slices: [{ devices: [gpu(0)], sharedCounters: [counterSet('a')] }] }),
    ],
    errors: [
      'pools[0].slices[0]: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
    ],
  },
  {
    name: 'explicit-slice-over-128',
    pools: [pool({ devices: [], slices: [{ devices: gpus(129) }] })],
    errors: ['pools[0].slices[0].devices: Too many: 129: must have at most 128 items'],
  },
  {
    name: 'explicit-slice-over-64-with-taints',
    pools: [pool({ devices: [], slices: [{ devices: [...gpus(64), taintedGpu(64)] }] })],
    errors: ['pools[0].slices[0].devices: Too many: 65: must have at most 64 items'],
  },
  {
    name: 'explicit-slice-over-8-counter-sets',
    pools: [
      pool({
        devices: [],
        slices: [
          { devices: [], sharedCounters: Array.from({ length: 9 }, (_, i) => counterSet(`s${i}`)) },
        ],
      }),
    ],
    errors: ['pools[0].slices[0].sharedCounters: Too many: 9: must have at most 8 items'],
  },
  {
    name: 'devices-and-slices-both-set',
    pools: [pool({ slices: [{ devices: gpus(1, 100) }] })],
    errors: ['pools[0].devices: Forbidden: must be empty when `slices` lays out the pool'],
  },
  {
    name: 'node-selector-without-terms',
    pools: [pool({ scope: { kind: 'node-selector', nodeSelector: { nodeSelectorTerms: [] } } })],
    errors: [
      'pools[0].scope.nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term',
      'pools[0].scope.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node selector term',
    ],
  },
  {
    name: 'node-selector-bad-operator',
    pools: [
      pool({
        scope: {
          kind: 'node-selector',
          nodeSelector: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'rack', operator: 'Near', values: ['7'] }] },
            ],
          },
        },
      }),
    ],
    errors: [
      'pools[0].scope.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
    ],
  },
  {
    name: 'node-selector-in-without-values',
    pools: [
      pool({
        scope: {
          kind: 'node-selector',
          nodeSelector: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'rack', operator: 'In' }] }],
          },
        },
      }),
    ],
    errors: [
      "pools[0].scope.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ],
  },
  {
    name: 'scope-kind-unsupported',
    pools: [pool({ scope: JSON.parse('{"kind":"zone"}') as Pool['scope'] })],
    errors: [
      'pools[0].scope.kind: Unsupported value: "zone": supported values: "all-nodes", "node", "node-selector", "per-device"',
    ],
  },
  {
    name: 'scope-fits-node-key',
    pools: [pool({ scope: { kind: 'all-nodes' } })],
    options: { node: 'node-1' },
    errors: [
      'pools[0].scope.kind: Invalid value: "all-nodes": a cluster-scoped pool belongs to the cluster-scoped key (empty node name), not to node "node-1"',
    ],
  },
  {
    name: 'scope-fits-cluster-key',
    pools: [pool()],
    options: { node: '' },
    errors: [
      'pools[0].scope.kind: Invalid value: "node": a node-local pool needs a node, and this key is cluster-scoped (empty node name)',
    ],
  },
  {
    name: 'every-problem-reported',
    pools: [
      pool({
        name: '',
        devices: [gpu(0, { name: 'A' }), gpu(1, { capacity: { memory: { value: 'x' } } })],
      }),
    ],
    errors: [
      'pools[0].name: Required value',
      `pools[0].devices[0].name: Invalid value: "A": ${DNS1123_LABEL_MESSAGE}`,
      `pools[0].devices[1].capacity[memory].value: Invalid value: "x": ${QUANTITY_FORMAT_MESSAGE}`,
    ],
  },
];

describe('validateDriverResources', () => {
  it.each(cases)('$name', ({ driver = DRIVER, pools, options, errors }) => {
    expect(validateDriverResources(driver, pools, options).map(formatFieldError)).toEqual(errors);
  });
});
