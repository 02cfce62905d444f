import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';
import type { KubeRelease } from './kube-release';
import type { DraFeatureGate, FeatureGates } from './resource-types';

/**
 * Every gated device field of resource.k8s.io/v1 as kube-apiserver serves it per release and
 * gate (pkg/registry/resource/resourceslice/strategy.go `dropDisabledFields`, one function per
 * gate, with its "already in use by the old object" exception): with the gate on the field is
 * stored and read back in v1, v1beta2 and v1beta1 (under `basic`); with it off the write
 * succeeds (201, no warning, even with `fieldValidation=Strict`) and the field is gone, as a real
 * 1.34.9 server was recorded doing; an update that only adds a dropped field still bumps
 * `metadata.generation` (PrepareForUpdate compares the specs before it drops). A field the
 * release's types do not have is an unknown field instead.
 */

const V1 = '/apis/resource.k8s.io/v1/resourceslices';
const V1BETA2 = '/apis/resource.k8s.io/v1beta2/resourceslices';
const V1BETA1 = '/apis/resource.k8s.io/v1beta1/resourceslices';

const kube = new EmulatorUnderTest();
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'device-fields-'));
});

afterEach(async () => {
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(release: KubeRelease, featureGates: FeatureGates, dataFile?: string) {
  return kube.start({
    port: 0,
    release,
    featureGates,
    ...(dataFile === undefined ? {} : { dataFile }),
  });
}

/** `spec.devices[0].capacity[nvidia.com/gpu]` → `['spec', 'devices', 0, 'capacity', 'nvidia.com/gpu']`. */
function steps(path: string): (string | number)[] {
  return [...path.matchAll(/\[([^\]]+)\]|([^.[\]]+)/g)].map(([, key, name]) =>
    key === undefined ? (name ?? '') : /^\d+$/.test(key) ? Number(key) : key,
  );
}

function valueAt(obj: unknown, path: string): unknown {
  let value = obj;
  for (const step of steps(path)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[step];
  }
  return value;
}

/** Where a v1 device field sits in v1beta1: in the device's `basic`. */
function v1beta1Path(path: string): string {
  return path.replace(/^(spec\.devices\[\d+\])\./, '$1.basic.');
}

function slice(name: string, spec: Json, apiVersion = 'resource.k8s.io/v1'): Json {
  return { apiVersion, kind: 'ResourceSlice', metadata: { name }, spec };
}

/** A v1 spec in v1beta1's shape: each device's fields but its name in `basic`. */
function toV1beta1(spec: Json): Json {
  const devices = (spec.devices as Json[] | undefined)?.map(({ name, ...basic }) => ({
    name,
    basic,
  }));
  return devices === undefined ? spec : { ...spec, devices };
}

function nodeLocal(devices: Json[], extra: Json = {}): Json {
  return {
    driver: 'gpu.example.com',
    nodeName: 'node-a',
    pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
    devices,
    ...extra,
  };
}

const ALL_GATES_ON: FeatureGates = {
  DRADeviceTaints: true,
  DRAPartitionableDevices: true,
  DRADeviceBindingConditions: true,
  DRAConsumableCapacity: true,
  DRAResourceClaimDeviceStatus: true,
};

interface GatedFieldCase {
  readonly name: string;
  readonly gate: DraFeatureGate;
  /** The first release whose types have the field. */
  readonly release: KubeRelease;
  /** A valid spec using the gated fields. */
  readonly spec: Json;
  /** The gated fields of `spec`, as v1 paths. */
  readonly fields: readonly string[];
  /**
   * What a create answers with the gate off, when it is not a plain 201: dropping the field can
   * leave a spec that validation refuses.
   */
  readonly offCauses?: readonly string[];
}

const CASES: readonly GatedFieldCase[] = [
  {
    name: 'DRADeviceTaints: taints',
    gate: 'DRADeviceTaints',
    release: '1.34',
    spec: nodeLocal([
      { name: 'gpu-0', taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }] },
    ]),
    fields: ['spec.devices[0].taints'],
  },
  {
    name: 'DRAPartitionableDevices: sharedCounters and consumesCounters',
    gate: 'DRAPartitionableDevices',
    release: '1.34',
    spec: nodeLocal(
      [
        {
          name: 'gpu-0-mig-1',
          consumesCounters: [{ counterSet: 'gpu-0', counters: { memory: { value: '40Gi' } } }],
        },
      ],
      { sharedCounters: [{ name: 'gpu-0', counters: { memory: { value: '80Gi' } } }] },
    ),
    fields: ['spec.sharedCounters', 'spec.devices[0].consumesCounters'],
  },
  {
    name: 'DRAPartitionableDevices: per-device node selection',
    gate: 'DRAPartitionableDevices',
    release: '1.34',
    spec: {
      driver: 'fabric.example.com',
      pool: { name: 'fabric', generation: 1, resourceSliceCount: 1 },
      perDeviceNodeSelection: true,
      devices: [
        { name: 'dev-0', nodeName: 'node-a' },
        {
          name: 'dev-1',
          nodeSelector: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
            ],
          },
        },
        { name: 'dev-2', allNodes: true },
      ],
    },
    fields: [
      'spec.perDeviceNodeSelection',
      'spec.devices[0].nodeName',
      'spec.devices[1].nodeSelector',
      'spec.devices[2].allNodes',
    ],
    // validateResourceSliceSpec: with perDeviceNodeSelection dropped nothing selects nodes.
    offCauses: [
      'spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    ],
  },
  {
    name: 'DRADeviceBindingConditions: bindsToNode and the binding conditions',
    gate: 'DRADeviceBindingConditions',
    release: '1.34',
    spec: nodeLocal([
      {
        name: 'gpu-0',
        bindsToNode: true,
        bindingConditions: ['example.com/attached'],
        bindingFailureConditions: ['example.com/attach-failed'],
      },
    ]),
    fields: [
      'spec.devices[0].bindsToNode',
      'spec.devices[0].bindingConditions',
      'spec.devices[0].bindingFailureConditions',
    ],
  },
  {
    name: 'DRAConsumableCapacity: allowMultipleAllocations and requestPolicy',
    gate: 'DRAConsumableCapacity',
    release: '1.34',
    spec: nodeLocal([
      {
        name: 'nic-0',
        allowMultipleAllocations: true,
        capacity: {
          bandwidth: {
            value: '100G',
            requestPolicy: { default: '1G', validRange: { min: '1G', max: '100G', step: '1G' } },
          },
          queues: { value: '16', requestPolicy: { default: '1', validValues: ['1', '2', '4'] } },
        },
      },
    ]),
    fields: [
      'spec.devices[0].allowMultipleAllocations',
      'spec.devices[0].capacity[bandwidth].requestPolicy',
      'spec.devices[0].capacity[queues].requestPolicy',
    ],
  },
  {
    name: 'DRAListTypeAttributes: ints, bools, strings and versions',
    gate: 'DRAListTypeAttributes',
    release: '1.36',
    spec: nodeLocal([
      {
        name: 'cpu-0',
        attributes: {
          cores: { ints: [0, 1, 2, 3] },
          smt: { bools: [true, false] },
          'example.com/pcieRoots': { strings: ['pci0000:00', 'pci0000:40'] },
          firmware: { versions: ['1.2.3', '1.3.0'] },
        },
      },
    ]),
    fields: [
      'spec.devices[0].attributes[cores].ints',
      'spec.devices[0].attributes[smt].bools',
      'spec.devices[0].attributes[example.com/pcieRoots].strings',
      'spec.devices[0].attributes[firmware].versions',
    ],
    // dropDisableDRAListTypeAttributesFields keeps the attributes, empty: validateDeviceAttribute.
    offCauses: [
      'spec.devices[0].attributes[cores]: Required value: exactly one value must be specified',
      'spec.devices[0].attributes[example.com/pcieRoots]: Required value: exactly one value must be specified',
      'spec.devices[0].attributes[firmware]: Required value: exactly one value must be specified',
      'spec.devices[0].attributes[smt]: Required value: exactly one value must be specified',
    ],
  },
  {
    name: 'DRANodeAllocatableResources: nodeAllocatableResourceMappings (1.36)',
    gate: 'DRANodeAllocatableResources',
    release: '1.36',
    spec: nodeLocal([
      {
        name: 'cpu-0',
        capacity: { cores: { value: '8' } },
        nodeAllocatableResourceMappings: {
          cpu: { capacityKey: 'cores', allocationMultiplier: '2' },
          memory: { allocationMultiplier: '2Gi' },
        },
      },
    ]),
    fields: ['spec.devices[0].nodeAllocatableResourceMappings'],
  },
  {
    name: 'DRANodeAllocatableResources: nodeAllocatableResources (1.37)',
    gate: 'DRANodeAllocatableResources',
    release: '1.37',
    spec: nodeLocal([
      {
        name: 'cpu-0',
        capacity: { cores: { value: '8' } },
        nodeAllocatableResources: {
          cpu: { mapping: { capacityKey: 'cores', capacityMultiplier: '2' } },
          memory: { overhead: { perPod: '64Mi' } },
        },
      },
    ]),
    fields: ['spec.devices[0].nodeAllocatableResources'],
  },
];

