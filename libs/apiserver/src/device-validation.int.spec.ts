import { DNS1123_LABEL_MESSAGE } from '@slicekeeper/contracts';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';
import type { KubeRelease } from './kube-release';
import type { FeatureGates } from './resource-types';

/**
 * The validation of the gated device fields with their gates on, one named case per rule of
 * pkg/apis/resource/validation/validation.go (the case name starts with the upstream function),
 * over HTTP: the 422's causes, field path and message, as kube-apiserver writes them.
 */

const SLICES = '/apis/resource.k8s.io/v1/resourceslices';

/** Every DRA gate on: what each case's field needs to reach validation. */
const GATES_ON: FeatureGates = {
  DRADeviceTaints: true,
  DRAPartitionableDevices: true,
  DRADeviceBindingConditions: true,
  DRAConsumableCapacity: true,
  DRAResourceClaimDeviceStatus: true,
  DRAListTypeAttributes: true,
  DRANodeAllocatableResources: true,
};

const QUALIFIED_NAME =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const kube = new EmulatorUnderTest();

/** An answer as its status and its 422 causes, `field: message`, sorted (none for a success). */
function outcome(answer: { status: number; body: Json }): { status: number; causes: string[] } {
  const details = answer.body.details as
    | { causes?: { field: string; message: string }[] }
    | undefined;
  const causes = (details?.causes ?? []).map((c) => `${c.field}: ${c.message}`).sort();
  return { status: answer.status, causes };
}

afterEach(() => kube.close());

function nodeLocal(devices: Json[], extra: Json = {}): Json {
  return {
    driver: 'gpu.example.com',
    nodeName: 'node-a',
    pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
    devices,
    ...extra,
  };
}

/** One device `gpu-0` with `fields`. */
function oneDevice(fields: Json): Json {
  return nodeLocal([{ name: 'gpu-0', ...fields }]);
}

/** A device sharing 80Gi of memory among allocations, under `policy`. */
function consumable(policy: Json, allowMultipleAllocations = true): Json {
  return oneDevice({
    ...(allowMultipleAllocations ? { allowMultipleAllocations } : {}),
    capacity: { memory: { value: '80Gi', requestPolicy: policy } },
  });
}

/** Binding conditions and failure conditions of device `gpu-0`. */
function binding(bindingConditions?: string[], bindingFailureConditions?: string[]): Json {
  return oneDevice({
    bindsToNode: true,
    ...(bindingConditions === undefined ? {} : { bindingConditions }),
    ...(bindingFailureConditions === undefined ? {} : { bindingFailureConditions }),
  });
}

const POLICY = 'spec.devices[0].capacity[memory].requestPolicy';
const RANGE = `${POLICY}.validRange`;

interface ValidationCase {
  readonly name: string;
  /** @defaultValue '1.36' */
  readonly release?: KubeRelease;
  /** @defaultValue {@link GATES_ON} */
  readonly gates?: FeatureGates;
  readonly spec: Json;
  /** The 422's causes as `field: message`, sorted; empty for a spec that is valid. */
  readonly causes: readonly string[];
}

