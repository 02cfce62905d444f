import { createWriteStream, existsSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { DriverServer } from '@slicekeeper/driver-kit';
import { SupervisedProcess, inheritedEnv, repoRoot } from '@slicekeeper/local-stack';
import type { LogEntry } from '@slicekeeper/local-stack';
import type { kubeletDra } from '@slicekeeper/proto';
import { Kubelet130Driver, System, gpuInventory } from './harness';

/** Debian's interpreter, with python3-grpcio and python3-protobuf (not a pyenv one on PATH). */
const PYTHON = '/usr/bin/python3';
const EXAMPLE = join(repoRoot, 'clients/python/examples/example_driver.py');
const NODE = 'node-a';

/**
 * Kubelet-style discovery, every service a process: the plugin-watcher runs in node mode for
 * node-a with a registration directory and the node's token, as the node-mode DaemonSet does
 * with its projected ServiceAccount token. The drivers only put sockets into that directory;
 * none of them has a token or calls the registration API.
 */
describe('kubelet-style plugin discovery (node-mode watcher, registration directory)', () => {
  let system: System;
  const drivers: { close(): Promise<unknown> }[] = [];
  let pythonLog: WriteStream | undefined;

  beforeAll(async () => {
    system = await System.start({
      name: 'plugin-discovery',
      nodes: [NODE],
      discoveryNode: NODE,
      // Short, so that the withdrawal after a socket goes is seen within the test.
      apiEnv: { REMOVAL_GRACE: '2s' },
    });
  }, 90_000);

  afterAll(async () => {
    await Promise.all(drivers.map((d) => d.close().catch(() => undefined)));
    await new Promise((resolve) => pythonLog?.end(resolve));
    await system.close();
  });

  const devicesOf = async (driver: string): Promise<string[]> =>
    (await system.kubectlSlices())
      .filter((s) => s.spec.driver === driver)
      .flatMap((s) => (s.spec.devices ?? []).map((d) => (d as { name: string }).name))
      .sort();
  const watcherLines = async (msg: string, socket: string): Promise<LogEntry[]> =>
    (await system.logEntries('plugin-watcher')).filter((e) => e.msg === msg && e.socket === socket);
  const untilLogged = (msg: string, socket: string) =>
    system.until(
      `the watcher logs "${msg}" for ${socket}`,
      async () => (await watcherLines(msg, socket)).length > 0,
    );

  it('a driver-kit driver that only serves its socket in the directory is registered, streamed and published, and told so', async () => {
    const driver = 'ts.disc.example.com';
    const server = new DriverServer({
      driverName: driver,
      registrationDirectory: system.registrationDir,
      inventory: gpuInventory({ devices: 2 }),
    });
    drivers.push(server);
    const endpoint = await server.start();
    const socket = endpoint.slice('unix://'.length);

    await system.until(
      'the discovered driver synced',
      async () => (await system.status(NODE, driver))?.sync?.outcome === 'synced',
    );
    expect(await devicesOf(driver)).toEqual(['gpu-0', 'gpu-1']);
    // Registered under the watcher's node with the socket it found.
    expect((await system.status(NODE, driver))?.registrations).toEqual([
      expect.objectContaining({ node: NODE, driver, endpoint }),
    ]);
    expect(server.registrationStatus).toMatchObject({ pluginRegistered: true });
    expect(await watcherLines('plugin socket found', socket)).toHaveLength(1);
    expect(await watcherLines('plugin registered', socket)).toEqual([
      expect.objectContaining({ driver, endpoint }),
    ]);
  }, 60_000);

  it('the socket removed, the plugin is deregistered and its slices withdrawn after the removal grace', async () => {
    const driver = 'ts.disc.example.com';
    const server = drivers[0];
    if (server === undefined) throw new Error('the driver of the first scenario is not running');
    const socket = join(system.registrationDir, `${driver}.sock`);
    await server.close();
    expect(existsSync(socket)).toBe(false);
    await untilLogged('plugin deregistered', socket);
    expect(await system.status(NODE, driver)).toBeUndefined();
    await system.until('its slices withdrawn', async () => (await devicesOf(driver)).length === 0);
  }, 60_000);

  it('a Python SDK driver in discovery mode is registered and published, and withdrawn when it stops', async () => {
    const driver = 'py.disc.example.com';
    const socket = join(system.registrationDir, `${driver}.sock`);
    const out = createWriteStream(join(repoRoot, 'reports/e2e/plugin-discovery/python-driver.log'));
    pythonLog = out;
    const python = new SupervisedProcess({
      name: 'python-driver',
      command: PYTHON,
      args: [EXAMPLE],
      env: {
        ...inheritedEnv(process.env, ['PATH', 'HOME', 'LANG']),
        PYTHONDONTWRITEBYTECODE: '1',
        NODE_NAME: NODE,
        DRIVER_NAME: driver,
        REGISTRATION_DIR: system.registrationDir,
        GPUS: '3',
      },
      onLine: (line) => out.write(`${line}\n`),
    });
    drivers.push({ close: () => python.stop(5000) });

    await python.waitForLog(
      (e) => e.msg === 'registration status' && e.plugin_registered === true,
      'the watcher telling it it is registered',
      30_000,
    );
    await system.until(
      'the Python driver published',
      async () => (await devicesOf(driver)).length === 3,
    );
    expect((await system.status(NODE, driver))?.registrations).toEqual([
      expect.objectContaining({ endpoint: `unix://${socket}` }),
    ]);

    expect(await python.stop(10_000)).toBe(0);
    expect(existsSync(socket)).toBe(false);
    await untilLogged('plugin deregistered', socket);
    await system.until('its slices withdrawn', async () => (await devicesOf(driver)).length === 0);
  }, 90_000);

  it('a socket that is a symlink out of the allowed directories is refused: never dialled, never registered', async () => {
    const driver = 'out.disc.example.com';
    const outside = join(system.stateDir, 'outside');
    await mkdir(outside, { recursive: true });
    // A working plugin: were it dialled, it would answer and be registered.
    const server = new DriverServer({
      driverName: driver,
      endpoint: `unix://${join(outside, `${driver}.sock`)}`,
      inventory: gpuInventory({ devices: 1 }),
    });
    drivers.push(server);
    await server.start();
    const link = join(system.registrationDir, `${driver}.sock`);
    await symlink(join(outside, `${driver}.sock`), link);

    await untilLogged('plugin socket refused', link);
    const [refused] = await watcherLines('plugin socket refused', link);
    expect(refused?.err).toEqual(expect.stringContaining('outside'));
    expect(server.registrationStatus).toBeUndefined();
    expect(server.watchCalls).toBe(0);
    expect(await system.status(NODE, driver)).toBeUndefined();
  }, 60_000);

  it('a kubelet-1.30-style driver whose registration socket is in the directory publishes with no registration call of its own', async () => {
    const driver = 'k130.disc.example.com';
    const resources: kubeletDra.NodeListAndWatchResourcesResponse = {
      resources: [
        {
          namedResources: {
            instances: [{ name: 'gpu-0', attributes: [] }],
          },
        },
      ],
    };
    const k130 = await Kubelet130Driver.start(system, {
      node: NODE,
      driver,
      resources,
      registrationDirectory: system.registrationDir,
    });
    drivers.push(k130);
    await system.until(
      'the kubelet 1.30 driver synced',
      async () => (await system.status(NODE, driver))?.sync?.outcome === 'synced',
    );
    expect(await devicesOf(driver)).toEqual(['gpu-0']);
    // GetInfo named the service socket: that is what is registered and streamed.
    expect((await system.status(NODE, driver))?.registrations).toEqual([
      expect.objectContaining({
        version: '1.0.0',
        endpoint: `unix://${join(system.stateDir, 'sockets', NODE, `${driver}-130.sock`)}`,
      }),
    ]);
    // Told once, by the watcher: it registered the socket as probedOnNode, and the API, which
    // in a cluster cannot reach a socket on another node, dialled nothing.
    expect(k130.told).toEqual([expect.objectContaining({ pluginRegistered: true })]);
    expect(
      (await system.logEntries('registration-api')).filter(
        (e) => e.msg === 'registered' && e.driver === driver,
      ),
    ).toEqual([expect.objectContaining({ probedOnNode: true })]);
  }, 60_000);
});
