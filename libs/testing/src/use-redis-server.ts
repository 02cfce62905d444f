import { Redis } from 'ioredis';
import { RedisServer } from '@slicekeeper/local-stack';

/** A spec file's private Redis, see {@link useRedisServer}. */
export interface TestRedis {
  readonly server: RedisServer;
  /** A client connection, for the spec's own reads and writes. */
  readonly redis: Redis;
}

/**
 * Gives the calling spec file (or describe block) a private `redis-server` on a free loopback
 * port, started before its tests and stopped after them, with one client connection. Read the
 * fields inside tests and hooks, not at the top level: they exist once `beforeAll` ran.
 */
export function useRedisServer(): TestRedis {
  let started: TestRedis | undefined;
  beforeAll(async () => {
    const server = await RedisServer.start();
    started = { server, redis: new Redis(server.url) };
  });
  afterAll(async () => {
    started?.redis.disconnect();
    await started?.server.stop();
  });
  const get = (): TestRedis => {
    if (started === undefined) throw new Error('useRedisServer: read before beforeAll ran');
    return started;
  };
  return {
    get server() {
      return get().server;
    },
    get redis() {
      return get().redis;
    },
  };
}
