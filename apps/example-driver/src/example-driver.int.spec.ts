import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { credentials } from '@grpc/grpc-js';
import { RESOURCE_PUBLISHER_VERSION } from '@slicekeeper/contracts';
import type { DriverInventory, Registration } from '@slicekeeper/contracts';
import { publishStatusRequest, publisher, toDriverInventory } from '@slicekeeper/proto';
import { waitFor } from '@slicekeeper/testing';
import { loadInventoryFile } from './inventory-file';
import { DRIVER_PROFILES, profileInventoryFile } from './profiles';

const ROOT = resolve(__dirname, '../../..');
const MAIN = join(ROOT, 'apps/example-driver/src/main.ts');

describe('example-driver process', () => {
  let dir: string;
  const requests: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const api = createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      requests.push(`${req.method ?? ''} ${req.url ?? ''} ${body}`.trim());
      if (req.method !== 'POST') {
        res.writeHead(204).end();
        return;
      }
      // The registration as the API stores and answers it.
      const registration: Registration = {
        ...(JSON.parse(body) as { node: string; driver: string; endpoint: string }),
        version: RESOURCE_PUBLISHER_VERSION,
        registeredAt: new Date().toISOString(),
        sequence: requests.length,
      };
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(registration));
    });
  });
  const children: ChildProcess[] = [];

  /** Runs the driver with `env`; its log entries (pino JSON lines) land in `logs`. */
  function start(env: Record<string, string>, logs?: Record<string, unknown>[]): ChildProcess {
    const started = spawn(
      process.execPath,
      ['--import', 'tsx', '--conditions=@slicekeeper/source', MAIN],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH, ...env },
        stdio: ['ignore', logs === undefined ? 'ignore' : 'pipe', 'inherit'],
      },
    );
    if (logs !== undefined && started.stdout !== null) {
      createInterface({ input: started.stdout }).on('line', (line) => {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      });
    }
    children.push(started);
    return started;
  }

  async function stop(driver: ChildProcess): Promise<void> {
    const exited = new Promise<number | null>((done) => driver.once('exit', done));
    driver.kill('SIGTERM');
    expect(await exited).toBe(0);
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sk-example-'));
    await new Promise<void>((done) => api.listen(0, '127.0.0.1', done));
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await new Promise((done) => api.close(done));
    await rm(dir, { recursive: true, force: true });
  });

  it('registers, streams its inventory file and every change to it, and deregisters on SIGTERM', async () => {
    const file = join(dir, 'inventory.json');
    await copyFile(join(ROOT, 'apps/example-driver/inventory/profiles/gpu.json'), file);
    const socket = join(dir, 'plugin.sock');
    const endpoint = `unix://${socket}`;
    const { port } = api.address() as AddressInfo;
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'node-a-token-0123456789abcdef0123456789\n');
    const driver = start({
      NODE_NAME: 'node-a',
      ENDPOINT: endpoint,
      INVENTORY_FILE: file,
      REGISTRATION_API_URL: `http://127.0.0.1:${port}`,
      REGISTRATION_TOKEN_FILE: tokenFile,
      LOG_LEVEL: 'warn',
    });
    await waitFor(() => requests.length === 1, { timeoutMs: 30_000, description: 'registration' });
    expect(JSON.parse(requests[0]?.replace('POST /v1/plugins ', '') ?? '{}')).toEqual({
      node: 'node-a',
      driver: 'gpu.example.com',
      endpoint,
    });
    expect(authorizations[0]).toBe('Bearer node-a-token-0123456789abcdef0123456789');

    const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
    const seen: DriverInventory[] = [];
    const call = client.watchResources({ nodeName: 'node-a' });
    call.on('data', (m: publisher.DriverResources) =>
      seen.push(toDriverInventory(m, { nodeName: 'node-a' })),
    );
    call.on('error', () => undefined);
    await waitFor(() => seen.length === 1);
    expect(seen[0]?.pools[0]?.name).toBe('node-a');
    expect(seen[0]?.pools[0]?.devices).toHaveLength(8);

    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace(/80Gi/g, '40Gi'));
    await waitFor(() => seen.length === 2, {
      timeoutMs: 10_000,
      description: 'file change streamed',
    });
    expect(seen[1]?.pools[0]?.devices[0]?.capacity).toEqual({ memory: { value: '40Gi' } });
    driver.kill('SIGHUP');
    await waitFor(() => seen.length === 3, { description: 'SIGHUP re-sends' });

    await stop(driver);
    call.cancel();
    client.close();
    expect(requests[1]).toBe(
      `DELETE /v1/plugins/node-a/gpu.example.com?endpoint=${encodeURIComponent(endpoint)}`,
    );
    await expect(stat(socket)).rejects.toThrow(/ENOENT/);
  }, 60_000);

  it.each(DRIVER_PROFILES.map((profile) => [profile]))(
    "PROFILE=%s: streams the profile's inventory file, every field as the file has it",
    async (profile) => {
      const node = profile === 'fabric' ? '' : 'node-a';
      const endpoint = `unix://${join(dir, `${profile}.sock`)}`;
      const logs: Record<string, unknown>[] = [];
      const driver = start({ NODE_NAME: node, ENDPOINT: endpoint, PROFILE: profile }, logs);
      await waitFor(() => logs.some((l) => l.msg === 'serving'), {
        timeoutMs: 30_000,
        description: 'driver serving',
      });
      const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
      const seen: DriverInventory[] = [];
      const call = client.watchResources({ nodeName: node });
      call.on('data', (m: publisher.DriverResources) =>
        seen.push(toDriverInventory(m, { nodeName: node })),
      );
      call.on('error', () => undefined);
      await waitFor(() => seen.length === 1);
      const file = await loadInventoryFile(profileInventoryFile(profile));
      expect(seen[0]).toEqual({
        pools: file.pools.map((pool) => ({ ...pool, name: pool.name || node })),
      });
      call.cancel();
      client.close();
      await stop(driver);
    },
    60_000,
  );

  it('streams a device health flipped in its file, and logs the feedback it gets', async () => {
    const file = join(dir, 'health.yaml');
    const inventory = (status: string) =>
      [
        'pools:',
        "  - name: ''",
        '    scope: { kind: node }',
        '    devices:',
        '      - name: gpu-0',
        `        health: { status: ${status}, message: 'checked by nvml', timeoutSeconds: 30 }`,
        '      - name: gpu-1',
        '',
      ].join('\n');
    await writeFile(file, inventory('healthy'));
    const endpoint = `unix://${join(dir, 'health.sock')}`;
    const logs: Record<string, unknown>[] = [];
    const driver = start(
      { NODE_NAME: 'node-a', ENDPOINT: endpoint, INVENTORY_FILE: file, LOG_LEVEL: 'info' },
      logs,
    );
    await waitFor(() => logs.some((l) => l.msg === 'serving'), {
      timeoutMs: 30_000,
      description: 'driver serving',
    });

    const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
    const seen: DriverInventory[] = [];
    const call = client.watchResources({ nodeName: 'node-a' });
    call.on('data', (m: publisher.DriverResources) =>
      seen.push(toDriverInventory(m, { nodeName: 'node-a' })),
    );
    call.on('error', () => undefined);
    await waitFor(() => seen.length === 1);
    expect(seen[0]?.pools[0]?.devices).toEqual([
      {
        name: 'gpu-0',
        health: { status: 'healthy', message: 'checked by nvml', timeoutSeconds: 30 },
      },
      { name: 'gpu-1' },
    ]);

    await writeFile(file, inventory('unhealthy'));
    await waitFor(() => seen.length === 2, {
      timeoutMs: 10_000,
      description: 'health change streamed',
    });
    expect(seen[1]?.pools[0]?.devices[0]?.health?.status).toBe('unhealthy');

    const request = publishStatusRequest('node-a', {
      outcome: 'synced',
      snapshotGeneration: 2,
      slices: ['00000-gpu.example.com-node-a-x7k2p'],
      pools: [{ name: 'node-a', generation: 1, sliceCount: 1, devices: 2 }],
      attempt: 1,
      startedAt: '2026-01-02T03:04:05.000Z',
      finishedAt: '2026-01-02T03:04:05.100Z',
      writes: 1,
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
    });
    await new Promise<void>((resolve, reject) => {
      client.notifyPublishStatus(request, (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    const logged = await waitFor(() => logs.find((l) => l.msg === 'publish feedback'));
    expect(logged).toMatchObject({
      level: 30,
      node: 'node-a',
      outcome: 'synced',
      snapshotGeneration: 2,
      problems: [],
      droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
      slices: ['00000-gpu.example.com-node-a-x7k2p'],
    });

    call.cancel();
    client.close();
    await stop(driver);
  }, 60_000);
});
