import { Cluster } from 'ioredis';
import { RedisClusterGroup } from './redis-cluster';
import { redisCommand } from './redis-server';

/** Keys that hash to every master's slots (hash tags pick the slot). */
const KEYS = Array.from({ length: 12 }, (_, i) => `{tag-${i}}:key`);

describe('RedisClusterGroup', () => {
  let group: RedisClusterGroup | undefined;
  let client: Cluster | undefined;

  afterEach(async () => {
    client?.disconnect();
    client = undefined;
    await group?.stop();
  });

  it('lets a Cluster-mode client write again to a killed master’s slots once its replica took over', async () => {
    const cluster = await RedisClusterGroup.start();
    group = cluster;
    expect(await cluster.masters()).toHaveLength(3);
    const redis = new Cluster(cluster.nodes);
    client = redis;
    // While a master is down the client reports every failed connection; it keeps trying.
    redis.on('error', () => undefined);
    for (const key of KEYS) await redis.set(key, 'before');
    const owners = await Promise.all(KEYS.map((key) => cluster.masterOf(key)));
    expect(new Set(owners.map(({ port }) => port)).size).toBe(3);

    const [key] = KEYS as [string];
    const victim = await cluster.masterOf(key);
    await cluster.killNode(victim);
    const promoted = await cluster.waitForFailover(victim, 15_000);
    expect(promoted.port).not.toBe(victim.port);
    expect(await cluster.masterOf(key)).toEqual(promoted);

    for (const each of KEYS) await redis.set(each, 'after');
    expect(await Promise.all(KEYS.map((each) => redis.get(each)))).toEqual(KEYS.map(() => 'after'));
    expect(await redisCommand(promoted, 'GET', key)).toBe('after');
  });

  it('stops every node, twice without harm', async () => {
    group = await RedisClusterGroup.start();
    const nodes = group.nodes;
    expect(nodes).toHaveLength(6);
    await group.stop();
    await group.stop();
    for (const node of nodes) await expect(redisCommand(node, 'PING')).rejects.toThrow();
  });
});
