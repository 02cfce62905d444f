import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@slicekeeper/testing';
import { socketDirectory } from './registration-directory';

/** A listening unix socket at `path`. */
async function listen(path: string): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
  });
}

describe('socketDirectory', () => {
  let dir: string;
  const servers: Server[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sk-registry-'));
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map(close));
    await rm(dir, { recursive: true, force: true });
  });

  it('lists sockets and symlinks, not files, directories or dot entries (kubelet ignores those)', async () => {
    const registry = socketDirectory(join(dir, 'registry'));
    await registry.prepare();
    servers.push(await listen(join(dir, 'registry', 'gpu.sock')));
    servers.push(await listen(join(dir, 'registry', '.hidden.sock')));
    servers.push(await listen(join(dir, 'elsewhere.sock')));
    await symlink(join(dir, 'elsewhere.sock'), join(dir, 'registry', 'link.sock'));
    await writeFile(join(dir, 'registry', 'notes.txt'), 'not a socket');
    const found = await registry.list();
    expect([...found.keys()].sort()).toEqual([
      join(dir, 'registry', 'gpu.sock'),
      join(dir, 'registry', 'link.sock'),
    ]);
  });

  it('gives a socket bound again (a restarted driver) a new identity', async () => {
    const registry = socketDirectory(dir);
    const path = join(dir, 'gpu.sock');
    const first = await listen(path);
    const before = (await registry.list()).get(path);
    await close(first);
    servers.push(await listen(path));
    const after = (await registry.list()).get(path);
    expect(before).toEqual(expect.any(String));
    expect(after).toEqual(expect.any(String));
    expect(after).not.toBe(before);
  });

  it('reports a change when a socket appears, and lists nothing for a directory that is gone', async () => {
    const registry = socketDirectory(dir);
    let changes = 0;
    const watch = registry.watch(
      () => changes++,
      () => undefined,
    );
    try {
      servers.push(await listen(join(dir, 'gpu.sock')));
      await waitFor(() => changes > 0, { timeoutMs: 5000, description: 'a change event' });
    } finally {
      watch.close();
    }
    expect((await socketDirectory(join(dir, 'missing')).list()).size).toBe(0);
  });
});
