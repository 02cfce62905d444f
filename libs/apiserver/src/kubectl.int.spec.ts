import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';

/**
 * kubectl (the real binary) against the emulator, through a kubeconfig the emulator wrote. The
 * emulator runs in this process, so kubectl is always run asynchronously. No token file: kubectl
 * does not send bearer tokens to a plain-HTTP server (auth is covered in kube-emulator.int.spec).
 */

const run = promisify(execFile);
const KUBECTL = '/usr/bin/kubectl';

let dir: string;
let running: RunningKubeEmulator;

function sliceYaml(name: string, node: string): string {
  return `apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: ${name}
spec:
  driver: gpu.example.com
  nodeName: ${node}
  pool:
    name: ${node}
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    attributes:
      model:
        string: a100
    capacity:
      memory:
        value: 40Gi
`;
}

async function kubectl(
  ...args: string[]
): Promise<{ stdout: string; stderr: string; code: number }> {
  const kubeconfig = running.kubeconfigPath ?? '';
  try {
    const { stdout, stderr } = await run(
      KUBECTL,
      ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args],
      {
        timeout: 20_000,
      },
    );
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; code?: number };
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', code: failed.code ?? 1 };
  }
}

/** The table rows of `kubectl get` output, split on runs of spaces. */
function rows(stdout: string): string[][] {
  return stdout
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/));
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubectl-emulator-'));
  running = await startKubeEmulator({ kubeconfigPath: join(dir, 'kubeconfig') });
  writeFileSync(
    join(dir, 'node-a.yaml'),
    'apiVersion: v1\nkind: Node\nmetadata:\n  name: node-a\n',
  );
  writeFileSync(
    join(dir, 'slices.yaml'),
    `${sliceYaml('node-a-gpu', 'node-a')}---\n${sliceYaml('node-b-gpu', 'node-b')}`,
  );
});

afterEach(async () => {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

describe('kubectl against the emulator', () => {
  it('creates and lists nodes and resourceslices, wide and by field selector', async () => {
    expect((await kubectl('create', '-f', join(dir, 'node-a.yaml'))).stdout).toBe(
      'node/node-a created\n',
    );
    const nodes = rows((await kubectl('get', 'nodes')).stdout);
    expect(nodes[0]).toEqual(['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']);
    expect(nodes.slice(1).map((r) => r.slice(0, 3))).toEqual([['node-a', 'Unknown', '<none>']]);

    const created = await kubectl('create', '-f', join(dir, 'slices.yaml'));
    expect(created.stdout).toBe(
      'resourceslice.resource.k8s.io/node-a-gpu created\nresourceslice.resource.k8s.io/node-b-gpu created\n',
    );

    const wide = rows((await kubectl('get', 'resourceslices', '-o', 'wide')).stdout);
    expect(wide[0]).toEqual(['NAME', 'NODE', 'DRIVER', 'POOL', 'AGE']);
    expect(wide.slice(1).map((r) => r.slice(0, 4))).toEqual([
      ['node-a-gpu', 'node-a', 'gpu.example.com', 'node-a'],
      ['node-b-gpu', 'node-b', 'gpu.example.com', 'node-b'],
    ]);

    const onNodeA = rows(
      (await kubectl('get', 'resourceslices', '--field-selector', 'spec.nodeName=node-a')).stdout,
    );
    expect(onNodeA.slice(1).map((r) => r[0])).toEqual(['node-a-gpu']);

    const unsupported = await kubectl(
      'get',
      'resourceslices',
      '--field-selector',
      'spec.pool.name=node-a',
    );
    expect(unsupported.code).not.toBe(0);
    expect(unsupported.stderr).toContain(
      'field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.name',
    );
  });

  it('deletes a resourceslice, after which it is not found', async () => {
    await kubectl('create', '-f', join(dir, 'slices.yaml'));
    expect((await kubectl('delete', 'resourceslice', 'node-a-gpu')).stdout).toBe(
      'resourceslice.resource.k8s.io "node-a-gpu" deleted\n',
    );
    const gone = await kubectl('get', 'resourceslice', 'node-a-gpu');
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain('resourceslices.resource.k8s.io "node-a-gpu" not found');
  });

  it('streams ADDED and DELETED events to kubectl get --watch', async () => {
    await kubectl('create', '-f', join(dir, 'slices.yaml'));
    const child = spawn(KUBECTL, [
      '--kubeconfig',
      running.kubeconfigPath ?? '',
      '--cache-dir',
      join(dir, 'cache'),
      'get',
      'resourceslices',
      '--watch',
      '--output-watch-events',
      '--request-timeout=30s',
    ]);
    let output = '';
    const waiters: { test: RegExp; resolve: () => void }[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      for (const w of waiters) if (w.test.test(output)) w.resolve();
    });
    const seen = (test: RegExp) =>
      new Promise<void>((resolve) => {
        if (test.test(output)) resolve();
        else waiters.push({ test, resolve });
      });
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        resolve();
      });
    });
    try {
      await seen(/ADDED\s+node-b-gpu/);
      writeFileSync(join(dir, 'late.yaml'), sliceYaml('late-gpu', 'node-c'));
      await kubectl('create', '-f', join(dir, 'late.yaml'));
      await seen(/ADDED\s+late-gpu\s+node-c/);
      await kubectl('delete', 'resourceslice', 'node-a-gpu');
      await seen(/DELETED\s+node-a-gpu/);
      expect(rows(output)[0]).toEqual(['EVENT', 'NAME', 'NODE', 'DRIVER', 'POOL', 'AGE']);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
