import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SupervisedProcess, tsxCommand } from '@slicekeeper/local-stack';
import { repoRoot, waitFor } from '@slicekeeper/testing';

const run = promisify(execFile);

/** `npm start`, as a user runs it, with its own state directory. */
class StackProcess {
  readonly process: SupervisedProcess;
  readonly lines: string[] = [];

  constructor(env: Record<string, string>) {
    this.process = new SupervisedProcess({
      name: 'npm start',
      ...tsxCommand(join(repoRoot, 'apps/local-stack/src/main.ts')),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NO_COLOR: '1', ...env },
      onLine: (line) => this.lines.push(line),
    });
  }

  hasLine(pattern: RegExp): boolean {
    return this.lines.some((line) => pattern.test(line));
  }

  countLines(pattern: RegExp): number {
    return this.lines.filter((line) => pattern.test(line)).length;
  }

  /** Waits for a line of the stack's output; fails with the whole output. */
  async waitForLine(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    await waitFor(() => this.hasLine(pattern), {
      timeoutMs,
      description: `a line ${String(pattern)}\n--- stack output ---\n${this.output()}`,
    });
  }

  /**
   * Waits for the whole ready summary, through its last line: its lines are written one at a
   * time, so the ready line can be read before the ones after it.
   */
  async untilReady(): Promise<void> {
    await this.waitForLine(/^\[local-stack\] +ready in /, 60_000);
    await this.waitForLine(/^\[local-stack\] +A process that dies .* Ctrl-C stops everything\.$/);
  }

  /** Every process the stack started (its direct children), by pid. */
  childPids(): number[] {
    try {
      return execFileSync('pgrep', ['-P', String(this.process.pid)], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map(Number);
    } catch {
      return []; // pgrep exits 1 when there are none.
    }
  }

  output(): string {
    return this.lines.join('\n');
  }

  /** The exit code, or 'timeout' when the stack is still running after `ms`. */
  async exitWithin(ms: number): Promise<number | NodeJS.Signals | 'timeout'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        resolve('timeout');
      }, ms);
    });
    try {
      return await Promise.race([this.process.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The child of the stack that runs with `variable=value` in its environment (Linux's /proc). */
function childWithEnv(stack: StackProcess, variable: string, value: string): number {
  const pid = stack.childPids().find((child) => {
    try {
      return readFileSync(`/proc/${child}/environ`, 'utf8')
        .split('\0')
        .includes(`${variable}=${value}`);
    } catch {
      return false; // Gone meanwhile.
    }
  });
  if (pid === undefined) throw new Error(`no child of the stack with ${variable}=${value}`);
  return pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The ResourceSlices kubectl sees: node → driver of each. */
async function kubectlSlices(kubeconfig: string): Promise<{ node: string; driver: string }[]> {
  const { stdout } = await run(
    'kubectl',
    ['--kubeconfig', kubeconfig, 'get', 'resourceslices', '-o', 'json', '--request-timeout=2s'],
    { timeout: 5000 },
  );
  const list = JSON.parse(stdout) as { items: { spec: { nodeName?: string; driver: string } }[] };
  return list.items.map((item) => ({ node: item.spec.nodeName ?? '', driver: item.spec.driver }));
}

describe('npm start (the local stack)', () => {
  let stateDir: string;
  const started: StackProcess[] = [];
  const pidsSeen = new Set<number>();
  let blocker: Server | undefined;

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'sk-stack-'));
  });

  afterAll(async () => {
    for (const stack of started) {
      for (const pid of stack.childPids()) pidsSeen.add(pid);
      await stack.process.kill();
    }
    for (const pid of pidsSeen) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await new Promise<void>((resolve) => {
      if (blocker === undefined) resolve();
      else
        blocker.close(() => {
          resolve();
        });
    });
    await rm(stateDir, { recursive: true, force: true });
  });

  it('publishes both drivers’ slices, visible with kubectl, restarts a killed driver, and stops everything on SIGINT', async () => {
    const stack = new StackProcess({ STATE_DIR: join(stateDir, 'ok') });
    started.push(stack);
    const kubectlDrivers = async (): Promise<Set<string>> =>
      new Set(
        (await kubectlSlices(join(stateDir, 'ok', 'kubeconfig')).catch(() => []))
          .filter((s) => s.driver === 'gpu.example.com')
          .map((s) => s.node),
      );

    // What the user waits for: the ready line, then the drivers' slices in kubectl.
    await stack.untilReady();
    await waitFor(async () => (await kubectlDrivers()).size === 2, {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: `slices of node-a and node-b in kubectl\n--- stack output ---\n${stack.output()}`,
    });
    expect([...(await kubectlDrivers())].sort()).toEqual(['node-a', 'node-b']);
    expect(stack.hasLine(/kubectl --kubeconfig \S+ get resourceslices$/)).toBe(true);
    expect(stack.hasLine(/API docs +http:\/\/127\.0\.0\.1:\d+\/docs$/)).toBe(true);
    expect(stack.hasLine(/^\[slice-syncer-2\] +INFO +started /)).toBe(true);

    // Killing a driver, the natural way to try driver loss, no longer ends the demo.
    const registered = /^\[example-driver-node-a\] +INFO +registered/;
    const registrations = stack.countLines(registered);
    expect(registrations).toBeGreaterThan(0);
    const driverA = childWithEnv(stack, 'NODE_NAME', 'node-a');
    pidsSeen.add(driverA);
    process.kill(driverA, 'SIGKILL');
    await stack.waitForLine(
      /^\[local-stack\] +example-driver-node-a exited \(SIGKILL\) after \d+\.\ds; restarting it in \d+\.\ds \(restart 1\)$/,
    );
    await stack.waitForLine(/^\[local-stack\] +restarted example-driver-node-a \(pid \d+\)$/);
    await waitFor(() => stack.countLines(registered) > registrations, {
      timeoutMs: 30_000,
      description: `the restarted driver registered\n--- stack output ---\n${stack.output()}`,
    });
    expect(stack.process.running).toBe(true);
    expect(childWithEnv(stack, 'NODE_NAME', 'node-a')).not.toBe(driverA);
    expect([...(await kubectlDrivers())].sort()).toEqual(['node-a', 'node-b']);

    const children = stack.childPids();
    for (const pid of children) pidsSeen.add(pid);
    // redis, the emulator, the API, the watcher, two syncers, two drivers (and tsx's esbuild).
    expect(children.length).toBeGreaterThanOrEqual(8);

    stack.process.signal('SIGINT');
    const code = await stack.exitWithin(30_000);
    expect(code).toBe(0);
    // The services are gone before the stack exits; tsx's esbuild helper leaves a moment after.
    await waitFor(() => children.filter(alive).length === 0, { timeoutMs: 2000 }).catch(
      () => undefined,
    );
    expect(children.filter(alive)).toEqual([]);
    expect(stack.hasLine(/^\[local-stack\] +stopped$/)).toBe(true);
  }, 150_000);

  it('PROFILE=nic: says the gate the profile needs is on, and kubectl shows the consumable capacity', async () => {
    const stack = new StackProcess({
      STATE_DIR: join(stateDir, 'nic'),
      PROFILE: 'nic',
      NODES: 'node-a',
      SYNCER_REPLICAS: '1',
    });
    started.push(stack);
    await stack.untilReady();
    expect(stack.hasLine(/driver profile +nic, needs DRAConsumableCapacity \(on\)$/)).toBe(true);
    expect(
      stack.hasLine(/feature gates +DRADeviceTaints=true, .*DRAConsumableCapacity=true;/),
    ).toBe(true);

    const { stdout } = await run(
      'kubectl',
      ['--kubeconfig', join(stateDir, 'nic', 'kubeconfig'), 'get', 'resourceslices', '-o', 'json'],
      { timeout: 10_000 },
    );
    const list = JSON.parse(stdout) as {
      items: {
        spec: {
          devices?: {
            name: string;
            allowMultipleAllocations?: boolean;
            capacity?: Record<string, { requestPolicy?: unknown }>;
          }[];
        };
      }[];
    };
    const devices = list.items.flatMap((item) => item.spec.devices ?? []);
    expect(devices.map((d) => [d.name, d.allowMultipleAllocations])).toEqual([
      ['nic-0', true],
      ['nic-1', true],
      ['nic-2', true],
      ['nic-3', true],
    ]);
    expect(devices[0]?.capacity?.bandwidth?.requestPolicy).toEqual({
      default: '25G',
      validRange: { min: '25G', max: '400G', step: '25G' },
    });

    stack.process.signal('SIGINT');
    expect(await stack.exitWithin(30_000)).toBe(0);
  }, 120_000);

  it('PROFILE=fabric: one driver for the cluster-scoped key, whose per-device pool kubectl shows', async () => {
    const stack = new StackProcess({
      STATE_DIR: join(stateDir, 'fabric'),
      PROFILE: 'fabric',
      NODES: 'node-a,node-b',
      SYNCER_REPLICAS: '1',
    });
    started.push(stack);
    await stack.untilReady();
    expect(stack.hasLine(/^\[local-stack\] +cluster: 1 ResourceSlice\(s\) published: /)).toBe(true);
    expect(stack.countLines(/^\[example-driver-cluster\] +INFO +registered/)).toBe(1);
    expect(stack.hasLine(/^\[example-driver-node-/)).toBe(false);
    expect(
      stack.hasLine(
        /driver profile +fabric, needs DRAPartitionableDevices \(on\), DRADeviceBindingConditions \(on\)$/,
      ),
    ).toBe(true);

    const { stdout } = await run(
      'kubectl',
      [
        '--kubeconfig',
        join(stateDir, 'fabric', 'kubeconfig'),
        'get',
        'resourceslices',
        '-o',
        'json',
      ],
      { timeout: 10_000 },
    );
    const list = JSON.parse(stdout) as {
      items: { spec: { perDeviceNodeSelection?: boolean; devices?: { name: string }[] } }[];
    };
    expect(list.items.map((item) => item.spec.perDeviceNodeSelection)).toEqual([true]);
    expect(list.items[0]?.spec.devices?.map((d) => d.name)).toEqual([
      'fabric-gpu-0',
      'fabric-gpu-1',
      'fabric-gpu-2',
    ]);

    stack.process.signal('SIGINT');
    expect(await stack.exitWithin(30_000)).toBe(0);
  }, 120_000);

  it('exits non-zero with the stderr of a service that dies at start', async () => {
    // It holds the API's port and drops whoever connects (the drivers, trying to register).
    blocker = createServer((socket) => {
      socket.destroy();
    });
    await new Promise<void>((resolve) => blocker?.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as AddressInfo).port;
    const stack = new StackProcess({ STATE_DIR: join(stateDir, 'fail'), API_PORT: String(taken) });
    started.push(stack);

    const code = await stack.exitWithin(40_000);
    expect(code).toBe(1);
    expect(stack.output()).toMatch(/failed to start: registration-api exited \(1\)/);
    expect(stack.output()).toMatch(/EADDRINUSE/);
  }, 60_000);
});