function gatesOn(c: GatedFieldCase): FeatureGates {
  return { ...ALL_GATES_ON, [c.gate]: true };
}

function gateOff(c: GatedFieldCase): FeatureGates {
  return { ...ALL_GATES_ON, [c.gate]: false };
}

/** The fields of `c` that `obj` has, at `path` in v1 or v1beta1 shape. */
function presentFields(c: GatedFieldCase, obj: unknown, inV1beta1 = false): string[] {
  return c.fields.filter(
    (path) => valueAt(obj, inV1beta1 ? v1beta1Path(path) : path) !== undefined,
  );
}

/** The causes of a 422 as `field: message` lines, sorted. */
function causes(body: Json): string[] {
  const details = body.details as { causes?: { field: string; message: string }[] } | undefined;
  return (details?.causes ?? []).map((c) => `${c.field}: ${c.message}`).sort();
}

describe.each(CASES)('$name', (c) => {
  it('gate on: stored, and read back as sent in v1, v1beta2 and v1beta1', async () => {
    await start(c.release, gatesOn(c));
    const created = await kube.call('POST', V1, slice('s', c.spec));
    expect(created.status).toBe(201);
    for (const [base, inV1beta1] of [
      [V1, false],
      [V1BETA2, false],
      [V1BETA1, true],
    ] as const) {
      const read = await kube.call('GET', `${base}/s`);
      expect(read.status).toBe(200);
      for (const path of c.fields) {
        const sent = valueAt({ spec: c.spec }, path);
        const got = valueAt(read.body, inV1beta1 ? v1beta1Path(path) : path);
        // Objects as a subset: the server adds defaults (a taint's timeAdded).
        if (typeof sent === 'object' && sent !== null) expect(got).toMatchObject(sent);
        else expect(got).toEqual(sent);
      }
    }
  });

  it('gate on: written through v1beta1 (in `basic`), read in v1', async () => {
    await start(c.release, gatesOn(c));
    const created = await kube.call(
      'POST',
      V1BETA1,
      slice('s', toV1beta1(c.spec), 'resource.k8s.io/v1beta1'),
    );
    expect(created.status).toBe(201);
    expect(presentFields(c, created.body, true)).toEqual(c.fields);
    const read = await kube.call('GET', `${V1}/s`);
    expect(presentFields(c, read.body)).toEqual(c.fields);
  });

  it('gate off: kept on update when the stored object already uses it', async () => {
    // The gate was on when the slice was written; the server restarts with it off.
    const dataFile = join(dir, 'objects.json');
    await start(c.release, gatesOn(c), dataFile);
    expect((await kube.call('POST', V1, slice('s', c.spec))).status).toBe(201);
    await kube.close();
    await start(c.release, gateOff(c), dataFile);
    const stored = await kube.call('GET', `${V1}/s`);
    const spec = { ...c.spec, pool: { ...(c.spec.pool as Json), generation: 2 } };
    const updated = await kube.call('PUT', `${V1}/s`, {
      ...slice('s', spec),
      metadata: stored.body.metadata,
    });
    expect(updated.status).toBe(200);
    expect(presentFields(c, updated.body)).toEqual(c.fields);
    expect(valueAt(updated.body, 'metadata.generation')).toBe(2);
  });
});

