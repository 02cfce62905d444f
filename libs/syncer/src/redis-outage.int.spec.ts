import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { createLogger } from '@slicekeeper/observability';
import { RedisConnections, SyncQueue } from '@slicekeeper/queue';
import { uniquePrefix, useRedisServer, waitFor } from '@slicekeeper/testing';
import { NodeConditionQueue } from './node-condition-queue';
import { NodeConditionWorker } from './node-condition-worker';
import { SyncWorker } from './sync-worker';

/**
 * The slice-syncer's Redis objects, wired as its main.ts wires them (two connections, the
 * three queues, their three workers and the maintenance schedulers), through a Redis outage.
 */
describe("the syncer's Redis objects through an outage", () => {
  const db = useRedisServer();
  const key = { node: 'node-a', driver: 'gpu.example.com' };

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('log one line when Redis goes away and one when it is back, and nothing on stderr', async () => {
    const raw: string[] = [];
    const capture = (...args: unknown[]) => {
      raw.push(args.map(String).join(' '));
    };
    jest.spyOn(console, 'error').mockImplementation(capture);
    jest.spyOn(console, 'warn').mockImplementation(capture);
    jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      capture(chunk);
      return true;
    });
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      service: 'slice-syncer',
      level: 'info',
      destination: new Writable({
        write: (chunk: Buffer, _encoding, callback) => {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          callback();
        },
      }),
    });
    const registry = new Registry();
    const connections = new RedisConnections({
      target: { kind: 'server', url: db.server.url },
      logger,
      registry,
    });
    const prefix = uniquePrefix('outage');
    const redis = connections.open('slice-syncer');
    connections.open('slice-syncer-sync');
    const syncQueue = new SyncQueue({ connection: redis, prefix });
    const nodeConditionQueue = new NodeConditionQueue({ connection: redis, prefix, logger });
    connections.addErrorSources(redis, syncQueue.queue, nodeConditionQueue.queue);
    const synced: string[] = [];
    const syncer = new SyncWorker({
      connection: redis,
      queue: syncQueue.queue,
      prefix,
      logger,
      reconciler: {
        reconcile: (synchronized) => {
          synced.push(synchronized.node);
          return Promise.resolve({ outcome: 'idle', news: false });
        },
      },
      maintenance: {
        connection: redis,
        jobs: {
          resyncIntervalMs: 600_000,
          resync: () => Promise.resolve(0),
          janitor: () => Promise.resolve({ removed: 0, orphans: 0 }),
        },
      },
    });
    const nodeConditions = new NodeConditionWorker({
      connection: redis,
      prefix,
      logger,
      reconciler: { reconcile: () => Promise.reject(new Error('no node condition expected')) },
    });
    connections.addErrorSources(redis, ...syncer.errorSources, ...nodeConditions.errorSources);
    try {
      await nodeConditions.start();
      await syncer.start();
      await syncQueue.enqueue(key, 'snapshot');
      await waitFor(() => synced.length === 1, { description: 'the first sync' });

      // Two of its own and a blocking one per Worker: sync, node condition and maintenance.
      expect(connections.count).toBe(5);
      const gauge = await registry.getSingleMetric('slicekeeper_redis_connections')?.get();
      expect(gauge?.values.reduce((sum, { value }) => sum + value, 0)).toBe(5);

      let attempts = 0;
      redis.on('error', () => {
        attempts++;
      });
      await db.server.kill();
      // Several reconnect attempts of every connection fail: "once per outage" is put to test.
      await waitFor(() => attempts >= 4, { description: 'failed reconnects' });
      await db.server.restart();
      const reconnected = await waitFor(
        () => lines.find((line) => line.msg === 'redis reconnected'),
        { description: 'the reconnected line' },
      );
      await syncQueue.enqueue(key, 'snapshot');
      await waitFor(() => synced.length === 2, { description: 'a sync after the outage' });

      const said = (msg: string) => lines.filter((line) => line.msg === msg);
      expect(said('redis unavailable')).toEqual([
        expect.objectContaining({
          level: 50,
          connection: expect.stringMatching(/^slice-syncer/) as string,
        }),
      ]);
      expect(said('redis reconnected')).toHaveLength(1);
      // Every other connection error of the outage was counted, not logged (the one line need
      // not be the first: a line logged before the outage stays out of this).
      const unreachable = /ECONN|Connection is closed/;
      expect(
        lines.filter(
          (line) => line.msg !== 'redis unavailable' && unreachable.test(String(line.err)),
        ),
      ).toEqual([]);
      expect(reconnected).toEqual(
        expect.objectContaining({
          level: 30,
          connections: ['slice-syncer', 'slice-syncer-sync'],
          durationMs: expect.any(Number) as number,
        }),
      );
      expect(reconnected.suppressedErrors).toBeGreaterThanOrEqual(attempts - 1);
      expect(raw).toEqual([]);
    } finally {
      await syncer.close();
      await nodeConditions.close();
      await syncQueue.close();
      await nodeConditionQueue.close();
      await connections.close();
    }
  });
});
