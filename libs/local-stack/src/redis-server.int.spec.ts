import { connect as netConnect } from 'node:net';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisServer } from './redis-server';

/** Runs `body` with a client of `server`, disconnected afterwards. */
async function withClient<T>(server: RedisServer, body: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(server.url, { maxRetriesPerRequest: 0 });
  try {
    return await body(client);
  } finally {
    client.disconnect();
  }
}

describe('RedisServer', () => {
  it('starts a private server on a free port and stops it', async () => {
    const server = await RedisServer.start();
    try {
      expect(await withClient(server, (client) => client.ping())).toBe('PONG');
      expect(server.port).not.toBe(6379);
    } finally {
      await server.stop();
    }
    await expect(connect(server.port)).rejects.toThrow(/ECONNREFUSED/);
    await expect(readdir(server.dir)).rejects.toThrow(/ENOENT/);
  });

  it('keeps the data across a crash when append-only', async () => {
    const server = await RedisServer.start({ appendOnly: true });
    try {
      await withClient(server, (client) => client.set('k', 'v'));
      await server.kill();
      await server.restart();
      expect(await withClient(server, (client) => client.get('k'))).toBe('v');
    } finally {
      await server.stop();
    }
  });

  it('comes back empty when asked to, even when append-only', async () => {
    const server = await RedisServer.start({ appendOnly: true });
    try {
      await withClient(server, (client) => client.set('k', 'v'));
      await server.kill();
      await server.restart({ empty: true });
      expect(await withClient(server, (client) => client.dbsize())).toBe(0);
      await withClient(server, (client) => client.set('k2', 'v2'));
      await server.restart();
      expect(await withClient(server, (client) => client.get('k2'))).toBe('v2');
    } finally {
      await server.stop();
    }
  });

  it('loses the data across a restart when not append-only', async () => {
    const server = await RedisServer.start();
    try {
      await withClient(server, (client) => client.set('k', 'v'));
      await server.restart();
      expect(await withClient(server, (client) => client.get('k'))).toBeNull();
    } finally {
      await server.stop();
    }
  });

  it('keeps a directory it was given', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'redis-server-spec-'));
    try {
      const server = await RedisServer.start({ dir });
      await server.stop();
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

function connect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1', () => {
      socket.end();
      resolve();
    });
    socket.once('error', reject);
  });
}