/** The cases whose create with the gate off still passes validation. */
const DROPPED_ON_CREATE = CASES.filter((c) => c.offCauses === undefined);

describe.each(DROPPED_ON_CREATE)('$name, gate off', (c) => {
  it('dropped on create: 201 without a warning, even with fieldValidation=Strict', async () => {
    await start(c.release, gateOff(c));
    const created = await kube.exchange('POST', `${V1}?fieldValidation=Strict`, slice('s', c.spec));
    expect(created.status).toBe(201);
    expect(created.headers.get('warning')).toBeNull();
    expect(presentFields(c, created.body)).toEqual([]);
    const read = await kube.call('GET', `${V1}/s`);
    expect(presentFields(c, read.body)).toEqual([]);
  });

  it('an update that only adds the field writes, bumping the generation', async () => {
    await start(c.release, gateOff(c));
    const created = await kube.call('POST', V1, slice('s', c.spec));
    expect(created.status).toBe(201);
    const updated = await kube.call('PUT', `${V1}/s`, {
      ...slice('s', c.spec),
      metadata: created.body.metadata,
    });
    expect(updated.status).toBe(200);
    expect(updated.body.spec).toEqual(created.body.spec);
    expect(valueAt(updated.body, 'metadata.generation')).toBe(2);
    expect(valueAt(updated.body, 'metadata.resourceVersion')).not.toBe(
      valueAt(created.body, 'metadata.resourceVersion'),
    );
  });
});

