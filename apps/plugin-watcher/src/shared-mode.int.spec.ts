import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { redisKeys } from '@slicekeeper/state/testing';
import type { DriverInventory } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import { RegistrationStore } from '@slicekeeper/state';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';

const ROOT = resolve(__dirname, '../../..');
const MAIN = join(ROOT, 'apps/plugin-watcher/src/main.ts');
const DRIVER = 'gpu.example.com';
const NODES = Array.from({ length: 12 }, (_, i) => `node-${i}`);
const LEASE_MS = 1000;

const inventory: DriverInventory = {
  pools: [{ name: '', scope: { kind: 'node' }, devices: [{ name: 'gpu-0' }] }],
};

describe('plugin-watcher processes in shared mode', () => {
  let server: RedisServer;
  let redis: Redis;
  let dir: string;
  const prefix = uniquePrefix('shared');
  const drivers = new Map<string, DriverServer>();
  const children: ChildProcess[] = [];
  /** The watchers' stderr, shown when a wait times out. */
  const output: string[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
    dir = await mkdtemp(join(tmpdir(), 'sk-shared-'));
    const registry = new RegistrationStore({ redis, prefix });
    for (const node of NODES) {
      const plugin = new DriverServer({
        driverName: DRIVER,
        endpoint: `unix://${join(dir, `${node}.sock`)}`,
        inventory,
      });
      await plugin.start();
      drivers.set(node, plugin);
      await registry.add({
        node,
        driver: DRIVER,
        endpoint: plugin.endpoint,
        version: 'v1.ResourcePublisher',
      });
    }
  });

  afterAll(async () => {
    await Promise.all(children.map(stop));
    await Promise.all([...drivers.values()].map((d) => d.close()));
    redis.disconnect();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function startWatcher(replicaId: string): ChildProcess {
    // node itself with tsx as a loader (not the tsx CLI, which would run node as a child that
    // SIGKILL does not reach).
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=@slicekeeper/source', MAIN],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          REDIS_URL: server.url,
          REDIS_PREFIX: prefix,
          PLUGIN_SOCKET_DIRS: dir,
          WATCHER_MODE: 'shared',
          REPLICA_ID: replicaId,
          LEASE_DURATION: `${LEASE_MS}ms`,
          PROBE_PORT: '0',
          PROBE_HOST: '127.0.0.1',
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    child.stderr.on('data', (chunk: Buffer) => {
      output.push(`${replicaId}: ${chunk.toString()}`);
    });
    children.push(child);
    return child;
  }

  async function owners(): Promise<Map<string, string | null>> {
    const keys = redisKeys(prefix);
    const values = await Promise.all(
      NODES.map((node) => redis.get(keys.watcherLease({ node, driver: DRIVER }))),
    );
    return new Map(NODES.map((node, i) => [node, values[i] ?? null]));
  }

  it('splits the plugins between replicas; a survivor takes over a killed one’s once its leases expire', async () => {
    const a = startWatcher('replica-a');
    startWatcher('replica-b');
    await waitFor(
      async () => {
        const held = [...(await owners()).values()];
        return held.includes('replica-a') && held.includes('replica-b') && !held.includes(null);
      },
      { timeoutMs: 30_000, description: `both replicas holding leases\n${output.join('')}` },
    );
    // Every plugin streamed by exactly one replica.
    await waitFor(() => [...drivers.values()].every((d) => d.openStreams === 1), {
      timeoutMs: 10_000,
      description: 'one stream per plugin',
    });
    const ofA = [...(await owners())].filter(([, owner]) => owner === 'replica-a').map(([n]) => n);
    const callsBefore = new Map(ofA.map((node) => [node, drivers.get(node)?.watchCalls ?? 0]));

    // A killed replica releases nothing: its plugins move only when its leases expire.
    a.kill('SIGKILL');
    await waitFor(
      async () =>
        [...(await owners()).values()].every((owner) => owner === 'replica-b') &&
        ofA.every((node) => {
          const plugin = drivers.get(node);
          return (
            plugin !== undefined &&
            plugin.openStreams === 1 &&
            plugin.watchCalls > (callsBefore.get(node) ?? 0)
          );
        }),
      { timeoutMs: 30_000, intervalMs: 50, description: 'replica-b streaming every plugin' },
    );
    expect([...drivers.values()].every((d) => d.openStreams === 1)).toBe(true);
  }, 60_000);
});

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}
