import { createWriteStream, existsSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SupervisedProcess, inheritedEnv, repoRoot } from '@slicekeeper/local-stack';
import { System } from './harness';

/** Debian's interpreter, with python3-grpcio and python3-protobuf (not a pyenv one on PATH). */
const PYTHON = '/usr/bin/python3';
const EXAMPLE = join(repoRoot, 'clients/python/examples/example_driver.py');
const NODE = 'node-a';
const DRIVER = 'gpu.python.example.com';

/** A published device as kubectl shows it, with the fields this scenario reads. */
interface PublishedDevice {
  name: string;
  attributes?: Record<string, Record<string, unknown>>;
  capacity?: Record<string, { value: string }>;
}

describe('a driver written with the Python SDK (clients/python/examples/example_driver.py)', () => {
  let system: System;
  let driver: SupervisedProcess | undefined;
  let log: WriteStream | undefined;
  let gpusFile: string;
  let socket: string;

  beforeAll(async () => {
    system = await System.start({ name: 'python-driver', nodes: [NODE] });
  }, 90_000);

  afterAll(async () => {
    await driver?.stop(5000);
    await new Promise((resolve) => log?.end(resolve));
    await system.close();
  });

  const running = (): SupervisedProcess => {
    if (driver?.running !== true)
      throw new Error('the Python driver of the first scenario is not running');
    return driver;
  };
  const slicesOf = async () =>
    (await system.kubectlSlices()).filter((s) => s.spec.driver === DRIVER);
  const devicesOf = async () =>
    (await slicesOf()).flatMap((s) => (s.spec.devices ?? []) as PublishedDevice[]);

  it('registers itself, and its GPUs are published as it sent them', async () => {
    const dir = join(system.stateDir, 'python-driver');
    await mkdir(dir, { recursive: true });
    gpusFile = join(dir, 'gpus');
    const tokenFile = join(dir, 'token');
    await writeFile(gpusFile, '3\n');
    await writeFile(tokenFile, `${system.nodeToken(NODE)}\n`, { mode: 0o600 });
    // Under the system's socket directory: the API and the watcher dial only there.
    socket = join(system.stateDir, 'sockets', NODE, `${DRIVER}.sock`);
    const out = createWriteStream(join(repoRoot, 'reports/e2e/python-driver/python-driver.log'));
    log = out;
    driver = new SupervisedProcess({
      name: 'python-driver',
      command: PYTHON,
      args: [EXAMPLE],
      env: {
        ...inheritedEnv(process.env, ['PATH', 'HOME', 'LANG']),
        PYTHONDONTWRITEBYTECODE: '1',
        NODE_NAME: NODE,
        DRIVER_NAME: DRIVER,
        ENDPOINT: `unix://${socket}`,
        REGISTRATION_API_URL: system.apiUrl,
        REGISTRATION_TOKEN_FILE: tokenFile,
        GPUS_FILE: gpusFile,
      },
      onLine: (line) => out.write(`${line}\n`),
    });

    await driver.waitForLog('registered', 'registered', 60_000);
    await system.until(
      'the Python driver synced',
      async () => (await system.status(NODE, DRIVER))?.sync?.outcome === 'synced',
    );
    const slices = await slicesOf();
    expect(slices).toHaveLength(1);
    expect(slices[0]?.spec.nodeName).toBe(NODE);
    // Pool "" in the inventory: the node's name.
    expect(slices[0]?.spec.pool.name).toBe(NODE);
    const devices = await devicesOf();
    expect(devices.map((d) => d.name).sort()).toEqual(['gpu-0', 'gpu-1', 'gpu-2']);
    expect(devices.find((d) => d.name === 'gpu-1')).toEqual({
      name: 'gpu-1',
      attributes: {
        model: { string: 'H100-SXM5-80GB' },
        uuid: { string: 'GPU-6f1c2a4e-8d3b-4c5a-9e7f-000000000001' },
        index: { int: 1 },
        driverVersion: { version: '550.54.15' },
      },
      capacity: { memory: { value: '80Gi' } },
    });

    // What slicekeeper told the driver, through the SDK's callbacks (logged as JSON lines).
    await driver.waitForLog(
      (e) => e.msg === 'registration status' && e.plugin_registered === true,
      'its registration status',
    );
    const feedback = await driver.waitForLog(
      (e) => e.msg === 'publish feedback' && e.outcome === 'synced',
      'publish feedback (synced)',
    );
    expect(feedback).toMatchObject({ node: NODE, slices: [slices[0]?.metadata.name] });
  }, 90_000);

  it('publishes one GPU fewer on SIGHUP, and the slice follows', async () => {
    await writeFile(gpusFile, '2\n');
    running().signal('SIGHUP');
    await system.until('two GPUs published', async () => (await devicesOf()).length === 2);
    expect((await devicesOf()).map((d) => d.name).sort()).toEqual(['gpu-0', 'gpu-1']);
    expect(await slicesOf()).toHaveLength(1);
  }, 60_000);

  it('stops on SIGTERM: deregisters, removes its socket and exits 0', async () => {
    expect(await running().stop(10_000)).toBe(0);
    expect(existsSync(socket)).toBe(false);
    // Deregistered: the API no longer knows the plugin (404). Its slices stay for the API's
    // removal grace (30 s), so that a driver restarted in time causes no write.
    expect(await system.status(NODE, DRIVER)).toBeUndefined();
    expect((await devicesOf()).map((d) => d.name).sort()).toEqual(['gpu-0', 'gpu-1']);
  }, 30_000);
});
