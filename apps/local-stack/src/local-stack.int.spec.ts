import { execFile, execFileSync } from 'node:child_process';
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
  readonly startedAt = Date.now();

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

  it('publishes both drivers’ slices within 10 s, visible with kubectl, and stops everything on SIGINT', async () => {
    const stack = new StackProcess({ STATE_DIR: join(stateDir, 'ok') });
    started.push(stack);
    const kubeconfig = join(stateDir, 'ok', 'kubeconfig');

    const slices = await waitFor(
      async () => {
        const found = await kubectlSlices(kubeconfig);
        const nodes = new Set(
          found.filter((s) => s.driver === 'gpu.example.com').map((s) => s.node),
        );
        return nodes.has('node-a') && nodes.has('node-b') ? found : undefined;
      },
      {
        timeoutMs: 10_000 - (Date.now() - stack.startedAt),
        intervalMs: 250,
        description: 'slices',
      },
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\n--- stack output ---\n${stack.output()}`);
    });
    expect(Date.now() - stack.startedAt).toBeLessThanOrEqual(10_000);
    expect(slices.map((s) => s.node).sort()).toEqual(['node-a', 'node-b']);

    await waitFor(() => stack.hasLine(/^\[local-stack\] +ready in /), {
      timeoutMs: 20_000,
      description: 'the ready line',
    });
    expect(stack.hasLine(/kubectl --kubeconfig \S+ get resourceslices$/)).toBe(true);
    expect(stack.hasLine(/API docs +http:\/\/127\.0\.0\.1:\d+\/docs$/)).toBe(true);
    expect(stack.hasLine(/^\[slice-syncer-2\] +INFO +started /)).toBe(true);

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
  }, 60_000);

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
