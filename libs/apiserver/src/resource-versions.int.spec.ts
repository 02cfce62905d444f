import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeRelease } from './kube-release';
import type { FeatureGates } from './resource-types';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';

/**
 * resource.k8s.io in every version a release serves: ResourceSlices are stored once and read and
 * written in v1, v1beta2 and v1beta1 (whose devices wrap their fields in `basic`), through HTTP
 * and the real kubectl; and the release decides /version, discovery and the gates' defaults.
 */

type Json = Record<string, unknown>;
const run = promisify(execFile);
const KUBECTL = '/usr/bin/kubectl';
const GROUP = '/apis/resource.k8s.io';

let dir: string;
let running: RunningKubeEmulator | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'resource-versions-'));
});

afterEach(async () => {
  await running?.close();
  running = undefined;
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

async function start(
  release?: KubeRelease,
  featureGates: FeatureGates = {},
): Promise<RunningKubeEmulator> {
  running = await startKubeEmulator({
    kubeconfigPath: join(dir, 'kubeconfig'),
    featureGates,
    ...(release === undefined ? {} : { release }),
  });
  return running;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${running?.url ?? ''}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': contentType },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

async function kubectl(
  ...args: string[]
): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(
      KUBECTL,
      ['--kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 20_000 },
    );
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; code?: number };
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', code: failed.code ?? 1 };
  }
}

function v1beta1Slice(name: string): Json {
  return {
    apiVersion: 'resource.k8s.io/v1beta1',
    kind: 'ResourceSlice',
    metadata: { name },
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
      devices: [
        {
          name: 'gpu-0',
          basic: {
            attributes: { model: { string: 'a100' } },
            capacity: { memory: { value: '40Gi' } },
          },
        },
      ],
    },
  };
}

const FLAT_DEVICE = {
  name: 'gpu-0',
  attributes: { model: { string: 'a100' } },
  capacity: { memory: { value: '40Gi' } },
};

const BASIC_DEVICE = {
  name: 'gpu-0',
  basic: {
    attributes: { model: { string: 'a100' } },
    capacity: { memory: { value: '40Gi' } },
  },
};

function specOf(body: Json): Json {
  return body.spec as Json;
}

function managedApiVersions(body: Json): unknown[] {
  const meta = body.metadata as { managedFields?: { apiVersion: string }[] };
  return (meta.managedFields ?? []).map((e) => e.apiVersion);
}

