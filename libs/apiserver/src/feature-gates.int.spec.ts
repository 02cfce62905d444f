import { droppedFields, summarizeDroppedFields } from '@slicekeeper/slices';
import type { Device } from '@slicekeeper/contracts';
import type { ResourceSlice, StoredResourceSlice } from '@slicekeeper/slices';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';
import type { FeatureGates } from './resource-types';

/**
 * Feature gates over HTTP: what a client sees when kube-apiserver 1.34 drops the fields of a
 * disabled gate — a successful write whose answer lacks them — and that the detector in
 * libs/slices names them from that answer.
 */

type Json = Record<string, unknown>;
const SLICES = '/apis/resource.k8s.io/v1/resourceslices';

let running: RunningKubeEmulator | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(featureGates: FeatureGates): Promise<RunningKubeEmulator> {
  running = await startKubeEmulator({ port: 0, featureGates });
  return running;
}

async function call(
  emulator: RunningKubeEmulator,
  method: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${emulator.url}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

function taintedSlice(): ResourceSlice {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { generateName: '00-gpu.example.com-node-1-' },
    spec: {
      driver: 'gpu.example.com',
      pool: { name: 'node-1', generation: 1, resourceSliceCount: 1 },
      nodeName: 'node-1',
      devices: [
        { name: 'gpu-0', taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }] },
        { name: 'gpu-1' },
        { name: 'gpu-2', taints: [{ key: 'example.com/unhealthy', effect: 'NoExecute' }] },
      ],
    },
  };
}

describe('kube emulator feature gates', () => {
  it('drops device taints with DRADeviceTaints off, on create and on every resend', async () => {
    const emulator = await start({});
    const sent = taintedSlice();
    const created = await call(emulator, 'POST', SLICES, sent);
    expect(created.status).toBe(201);
    const stored = created.body as unknown as StoredResourceSlice;
    const dropped = droppedFields(sent, stored);
    expect(dropped).toEqual([
      { path: 'spec.devices[0].taints', gate: 'DRADeviceTaints' },
      { path: 'spec.devices[2].taints', gate: 'DRADeviceTaints' },
    ]);
    expect(summarizeDroppedFields(dropped)).toEqual(['spec.devices[*].taints (DRADeviceTaints)']);

    // Resending what was dropped is an update that writes: the generation moves, the spec not.
    const resent = { ...stored, spec: sent.spec };
    const updated = await call(emulator, 'PUT', `${SLICES}/${stored.metadata.name}`, resent);
    expect(updated.status).toBe(200);
    const again = updated.body as unknown as StoredResourceSlice;
    expect(again.spec).toEqual(stored.spec);
    expect(again.metadata).toMatchObject({ generation: 2 });
    expect(again.metadata.resourceVersion).not.toBe(stored.metadata.resourceVersion);
  });

  it('keeps device taints with DRADeviceTaints on', async () => {
    const emulator = await start({ DRADeviceTaints: true });
    const sent = taintedSlice();
    const created = await call(emulator, 'POST', SLICES, sent);
    expect(created.status).toBe(201);
    expect(droppedFields(sent, created.body as unknown as StoredResourceSlice)).toEqual([]);
  });

  it('refuses a per-device node selection whose fields it dropped, as nothing selects nodes', async () => {
    const emulator = await start({ DRADeviceTaints: true });
    const sent = taintedSlice();
    delete sent.spec.nodeName;
    sent.spec.perDeviceNodeSelection = true;
    sent.spec.devices = [{ name: 'gpu-0', nodeName: 'node-1' } as Device];
    const created = await call(emulator, 'POST', SLICES, sent);
    expect(created.status).toBe(422);
    expect(JSON.stringify(created.body)).toContain('exactly one of');
  });
});