const CASES: readonly ValidationCase[] = [
  // List-type attributes (DRAListTypeAttributes).
  {
    name: 'validateDeviceAttribute: list values accepted',
    spec: oneDevice({
      attributes: {
        cores: { ints: [0, 1] },
        flags: { bools: [true] },
        roots: { strings: ['pci0000:00'] },
        firmware: { versions: ['1.0.0'] },
      },
    }),
    causes: [],
  },
  {
    name: 'validateDeviceAttribute: a list must not be empty if specified',
    spec: oneDevice({ attributes: { cores: { ints: [] } } }),
    causes: [
      'spec.devices[0].attributes[cores].ints: Invalid value: []: must not be empty if specified',
    ],
  },
  {
    name: 'validateDeviceAttribute: exactly one value, scalar or list',
    spec: oneDevice({ attributes: { model: { string: 'a100', strings: ['a100'] } } }),
    causes: [
      'spec.devices[0].attributes[model]: Invalid value: {"IntValue":null,"BoolValue":null,"StringValue":"a100","VersionValue":null,"IntValues":null,"BoolValues":null,"StringValues":["a100"],"VersionValues":null}: exactly one value must be specified',
    ],
  },
  {
    name: 'validateDeviceAttributeVersionValue: each item of versions is semver',
    spec: oneDevice({ attributes: { firmware: { versions: ['1.0.0', 'v2'] } } }),
    causes: [
      'spec.devices[0].attributes[firmware].versions[1]: Invalid value: "v2": must be a string compatible with semver.org spec 2.0.0',
    ],
  },
  {
    name: 'validateDeviceAttributeStringValue: each item of strings at most 64 bytes',
    spec: oneDevice({ attributes: { roots: { strings: ['x'.repeat(65)] } } }),
    causes: [
      'spec.devices[0].attributes[roots].strings[0]: Too long: may not be more than 64 bytes',
    ],
  },
  {
    name: 'numEntriesDeviceAttribute: at most 48 attribute values a device, list items counted',
    spec: oneDevice({
      attributes: {
        model: { string: 'a100' },
        cores: { ints: Array.from({ length: 48 }, (_, i) => i) },
      },
    }),
    causes: [
      'spec.devices[0]: Invalid value: 49: the total number of attribute values must not exceed 48',
    ],
  },
  {
    name: 'haveListAttributes: 64 devices at most in a slice using list values',
    spec: nodeLocal(
      Array.from({ length: 65 }, (_, i) => ({
        name: `cpu-${i}`,
        attributes: { cores: { ints: [i] } },
      })),
    ),
    causes: ['spec.devices: Too many: 65: must have at most 64 items'],
  },
  // Consumable capacity (DRAConsumableCapacity).
  {
    name: 'validateRequestPolicy: a valid range accepted',
    spec: consumable({ default: '1Gi', validRange: { min: '1Gi', max: '80Gi', step: '1Gi' } }),
    causes: [],
  },
  {
    name: 'validateSingleAllocatableDeviceCapacity: a policy needs allowMultipleAllocations',
    spec: consumable({ default: '1Gi' }, false),
    causes: [`${POLICY}: Forbidden: allowMultipleAllocations must be true`],
  },
  {
    name: 'validateRequestPolicy: validValues and validRange exclude each other',
    spec: consumable({ default: '1Gi', validValues: ['1Gi'], validRange: { min: '1Gi' } }),
    causes: [
      `${POLICY}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time`,
    ],
  },
  {
    name: 'validateValidRequestValues: default required with validValues',
    spec: consumable({ validValues: ['1Gi', '2Gi'] }),
    causes: [`${POLICY}.default: Required value: required when validValues is defined`],
  },
  {
    name: 'validateValidRequestValues: default required with validRange',
    spec: consumable({ validRange: { min: '1Gi' } }),
    causes: [`${POLICY}.default: Required value: required when validRange is defined`],
  },
  {
    name: 'validateRequestPolicyValidValues: sorted in ascending order',
    spec: consumable({ default: '1Gi', validValues: ['2Gi', '1Gi'] }),
    causes: [
      `${POLICY}.validValues[1]: Invalid value: "1Gi": values must be sorted in ascending order`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: no option above the capacity',
    spec: consumable({ default: '1Gi', validValues: ['1Gi', '100Gi'] }),
    causes: [
      `${POLICY}.validValues[1]: Invalid value: "100Gi": option is larger than capacity value: 80Gi`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: the default is one of the options',
    spec: consumable({ default: '3Gi', validValues: ['1Gi', '2Gi'] }),
    causes: [
      `${POLICY}.validValues: Invalid value: "3Gi": default value is not valid according to the requestPolicy`,
    ],
  },
  {
    name: 'validateRequestPolicyValidValues: no duplicate option (quantityKeyInt)',
    spec: consumable({ default: '1Gi', validValues: ['1Gi', '1024Mi'] }),
    causes: [`${POLICY}.validValues[1]: Duplicate value: "1073741824"`],
  },
  {
    name: 'validateRequestPolicyValidValues: at most 10 options',
    spec: consumable({
      default: '1Gi',
      validValues: Array.from({ length: 11 }, (_, i) => `${i + 1}Gi`),
    }),
    causes: [`${POLICY}.validValues: Too many: 11: must have at most 10 items`],
  },
  {
    name: 'validateRequestPolicyRange: min required',
    spec: consumable({ default: '1Gi', validRange: { max: '10Gi' } }),
    causes: [`${RANGE}.min: Required value: required when validRange is defined`],
  },
  {
    name: 'validateRequestPolicyRange: min not above the capacity',
    spec: consumable({ default: '90Gi', validRange: { min: '90Gi' } }),
    causes: [`${RANGE}.min: Invalid value: "90Gi": min is larger than capacity value: 80Gi`],
  },
  {
    name: 'validateRequestPolicyRange: default not below min',
    spec: consumable({ default: '1Gi', validRange: { min: '2Gi' } }),
    causes: [`${RANGE}.default: Invalid value: "1Gi": default is less than min: 2Gi`],
  },
  {
    name: 'validateRequestPolicyRange: max not below min, not above the capacity',
    spec: consumable({ default: '4Gi', validRange: { min: '4Gi', max: '2Gi' } }),
    causes: [
      `${RANGE}.default: Invalid value: "4Gi": default is more than max: 2Gi`,
      `${RANGE}.max: Invalid value: "4Gi": min is larger than max: 2Gi`,
    ],
  },
  {
    name: 'validateRequestPolicyRange: max not above the capacity',
    spec: consumable({ default: '1Gi', validRange: { min: '1Gi', max: '100Gi' } }),
    causes: [`${RANGE}.max: Invalid value: "100Gi": max is larger than capacity value: 80Gi`],
  },
  {
    name: 'validateRequestPolicyRange: step greater than zero',
    spec: consumable({ default: '1Gi', validRange: { min: '1Gi', step: '0' } }),
    causes: [`${RANGE}.step: Invalid value: "0": must be greater than zero`],
  },
  {
    name: 'validateRequestPolicyRange: one step from min within the capacity',
    spec: consumable({ default: '70Gi', validRange: { min: '70Gi', step: '20Gi' } }),
    causes: [
      `${RANGE}.step: Invalid value: "20Gi": one step 90Gi is larger than capacity value: 80Gi`,
    ],
  },
  {
    name: 'validateRequestPolicyRangeStep: default and max a whole number of steps from min',
    spec: consumable({ default: '3Gi', validRange: { min: '2Gi', max: '9Gi', step: '2Gi' } }),
    causes: [
      `${RANGE}.step: Invalid value: "3Gi": value is not a multiple of a given step (2Gi) from (2Gi)`,
      `${RANGE}.step: Invalid value: "9Gi": value is not a multiple of a given step (2Gi) from (2Gi)`,
    ],
  },
  // Binding conditions (DRADeviceBindingConditions).
  {
    name: 'validateDeviceBindingParameters: conditions and failure conditions accepted',
    spec: binding(['example.com/attached'], ['example.com/attach-failed']),
    causes: [],
  },
  {
    name: 'validateDeviceBindingParameters: failure conditions required with conditions',
    spec: binding(['example.com/attached']),
    causes: [
      'spec.devices[0].bindingFailureConditions: Invalid value: null: bindingFailureConditions are required to use bindingConditions',
    ],
  },
  {
    name: 'validateDeviceBindingParameters: conditions required with failure conditions',
    spec: binding(undefined, ['example.com/attach-failed']),
    causes: [
      'spec.devices[0].bindingConditions: Invalid value: null: bindingConditions are required to use bindingFailureConditions',
    ],
  },
  {
    name: 'validateDeviceBindingParameters: at most 4 conditions (BindingConditionsMaxSize)',
    spec: binding(['a', 'b', 'c', 'd', 'e'], ['f']),
    causes: ['spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items'],
  },
  {
    name: 'validateDeviceBindingParameters: no duplicate condition',
    spec: binding(['a', 'a'], ['f']),
    causes: ['spec.devices[0].bindingConditions[1]: Duplicate value: "a"'],
  },
  {
    name: 'validateDeviceBindingParameters: failure conditions do not overlap conditions',
    spec: binding(['a'], ['a']),
    causes: [
      'spec.devices[0].bindingFailureConditions[0]: Invalid value: "a": bindingFailureConditions must not overlap with bindingConditions',
    ],
  },
  {
    name: 'validateDeviceBindingParameters: each condition a label name (ValidateLabelName)',
    spec: binding(['not valid'], ['f']),
    causes: [`spec.devices[0].bindingConditions[0]: Invalid value: "not valid": ${QUALIFIED_NAME}`],
  },
  // Counters (DRAPartitionableDevices).
  {
    name: 'validateDeviceCounterConsumption: at most 2 counter sets a device',
    spec: oneDevice({
      consumesCounters: ['a', 'b', 'c'].map((counterSet) => ({
        counterSet,
        counters: { memory: { value: '1Gi' } },
      })),
    }),
    causes: ['spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items'],
  },
  {
    name: 'validateDeviceCounterConsumption: one entry per counter set',
    spec: oneDevice({
      consumesCounters: [
        { counterSet: 'a', counters: { memory: { value: '1Gi' } } },
        { counterSet: 'a', counters: { cores: { value: '1' } } },
      ],
    }),
    causes: ['spec.devices[0].consumesCounters[1]: Duplicate value: "a"'],
  },
  {
    name: 'validateDeviceCounterConsumption: counters required, names DNS labels',
    spec: oneDevice({
      consumesCounters: [
        { counterSet: 'a', counters: {} },
        { counterSet: 'b', counters: { Memory: { value: '1Gi' } } },
      ],
    }),
    causes: [
      'spec.devices[0].consumesCounters[0].counters: Required value',
      `spec.devices[0].consumesCounters[1].counters[Memory]: Invalid value: "Memory": ${DNS1123_LABEL_MESSAGE}`,
    ],
  },
  {
    name: 'validateCounterSet: counter names DNS labels',
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 2 },
      sharedCounters: [{ name: 'gpu-0', counters: { Memory: { value: '80Gi' } } }],
    },
    causes: [
      `spec.sharedCounters[0].counters[Memory]: Invalid value: "Memory": ${DNS1123_LABEL_MESSAGE}`,
    ],
  },
  // Per-device node selection (DRAPartitionableDevices).
  {
    name: 'validateDevice: exactly one node choice per device with perDeviceNodeSelection',
    spec: {
      driver: 'fabric.example.com',
      pool: { name: 'fabric', generation: 1, resourceSliceCount: 1 },
      perDeviceNodeSelection: true,
      devices: [{ name: 'dev-0' }, { name: 'dev-1', nodeName: 'node-a', allNodes: true }],
    },
    causes: [
      'spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec',
      'spec.devices[1]: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec',
    ],
  },
  {
    name: 'validateResourceSliceSpec: perDeviceNodeSelection dropped by its gate leaves no node choice (1.34 defaults)',
    release: '1.34',
    gates: {},
    spec: {
      driver: 'fabric.example.com',
      pool: { name: 'fabric', generation: 1, resourceSliceCount: 1 },
      perDeviceNodeSelection: true,
      devices: [{ name: 'dev-0', nodeName: 'node-a' }],
    },
    causes: [
      'spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    ],
  },
  // Node allocatable resources (DRANodeAllocatableResources), 1.36's field.
  {
    name: 'nodeAllocatableResourceMappings: keys are node allocatable resource names',
    spec: oneDevice({
      nodeAllocatableResourceMappings: { 'example.com/gpu': { allocationMultiplier: '1' } },
    }),
    causes: [
      'spec.devices[0].nodeAllocatableResourceMappings[example.com/gpu]: Invalid value: "example.com/gpu": must be a node allocatable resource name',
    ],
  },
  {
    name: 'nodeAllocatableResourceMappings: capacityKey names a capacity of the device',
    spec: oneDevice({
      capacity: { cores: { value: '8' } },
      nodeAllocatableResourceMappings: {
        cpu: { capacityKey: 'threads' },
        memory: { capacityKey: '' },
      },
    }),
    causes: [
      'spec.devices[0].nodeAllocatableResourceMappings[cpu].capacityKey: Not found: "threads"',
      'spec.devices[0].nodeAllocatableResourceMappings[memory].capacityKey: Invalid value: "": capacityKey must not be an empty string',
    ],
  },
  {
    name: 'nodeAllocatableResourceMappings: allocationMultiplier positive',
    spec: oneDevice({
      nodeAllocatableResourceMappings: { 'hugepages-2Mi': { allocationMultiplier: '-2Mi' } },
    }),
    causes: [
      'spec.devices[0].nodeAllocatableResourceMappings[hugepages-2Mi].allocationMultiplier: Invalid value: "-2Mi": must be positive',
    ],
  },
  // Node allocatable resources, 1.37's field.
  {
    name: 'validateNodeAllocatableResources: mapping or overhead required',
    release: '1.37',
    spec: oneDevice({ nodeAllocatableResources: { cpu: {} } }),
    causes: [
      'spec.devices[0].nodeAllocatableResources[cpu]: Required value: at least one of mapping or overhead must be set',
    ],
  },
  {
    name: 'validateNodeAllocatableMapping: capacityKey and capacityMultiplier together, multipliers positive',
    release: '1.37',
    spec: oneDevice({
      capacity: { cores: { value: '8' } },
      nodeAllocatableResources: {
        cpu: { mapping: { capacityKey: 'cores' } },
        memory: { mapping: { capacityMultiplier: '1Gi', deviceMultiplier: '0' } },
      },
    }),
    causes: [
      'spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityMultiplier: Required value: capacityMultiplier is required when capacityKey is set',
      'spec.devices[0].nodeAllocatableResources[memory].mapping.capacityKey: Required value: capacityKey is required when capacityMultiplier is set',
      'spec.devices[0].nodeAllocatableResources[memory].mapping.deviceMultiplier: Invalid value: "0": must be positive',
    ],
  },
  {
    name: 'validateNodeAllocatableOverheadMapping: perPod or perContainer, not negative',
    release: '1.37',
    spec: oneDevice({
      nodeAllocatableResources: {
        cpu: { overhead: {} },
        memory: { overhead: { perPod: '-1Mi' } },
      },
    }),
    causes: [
      'spec.devices[0].nodeAllocatableResources[cpu].overhead: Invalid value: "": at least one of perPod or perContainer must be set',
      'spec.devices[0].nodeAllocatableResources[memory].overhead.perPod: Invalid value: "-1Mi": must be non-negative',
    ],
  },
];

describe('validation of the gated device fields, gates on', () => {
  it.each(CASES)('$name', async ({ release = '1.36', gates = GATES_ON, spec, causes }) => {
    await kube.start({ port: 0, release, featureGates: gates });
    const answer = await kube.call('POST', SLICES, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: 's' },
      spec,
    });
    expect(outcome(answer)).toEqual({ status: causes.length === 0 ? 201 : 422, causes });
  });
});

describe('validation on update, against the stored device of the same name', () => {
  it.each([
    {
      name: 'validateDevice: an unchanged capacity is not validated again (lookupDevice)',
      capacity: { memory: { value: '80Gi', requestPolicy: { default: '1Gi' } } },
      causes: [],
    },
    {
      name: 'validateDevice: a changed capacity is validated again',
      capacity: { memory: { value: '96Gi', requestPolicy: { default: '1Gi' } } },
      causes: [`${POLICY}: Forbidden: allowMultipleAllocations must be true`],
    },
  ])('$name', async ({ capacity, causes }) => {
    await kube.start({ port: 0, release: '1.36', featureGates: GATES_ON });
    const created = await kube.call('POST', SLICES, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: 's' },
      spec: consumable({ default: '1Gi' }),
    });
    expect(created.status).toBe(201);
    // allowMultipleAllocations turned off: the policy it allowed is now forbidden, but only
    // checked where the capacity changed.
    const updated = await kube.call('PUT', `${SLICES}/s`, {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: created.body.metadata,
      spec: oneDevice({ allowMultipleAllocations: false, capacity }),
    });
    expect(outcome(updated)).toEqual({ status: causes.length === 0 ? 200 : 422, causes });
  });
});
