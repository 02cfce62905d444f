import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * What an operator sees of the gated device fields: `kubectl get resourceslices -o yaml` (the
 * real binary, through the kubeconfig the emulator writes) against kube-apiserver 1.36 with every
 * DRA gate on shows each field as it was sent, in v1 and, under `basic`, in v1beta1.
 */

const run = promisify(execFile);
const KUBECTL = '/usr/bin/kubectl';
const SLICES = '/apis/resource.k8s.io/v1/resourceslices';

const kube = new EmulatorUnderTest();
let dir: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'device-fields-kubectl-'));
  await kube.start({
    port: 0,
    release: '1.36',
    kubeconfigPath: join(dir, 'kubeconfig'),
    featureGates: {
      DRADeviceTaints: true,
      DRAPartitionableDevices: true,
      DRADeviceBindingConditions: true,
      DRAConsumableCapacity: true,
      DRAListTypeAttributes: true,
      DRANodeAllocatableResources: true,
    },
  });
});

afterEach(async () => {
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
});

async function kubectlYaml(resource: string): Promise<{ items: Json[] }> {
  const { stdout } = await run(
    KUBECTL,
    [
      '--kubeconfig',
      kube.kubeconfigPath ?? '',
      '--cache-dir',
      join(dir, 'cache'),
      'get',
      resource,
      '-o',
      'yaml',
    ],
    { timeout: 20_000 },
  );
  return parse(stdout) as { items: Json[] };
}

/** A node-local slice whose one device uses every gated device field but node selection. */
const NIC_SPEC: Json = {
  driver: 'nic.example.com',
  nodeName: 'node-a',
  pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
  devices: [
    {
      name: 'nic-0',
      attributes: {
        model: { string: 'cx7' },
        pcieRoots: { strings: ['pci0000:00', 'pci0000:40'] },
        numaNodes: { ints: [0, 1] },
      },
      capacity: {
        bandwidth: {
          value: '400G',
          requestPolicy: { default: '10G', validRange: { min: '10G', step: '10G' } },
        },
      },
      taints: [{ key: 'example.com/degraded', value: 'link', effect: 'NoSchedule' }],
      bindsToNode: true,
      bindingConditions: ['example.com/fabric-attached'],
      bindingFailureConditions: ['example.com/fabric-failed'],
      allowMultipleAllocations: true,
      nodeAllocatableResourceMappings: { memory: { allocationMultiplier: '256Mi' } },
    },
  ],
};

/** A cluster-level pool whose devices choose their own nodes. */
const FABRIC_SPEC: Json = {
  driver: 'fabric.example.com',
  pool: { name: 'fabric', generation: 1, resourceSliceCount: 1 },
  perDeviceNodeSelection: true,
  devices: [
    { name: 'gpu-0', nodeName: 'node-a' },
    { name: 'gpu-1', allNodes: true },
  ],
};

function byName(items: Json[], name: string): Json | undefined {
  return items.find((item) => (item.metadata as Json).name === name);
}

/** A v1 spec in v1beta1's shape: each device's fields but its name in `basic`. */
function toV1beta1(spec: Json): Json {
  const devices = (spec.devices as Json[]).map(({ name, ...basic }) => ({ name, basic }));
  return { ...spec, devices };
}

describe('kubectl get resourceslices -o yaml with every gated device field', () => {
  it('shows every field as sent, in v1 and in v1beta1', async () => {
    for (const [name, spec] of [
      ['nic', NIC_SPEC],
      ['fabric', FABRIC_SPEC],
    ] as const) {
      const created = await kube.call('POST', SLICES, {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name },
        spec,
      });
      expect(created.status).toBe(201);
    }

    const v1 = await kubectlYaml('resourceslices');
    expect(byName(v1.items, 'nic')).toMatchObject({
      apiVersion: 'resource.k8s.io/v1',
      spec: NIC_SPEC,
    });
    expect(byName(v1.items, 'fabric')).toMatchObject({ spec: FABRIC_SPEC });

    const v1beta1 = await kubectlYaml('resourceslices.v1beta1.resource.k8s.io');
    expect(byName(v1beta1.items, 'nic')).toMatchObject({
      apiVersion: 'resource.k8s.io/v1beta1',
      spec: toV1beta1(NIC_SPEC),
    });
    expect(byName(v1beta1.items, 'fabric')).toMatchObject({ spec: toV1beta1(FABRIC_SPEC) });
  });
});