describe('one ResourceSlice, three versions (release 1.34)', () => {
  it('a v1beta1 create reads back flat in v1 and v1beta2 and with basic in v1beta1', async () => {
    await start();
    const created = await call('POST', `${GROUP}/v1beta1/resourceslices`, v1beta1Slice('s1'));
    expect(created.status).toBe(201);
    expect(created.body.apiVersion).toBe('resource.k8s.io/v1beta1');
    expect(specOf(created.body).devices).toEqual([BASIC_DEVICE]);
    // Managed fields are recorded in the version the writer used.
    expect(managedApiVersions(created.body)).toEqual(['resource.k8s.io/v1beta1']);

    const v1 = await call('GET', `${GROUP}/v1/resourceslices/s1`);
    expect(v1.body.apiVersion).toBe('resource.k8s.io/v1');
    expect(specOf(v1.body)).toEqual({
      driver: 'gpu.example.com',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
      nodeName: 'node-a',
      devices: [FLAT_DEVICE],
    });
    expect(managedApiVersions(v1.body)).toEqual(['resource.k8s.io/v1beta1']);

    const v1beta2 = await call('GET', `${GROUP}/v1beta2/resourceslices/s1`);
    expect(v1beta2.body.apiVersion).toBe('resource.k8s.io/v1beta2');
    expect(specOf(v1beta2.body)).toEqual(specOf(v1.body));

    const table = await fetch(
      `${running?.url ?? ''}${GROUP}/v1beta1/resourceslices/s1?includeObject=Object`,
      { headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } },
    );
    const rows = ((await table.json()) as { rows: { object: Json }[] }).rows;
    expect(rows.map((row) => specOf(row.object).devices)).toEqual([[BASIC_DEVICE]]);

    const list = await call('GET', `${GROUP}/v1beta1/resourceslices`);
    expect(list.body.apiVersion).toBe('resource.k8s.io/v1beta1');
    expect((list.body.items as Json[]).map((i) => specOf(i).devices)).toEqual([[BASIC_DEVICE]]);
  });

  it('a device without fields is `basic: {}` in v1beta1; an unset nodeName stays unset', async () => {
    await start();
    const created = await call('POST', `${GROUP}/v1/resourceslices`, {
      metadata: { name: 'bare' },
      spec: {
        driver: 'gpu.example.com',
        allNodes: true,
        pool: { name: 'pool', generation: 1, resourceSliceCount: 1 },
        devices: [{ name: 'gpu-0' }],
      },
    });
    expect(created.status).toBe(201);
    const v1beta1 = await call('GET', `${GROUP}/v1beta1/resourceslices/bare`);
    expect(specOf(v1beta1.body)).toEqual({
      driver: 'gpu.example.com',
      pool: { name: 'pool', generation: 1, resourceSliceCount: 1 },
      allNodes: true,
      devices: [{ name: 'gpu-0', basic: {} }],
    });
  });

  it('a merge patch in v1beta1 changes the stored slice as v1 sees it', async () => {
    await start();
    await call('POST', `${GROUP}/v1/resourceslices`, {
      metadata: { name: 's1' },
      spec: { ...specOf(v1beta1Slice('x')), devices: [FLAT_DEVICE] },
    });
    const patched = await call(
      'PATCH',
      `${GROUP}/v1beta1/resourceslices/s1`,
      {
        spec: {
          devices: [{ name: 'gpu-0', basic: { attributes: { model: { string: 'h100' } } } }],
        },
      },
      'application/merge-patch+json',
    );
    expect(patched.status).toBe(200);
    expect(specOf(patched.body).devices).toEqual([
      { name: 'gpu-0', basic: { attributes: { model: { string: 'h100' } } } },
    ]);
    const v1 = await call('GET', `${GROUP}/v1/resourceslices/s1`);
    expect(specOf(v1.body).devices).toEqual([
      { name: 'gpu-0', attributes: { model: { string: 'h100' } } },
    ]);
    expect(v1.body.metadata).toMatchObject({ generation: 2 });
  });

  it('validation names the internal (flat) paths, whatever the version', async () => {
    await start();
    const slice = v1beta1Slice('bad');
    (specOf(slice).devices as Json[])[0] = {
      name: 'gpu-0',
      basic: { attributes: { model: { string: 'x'.repeat(65) } } },
    };
    const res = await call('POST', `${GROUP}/v1beta1/resourceslices`, slice);
    expect(res.status).toBe(422);
    const causes = (res.body.details as { causes: { field: string }[] }).causes;
    expect(causes.map((c) => c.field)).toEqual(['spec.devices[0].attributes[model].string']);
  });

  it('watchers in each version get the event in their version', async () => {
    await start();
    // fetch resolves once the headers are in, which the server sends after registering the watch.
    const openWatch = async (version: string) => {
      const res = await fetch(`${running?.url ?? ''}${GROUP}/${version}/resourceslices?watch=true`);
      const reader = res.body?.getReader();
      if (reader === undefined) throw new Error('no body');
      return reader;
    };
    const firstEvent = async (reader: Awaited<ReturnType<typeof openWatch>>): Promise<Json> => {
      let text = '';
      while (!text.includes('\n')) {
        const chunk = await reader.read();
        if (chunk.done) break;
        text += Buffer.from(chunk.value).toString('utf8');
      }
      await reader.cancel();
      return JSON.parse(text.slice(0, text.indexOf('\n'))) as Json;
    };
    const readers = await Promise.all(['v1', 'v1beta1', 'v1beta2'].map(openWatch));
    await call('POST', `${GROUP}/v1beta1/resourceslices`, v1beta1Slice('s1'));
    const [v1, v1beta1, v1beta2] = (await Promise.all(readers.map(firstEvent))).map(
      (event) => event.object as Json,
    );
    expect(v1).toMatchObject({
      apiVersion: 'resource.k8s.io/v1',
      spec: { devices: [FLAT_DEVICE] },
    });
    expect(v1beta1).toMatchObject({
      apiVersion: 'resource.k8s.io/v1beta1',
      spec: { devices: [BASIC_DEVICE] },
    });
    expect(v1beta2).toMatchObject({ apiVersion: 'resource.k8s.io/v1beta2' });
  });

  it('kubectl creates in v1beta1, applies server-side in v1beta1 and reads every version', async () => {
    await start();
    const file = join(dir, 'slice.yaml');
    writeFileSync(file, JSON.stringify(v1beta1Slice('s1')));
    expect((await kubectl('create', '-f', file)).stdout).toBe(
      'resourceslice.resource.k8s.io/s1 created\n',
    );
    const asV1 = JSON.parse(
      (await kubectl('get', 'resourceslices.v1.resource.k8s.io', 's1', '-o', 'json')).stdout,
    ) as Json;
    expect(asV1.apiVersion).toBe('resource.k8s.io/v1');
    expect(specOf(asV1).devices).toEqual([FLAT_DEVICE]);
    const asV1beta1 = await kubectl('get', 'resourceslices.v1beta1.resource.k8s.io', '-o', 'yaml');
    expect(asV1beta1.stdout).toContain('apiVersion: resource.k8s.io/v1beta1');
    expect(asV1beta1.stdout).toContain('    - basic:\n');

    const applied = v1beta1Slice('s2');
    writeFileSync(file, JSON.stringify(applied));
    const apply = await kubectl('apply', '--server-side', '-f', file);
    expect(apply.stdout).toBe('resourceslice.resource.k8s.io/s2 serverside-applied\n');
    const s2 = await call('GET', `${GROUP}/v1/resourceslices/s2`);
    expect(specOf(s2.body).devices).toEqual([FLAT_DEVICE]);
    const entry = (s2.body.metadata as { managedFields: Json[] }).managedFields[0];
    expect(entry).toMatchObject({ operation: 'Apply', apiVersion: 'resource.k8s.io/v1beta1' });
    // devices is an atomic list: the manager owns it whole, in any version.
    expect(entry?.fieldsV1).toEqual({
      'f:spec': {
        'f:devices': {},
        'f:driver': {},
        'f:nodeName': {},
        'f:pool': { 'f:generation': {}, 'f:name': {}, 'f:resourceSliceCount': {} },
      },
    });
  });
});

