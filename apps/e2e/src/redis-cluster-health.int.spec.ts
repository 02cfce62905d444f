import { once } from 'node:events';
import type { Cluster } from 'ioredis';
import { RedisClusterGroup } from '@slicekeeper/local-stack';
import { createRedisConnection, redisHealth } from '@slicekeeper/queue';

/** The outage emitter of a Redis Cluster connection, against a real Cluster. */
describe('redisHealth of a Redis Cluster connection', () => {
  let group: RedisClusterGroup;
  let redis: Cluster | undefined;

  beforeAll(async () => {
    group = await RedisClusterGroup.start();
  }, 60_000);
  afterEach(() => {
    redis?.disconnect();
    redis = undefined;
  });
  afterAll(async () => {
    await group.stop();
  });

  it('reports no outage when the client drops a node the slot map does not list, and one when a master dies', async () => {
    // Named as users often write them: the slot map lists 127.0.0.1, so the client drops these.
    const nodes = group.nodes.map(({ port }) => ({ host: 'localhost', port }));
    const client = createRedisConnection({
      target: { kind: 'cluster', nodes, tls: false },
    }) as Cluster;
    redis = client;
    const outages: string[] = [];
    redisHealth(client).on('error', (error: Error) => outages.push(error.message));
    const dropped = once(client, '-node');
    await client.set('{a}:key', 'value');
    await dropped;
    expect(outages).toEqual([]);

    const victim = await group.masterOf('{a}:key');
    // Not events.once: it rejects on the outage's `error`.
    const ready = new Promise((resolve) => redisHealth(client).once('ready', resolve));
    await group.killNode(victim);
    await group.waitForFailover(victim, 15_000);
    await ready;
    expect(outages.length).toBeGreaterThan(0);
    // Replication is asynchronous: the write before the kill may be lost with its master. The
    // client serves the slot again from the promoted replica.
    await client.set('{a}:key', 'after');
    expect(await client.get('{a}:key')).toBe('after');
  }, 60_000);
});
