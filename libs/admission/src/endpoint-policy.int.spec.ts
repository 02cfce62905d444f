import { mkdir, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EndpointPolicy } from './endpoint-policy';
import { GrpcPluginProber } from './plugin-prober';

/** A unix socket that counts the connections it gets. */
async function listeningSocket(
  path: string,
): Promise<{ server: Server; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  return { server, connections: () => connections };
}

describe('EndpointPolicy on a real file system', () => {
  let root: string;
  let sockets: string;
  let outside: { server: Server; connections: () => number };
  let inside: { server: Server; connections: () => number };
  let policy: EndpointPolicy;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sk-policy-'));
    sockets = join(root, 'plugins');
    await mkdir(join(sockets, 'gpu'), { recursive: true });
    await mkdir(join(root, 'host'));
    // The socket a hostile registration wants reached: outside every allowed directory.
    outside = await listeningSocket(join(root, 'host', 'docker.sock'));
    inside = await listeningSocket(join(sockets, 'gpu', 'plugin.sock'));
    await symlink(join(root, 'host', 'docker.sock'), join(sockets, 'evil.sock'));
    await symlink(join(root, 'host'), join(sockets, 'evil-dir'));
    await symlink(join(root, 'host', 'gone.sock'), join(sockets, 'dangling.sock'));
    await symlink(join(sockets, 'gpu'), join(sockets, 'gpu-link'));
    await symlink(sockets, join(root, 'plugins-link'));
    policy = new EndpointPolicy({ socketDirectories: [sockets] });
  });
  afterAll(async () => {
    await new Promise((resolve) => outside.server.close(resolve));
    await new Promise((resolve) => inside.server.close(resolve));
    await rm(root, { recursive: true, force: true });
  });

  it.each([
    ['a symlinked socket', 'evil.sock', 'host/docker.sock'],
    ['a socket in a symlinked directory', 'evil-dir/docker.sock', 'host/docker.sock'],
  ])('refuses %s that leads outside the directories', async (_name, path, real) => {
    const endpoint = `unix://${join(sockets, path)}`;
    // Worked out before the call: a rejection left unhandled while these awaits ran would fail
    // the test on its own, depending on which I/O finished first.
    const message = `endpoint "${endpoint}": the socket is really ${join(await realpath(root), real)}, outside the allowed directories (${await realpath(sockets)})`;
    await expect(policy.admit(endpoint)).rejects.toMatchObject({
      code: 'endpoint-forbidden',
      message,
    });
    // And so registration never dials it.
    expect(outside.connections()).toBe(0);
  });

  it('refuses a dangling symlink, which could be pointed anywhere before the dial', async () => {
    const endpoint = `unix://${join(sockets, 'dangling.sock')}`;
    await expect(policy.admit(endpoint)).rejects.toMatchObject({
      code: 'endpoint-forbidden',
      message: `endpoint "${endpoint}": the socket is a symlink to nothing`,
    });
  });

  it('dials the real path of a socket inside the directories, symlinks and all', async () => {
    const real = join(await realpath(sockets), 'gpu', 'plugin.sock');
    for (const endpoint of [
      `unix://${join(sockets, 'gpu', 'plugin.sock')}`,
      `unix://${join(sockets, 'gpu-link', 'plugin.sock')}`,
    ]) {
      await expect(policy.admit(endpoint)).resolves.toMatchObject({
        endpoint,
        target: `unix://${real}`,
      });
    }
    // A configured directory that is itself a symlink counts as where it leads.
    const linked = new EndpointPolicy({ socketDirectories: [join(root, 'plugins-link')] });
    await expect(
      linked.admit(`unix://${join(root, 'plugins-link', 'gpu', 'plugin.sock')}`),
    ).resolves.toMatchObject({ target: `unix://${real}` });
  });

  it('admits a socket not created yet, to be dialled at its real path', async () => {
    const endpoint = `unix://${join(sockets, 'gpu-link', 'later.sock')}`;
    await expect(policy.admit(endpoint)).resolves.toMatchObject({
      target: `unix://${join(await realpath(sockets), 'gpu', 'later.sock')}`,
    });
  });

  it('reports a socket directory that does not exist as unreachable', async () => {
    const endpoint = `unix://${join(sockets, 'nic', 'plugin.sock')}`;
    await expect(policy.admit(endpoint)).rejects.toMatchObject({
      code: 'plugin-unreachable',
      message: expect.stringMatching(
        new RegExp(`^endpoint "${endpoint}": socket directory .*: ENOENT`),
      ) as unknown,
    });
  });

  // As the registration API does: admit, then probe what was admitted.
  it('never lets the prober reach a socket behind a symlink', async () => {
    const prober = new GrpcPluginProber({ dialTimeoutMs: 60_000 });
    const before = outside.connections();
    await expect(
      policy
        .admit(`unix://${join(sockets, 'evil.sock')}`)
        .then((admitted) => prober.connect(admitted)),
    ).rejects.toMatchObject({ code: 'endpoint-forbidden' });
    expect(outside.connections()).toBe(before);
  }, 10_000);
});