describe.each(CASES.filter((c) => c.offCauses !== undefined))('$name, gate off', (c) => {
  it('refused on create: what is left after the drop is invalid', async () => {
    await start(c.release, gateOff(c));
    const created = await kube.exchange('POST', `${V1}?fieldValidation=Strict`, slice('s', c.spec));
    expect(created.headers.get('warning')).toBeNull();
    expect(created.status).toBe(422);
    expect(causes(created.body)).toEqual(c.offCauses);
  });
});

describe('fields a release does not have are unknown fields, not dropped ones', () => {
  it.each([
    {
      name: 'list-type attributes before 1.36',
      release: '1.35' as const,
      // With only the list, the attribute an older server decodes is empty: 422.
      device: { name: 'cpu-0', attributes: { cores: { int: 2, ints: [0, 1] } } },
      field: 'ints',
    },
    {
      name: 'nodeAllocatableResources before 1.37',
      release: '1.36' as const,
      device: { name: 'cpu-0', nodeAllocatableResources: { cpu: { overhead: { perPod: '1' } } } },
      field: 'nodeAllocatableResources',
    },
    {
      name: 'nodeAllocatableResourceMappings after its rename in 1.37',
      release: '1.37' as const,
      device: {
        name: 'cpu-0',
        nodeAllocatableResourceMappings: { cpu: { allocationMultiplier: '1' } },
      },
      field: 'nodeAllocatableResourceMappings',
    },
    {
      name: 'binding conditions before 1.34',
      release: '1.33' as const,
      device: { name: 'gpu-0', bindingConditions: ['example.com/attached'] },
      field: 'bindingConditions',
    },
  ])('$name: 400 with Strict, a warning by default', async ({ release, device, field }) => {
    await start(release, {});
    const base = release === '1.33' ? '/apis/resource.k8s.io/v1beta2/resourceslices' : V1;
    const apiVersion = release === '1.33' ? 'resource.k8s.io/v1beta2' : 'resource.k8s.io/v1';
    const body = slice('s', nodeLocal([device]), apiVersion);
    const strict = await kube.call('POST', `${base}?fieldValidation=Strict`, body);
    expect(strict.status).toBe(400);
    expect(strict.body.message).toContain('strict decoding error: unknown field');
    expect(strict.body.message).toContain(field);
    const warned = await kube.exchange('POST', base, body);
    expect(warned.status).toBe(201);
    expect(warned.headers.get('warning')).toContain('unknown field');
  });
});

describe('managed fields of a write whose fields a gate dropped', () => {
  it('tracks what was sent, as the field manager runs before the strategy drops fields', async () => {
    // The create handler (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go) updates
    // managedFields before rest.Create runs PrepareForCreate; devices are an atomic list.
    await start('1.34', {});
    const spec = nodeLocal(
      [{ name: 'gpu-0', taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }] }],
      { sharedCounters: [{ name: 'gpu-0', counters: { memory: { value: '80Gi' } } }] },
    );
    const created = await kube.call('POST', `${V1}?fieldManager=driver`, slice('s', spec));
    expect(created.status).toBe(201);
    expect(valueAt(created.body, 'spec.sharedCounters')).toBeUndefined();
    expect(valueAt(created.body, 'spec.devices[0].taints')).toBeUndefined();
    expect(valueAt(created.body, 'metadata.managedFields')).toEqual([
      expect.objectContaining({
        manager: 'driver',
        operation: 'Update',
        fieldsV1: {
          'f:spec': {
            'f:devices': {},
            'f:driver': {},
            'f:nodeName': {},
            'f:pool': { 'f:generation': {}, 'f:name': {}, 'f:resourceSliceCount': {} },
            'f:sharedCounters': {},
          },
        },
      }),
    ]);
  });
});
