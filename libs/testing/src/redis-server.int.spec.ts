import { connect as netConnect } from 'node:net';
import { Redis } from 'ioredis';
import { RedisServer } from './redis-server';
import { uniquePrefix } from './unique-prefix';

describe('RedisServer', () => {
  it('starts a private server on a free port and stops it', async () => {
    const server = await RedisServer.start();
    const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await client.connect();
      expect(await client.ping()).toBe('PONG');
      expect(server.port).not.toBe(6379);
    } finally {
      client.disconnect();
      await server.stop();
    }
    await expect(connect(server.port)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('keeps the data across a crash when append-only', async () => {
    const server = await RedisServer.start({ appendOnly: true });
    try {
      const before = new Redis(server.url);
      await before.set('k', 'v');
      before.disconnect();
      await server.kill();
      await server.restart();
      const after = new Redis(server.url);
      expect(await after.get('k')).toBe('v');
      after.disconnect();
    } finally {
      await server.stop();
    }
  });

  it('comes back empty when asked to, even when append-only', async () => {
    const server = await RedisServer.start({ appendOnly: true });
    try {
      const before = new Redis(server.url);
      await before.set('k', 'v');
      before.disconnect();
      await server.kill();
      await server.restart({ empty: true });
      const after = new Redis(server.url);
      expect(await after.dbsize()).toBe(0);
      await after.set('k2', 'v2');
      after.disconnect();
      await server.restart();
      const again = new Redis(server.url);
      expect(await again.get('k2')).toBe('v2');
      again.disconnect();
    } finally {
      await server.stop();
    }
  });

  it('loses the data across a restart when not append-only', async () => {
    const server = await RedisServer.start();
    try {
      const before = new Redis(server.url);
      await before.set('k', 'v');
      before.disconnect();
      await server.restart();
      const after = new Redis(server.url);
      expect(await after.get('k')).toBeNull();
      after.disconnect();
    } finally {
      await server.stop();
    }
  });
});

describe('uniquePrefix', () => {
  it('never repeats', () => {
    const prefixes = new Set(Array.from({ length: 1000 }, () => uniquePrefix('a')));
    expect(prefixes.size).toBe(1000);
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