describe('KUBE_RELEASE', () => {
  it('1.32 is v1beta1 only: /version, discovery, 404 for v1, kubectl uses v1beta1', async () => {
    await start('1.32');
    const version = await call('GET', '/version');
    expect(version.body).toMatchObject({ major: '1', minor: '32' });
    expect(version.body.gitVersion).toMatch(/^v1\.32\./);

    const group = await call('GET', GROUP);
    expect(group.body).toMatchObject({
      name: 'resource.k8s.io',
      versions: [{ groupVersion: 'resource.k8s.io/v1beta1', version: 'v1beta1' }],
      preferredVersion: { groupVersion: 'resource.k8s.io/v1beta1', version: 'v1beta1' },
    });
    expect((await call('GET', `${GROUP}/v1`)).status).toBe(404);
    expect((await call('GET', `${GROUP}/v1/resourceslices`)).status).toBe(404);
    expect((await call('GET', `${GROUP}/v1beta1`)).body.groupVersion).toBe(
      'resource.k8s.io/v1beta1',
    );

    const file = join(dir, 'slice.yaml');
    writeFileSync(file, JSON.stringify(v1beta1Slice('s1')));
    expect((await kubectl('create', '-f', file)).code).toBe(0);
    const got = JSON.parse((await kubectl('get', 'resourceslices', '-o', 'json')).stdout) as Json;
    expect(got.apiVersion).toBe('v1');
    expect((got.items as Json[]).map((i) => i.apiVersion)).toEqual(['resource.k8s.io/v1beta1']);
  });

  it('1.33 serves v1beta2 (preferred) and v1beta1', async () => {
    await start('1.33');
    const list = await call('GET', '/apis');
    const groups = list.body.groups as { name: string; versions: Json[]; preferredVersion: Json }[];
    const resource = groups.find((g) => g.name === 'resource.k8s.io');
    expect(resource?.versions.map((v) => v.version)).toEqual(['v1beta2', 'v1beta1']);
    expect(resource?.preferredVersion.version).toBe('v1beta2');
    expect((await call('GET', '/version')).body.minor).toBe('33');
  });

  it("takes the release's gate defaults: device taints are dropped in 1.35, kept in 1.36", async () => {
    const tainted = {
      metadata: { name: 'tainted' },
      spec: {
        driver: 'gpu.example.com',
        nodeName: 'node-a',
        pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
        devices: [{ name: 'gpu-0', taints: [{ key: 'k', effect: 'NoSchedule' }] }],
      },
    };
    await start('1.35');
    const in135 = await call('POST', `${GROUP}/v1/resourceslices`, tainted);
    expect(specOf(in135.body).devices).toEqual([{ name: 'gpu-0' }]);
    await running?.close();

    await start('1.36');
    const in136 = await call('POST', `${GROUP}/v1/resourceslices`, tainted);
    expect(specOf(in136.body).devices).toEqual([
      { name: 'gpu-0', taints: [expect.objectContaining({ key: 'k', effect: 'NoSchedule' })] },
    ]);
  });

  describe('slice layout', () => {
    const withCounters = (devices: number): Json => ({
      metadata: { name: 'mixed' },
      spec: {
        driver: 'gpu.example.com',
        nodeName: 'node-a',
        pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
        sharedCounters: [{ name: 'gpu-0-counters', counters: { memory: { value: '40Gi' } } }],
        devices: Array.from({ length: devices }, (_, i) => ({
          name: `gpu-${i}`,
          consumesCounters: [
            { counterSet: 'gpu-0-counters', counters: { memory: { value: '1Gi' } } },
          ],
        })),
      },
    });

    it('up to 1.34, counter sets sit beside devices and 128 devices may consume counters', async () => {
      await start('1.34', { DRAPartitionableDevices: true });
      const res = await call('POST', `${GROUP}/v1/resourceslices`, withCounters(65));
      expect(res.status).toBe(201);
    });

    it('from 1.35, counter sets need a slice of their own and 64 devices is the cap', async () => {
      await start('1.35', { DRAPartitionableDevices: true });
      const res = await call('POST', `${GROUP}/v1/resourceslices`, withCounters(65));
      expect(res.status).toBe(422);
      const causes = (res.body.details as { causes: { field: string; message: string }[] }).causes;
      expect(causes).toEqual([
        expect.objectContaining({
          field: 'spec',
          message: 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        }),
        expect.objectContaining({
          field: 'spec.devices',
          message: 'Too many: 65: must have at most 64 items',
        }),
      ]);
    });
  });
});
