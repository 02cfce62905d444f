import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';
import type { KubeRelease } from './kube-release';

/**
 * The data file: an emulator closed and started again — here as a newer release — on the same
 * file serves the same objects, as kube-apiserver does after an upgrade on the same etcd.
 */

type Json = Record<string, unknown>;
interface Meta {
  name: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  managedFields?: unknown[];
}

let dir: string;
let running: RunningKubeEmulator | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kube-emulator-data-'));
});

afterEach(async () => {
  await running?.close();
  running = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function start(release: KubeRelease, dataFile: string): Promise<RunningKubeEmulator> {
  running = await startKubeEmulator({
    port: 0,
    release,
    dataFile,
    featureGates: { DRAPartitionableDevices: true },
  });
  return running;
}

async function call(
  emulator: RunningKubeEmulator,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${emulator.url}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

function metaOf(body: Json): Meta {
  return body.metadata as Meta;
}

const SLICE_V1BETA2 = {
  apiVersion: 'resource.k8s.io/v1beta2',
  kind: 'ResourceSlice',
  metadata: { name: 'node-1-gpu' },
  spec: {
    driver: 'gpu.example.com',
    pool: { name: 'node-1', generation: 1, resourceSliceCount: 1 },
    nodeName: 'node-1',
    devices: [{ name: 'gpu-0', attributes: { model: { string: 'H100' } } }],
  },
};

describe('kube emulator data file', () => {
  it('keeps objects across a restart as another release, and goes on from the saved resourceVersion', async () => {
    const dataFile = join(dir, 'data.json');
    const old = await start('1.33', dataFile);
    const node = await call(old, 'POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-1' },
    });
    expect(node.status).toBe(201);
    const created = await call(
      old,
      'POST',
      '/apis/resource.k8s.io/v1beta2/resourceslices',
      SLICE_V1BETA2,
    );
    expect(created.status).toBe(201);
    const before = await call(
      old,
      'GET',
      '/apis/resource.k8s.io/v1beta2/resourceslices/node-1-gpu',
    );
    const nodeBefore = await call(old, 'GET', '/api/v1/nodes/node-1');
    const listBefore = await call(old, 'GET', '/apis/resource.k8s.io/v1beta2/resourceslices');
    const savedRv = Number((listBefore.body.metadata as Json).resourceVersion);
    await old.close();
    running = undefined;

    const upgraded = await start('1.36', dataFile);
    // 1.36 serves v1; the object is the same one.
    const after = await call(upgraded, 'GET', '/apis/resource.k8s.io/v1/resourceslices/node-1-gpu');
    expect(after.status).toBe(200);
    expect(after.body.apiVersion).toBe('resource.k8s.io/v1');
    expect(metaOf(after.body)).toEqual(metaOf(before.body));
    expect(metaOf(after.body).managedFields).toHaveLength(1);
    expect(after.body.spec).toEqual({
      ...SLICE_V1BETA2.spec,
      devices: [{ name: 'gpu-0', attributes: { model: { string: 'H100' } } }],
    });
    const nodeAfter = await call(upgraded, 'GET', '/api/v1/nodes/node-1');
    expect(metaOf(nodeAfter.body)).toEqual(metaOf(nodeBefore.body));

    // New writes continue from the saved resourceVersion.
    const next = await call(upgraded, 'POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-2' },
    });
    expect(next.status).toBe(201);
    expect(Number(metaOf(next.body).resourceVersion)).toBeGreaterThan(savedRv);

    // History starts empty: a list at an older exact resourceVersion has expired.
    const stale = await call(
      upgraded,
      'GET',
      `/apis/resource.k8s.io/v1/resourceslices?resourceVersion=${savedRv - 1}&resourceVersionMatch=Exact`,
    );
    expect(stale.status).toBe(410);
  });

  it('starts empty without a file and refuses a file that does not parse, naming it', async () => {
    const missing = await start('1.34', join(dir, 'none.json'));
    const nodes = await call(missing, 'GET', '/api/v1/nodes');
    expect(nodes.body.items).toEqual([]);
    await missing.close();
    running = undefined;

    const broken = join(dir, 'broken.json');
    await writeFile(broken, '{"format": "kube-emulator-data/v1", "resourceVersion": ');
    await expect(start('1.34', broken)).rejects.toThrow(`kube emulator data file ${broken}`);
    await writeFile(broken, JSON.stringify({ nodes: [] }));
    await expect(start('1.34', broken)).rejects.toThrow(
      `kube emulator data file ${broken} is not an emulator data file`,
    );
  });
});
