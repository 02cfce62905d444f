import { TRACING_OFF } from '@slicekeeper/config';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import type { RedisClient } from '@slicekeeper/queue';
import { SyncQueue } from '@slicekeeper/queue';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';
import { runService } from './run-service';
import type { RunningService, ServiceConfig, ServiceContext, ServiceParts } from './run-service';

/**
 * runService over a private redis-server: the Redis connections it opens for a service log
 * their outages once each and close after the service's parts.
 */
describe('runService with Redis', () => {
  let server: RedisServer;

  beforeEach(async () => {
    server = await RedisServer.start();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await server.stop();
  });

  /** Runs a service whose parts `build` makes; captures its exit codes, stderr and logs. */
  async function start(build: (context: ServiceContext<ServiceConfig>) => ServiceParts) {
    const exits: number[] = [];
    const stderr: string[] = [];
    const logs: Record<string, unknown>[] = [];
    const running = await runService<ServiceConfig>({
      service: 'test-service',
      loadConfig: () => ({
        ...TRACING_OFF,
        LOG_LEVEL: 'info',
        REDIS_URL: server.url,
        REDIS_TLS: false,
        SHUTDOWN_TIMEOUT: 5000,
        MEMORY_REDUCE_INTERVAL: 0,
      }),
      build,
      exit: (code) => exits.push(code),
      stderr: { write: (text: string) => stderr.push(text) },
      logDestination: new Writable({
        write: (chunk: Buffer, _encoding, callback) => {
          logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          callback();
        },
      }),
      signals: [],
    });
    expect(stderr).toEqual([]);
    return { running: running as RunningService, exits, logs };
  }

  it('logs each Redis outage once, for a connection and the queue built on it, and nothing raw', async () => {
    const rawErrors: string[] = [];
    const capture = (...args: unknown[]) => {
      rawErrors.push(args.map(String).join(' '));
    };
    jest.spyOn(console, 'error').mockImplementation(capture);
    jest.spyOn(console, 'warn').mockImplementation(capture);
    jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      capture(chunk);
      return true;
    });
    let redis: RedisClient | undefined;
    let connectionErrors = 0;
    const { running, exits, logs } = await start((service) => {
      redis = service.redis.open('test-worker');
      redis.on('error', () => {
        connectionErrors++;
      });
      const queue = new SyncQueue({ connection: redis, prefix: uniquePrefix('outage') });
      service.redis.addErrorSources(redis, queue.queue);
      return { start: () => queue.queue.waitUntilReady(), close: [queue] };
    });
    const lines = (msg: string) => logs.filter((line) => line.msg === msg);

    for (let outage = 1; outage <= 2; outage++) {
      await server.kill();
      // Several reconnect attempts fail, so that "once per outage" is put to the test.
      const seen = connectionErrors;
      await waitFor(() => connectionErrors >= seen + 3, { description: 'failed reconnects' });
      await server.restart();
      await waitFor(() => lines('redis reconnected').length === outage, {
        description: `the reconnected line of outage ${outage}`,
      });
    }
    await redis?.ping();

    expect(lines('redis unavailable')).toEqual([
      expect.objectContaining({ level: 50, service: 'test-service', connection: 'test-worker' }),
      expect.objectContaining({ level: 50, service: 'test-service', connection: 'test-worker' }),
    ]);
    expect(lines('redis unavailable')[0]?.err).toMatch(/ECONNREFUSED|ECONNRESET|closed/);
    expect(lines('redis reconnected')).toEqual([
      expect.objectContaining({ level: 30, connections: ['test-worker'] }),
      expect.objectContaining({ level: 30, connections: ['test-worker'] }),
    ]);
    expect(rawErrors.filter((text) => /redis|ECONN|\n\s+at /i.test(text))).toEqual([]);

    await running.shutdown();
    expect(exits).toEqual([0]);
    expect(redis?.status).toBe('end');
  });

  it('closes the Redis connections last, after the parts that drain through them', async () => {
    const key = `${uniquePrefix('drain')}:state`;
    const statuses: string[] = [];
    let connections: RedisClient[] = [];
    const { running, exits } = await start((service) => {
      const worker = service.redis.open('test-worker');
      const requests = service.redis.open('test-requests', {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
      });
      connections = [worker, requests];
      return {
        start: () => undefined,
        close: [
          {
            close: async () => {
              await worker.set(key, 'drained');
              statuses.push(worker.status, requests.status);
            },
          },
        ],
      };
    });
    expect(connections[1]?.options).toMatchObject({
      connectionName: 'test-requests',
      enableOfflineQueue: false,
    });
    // Both connected, as a service is once it serves: the question is what shutdown closes first.
    for (const connection of connections) {
      if (connection.status !== 'ready') await once(connection, 'ready');
    }

    await running.shutdown();

    expect(exits).toEqual([0]);
    expect(statuses).toEqual(['ready', 'ready']);
    expect(connections.map((connection) => connection.status)).toEqual(['end', 'end']);
    const reader = new Redis(server.url);
    try {
      expect(await reader.get(key)).toBe('drained');
    } finally {
      reader.disconnect();
    }
  });

  it('shuts down at once while Redis is down: there is nothing to flush', async () => {
    let redis: RedisClient | undefined;
    let connectionErrors = 0;
    const { running, exits, logs } = await start((service) => {
      redis = service.redis.open('test-worker', {
        // A QUIT sent now would wait in the offline queue until Redis is back.
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        // Dropping a reconnecting connection arms a timer this long to destroy its closed
        // socket, which would outlive the test.
        disconnectTimeout: 0,
      });
      redis.on('error', () => {
        connectionErrors++;
      });
      return { start: () => undefined, close: [] };
    });
    await waitFor(() => redis?.status === 'ready', { description: 'the connection' });
    await server.kill();
    await waitFor(() => connectionErrors > 0, { description: 'a failed reconnect' });

    await running.shutdown();

    // Within the 5 s shutdown timeout: QUIT would have waited for Redis to come back.
    expect(exits).toEqual([0]);
    expect(logs.map((line) => line.msg)).toEqual(['redis unavailable', 'shutting down', 'stopped']);
  });
});
