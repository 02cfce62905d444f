import { Redis } from 'ioredis';
import { redisCommand } from './redis-server';
import { RedisSentinelGroup } from './redis-sentinel-group';

describe('RedisSentinelGroup', () => {
  let group: RedisSentinelGroup | undefined;
  let client: Redis | undefined;

  afterEach(async () => {
    client?.disconnect();
    client = undefined;
    await group?.stop();
  });

  it('lets a Sentinel-mode client write again, on the same connection object, after the master dies', async () => {
    group = await RedisSentinelGroup.start();
    client = new Redis({ sentinels: group.sentinels, name: group.masterName });
    // While the master is down the client reports every failed reconnection; it keeps trying.
    client.on('error', () => undefined);
    await client.set('before', '1');
    // Replication is asynchronous: wait until the replica has the write, or failover may lose it.
    expect(await client.wait(1, 5000)).toBe(1);

    const killed = await group.killMaster();
    const promoted = await group.waitForFailover(killed, 15_000);
    expect(promoted.port).not.toBe(killed.port);

    await client.set('after', '2');
    expect(await client.mget('before', 'after')).toEqual(['1', '2']);
    expect(await redisCommand(promoted, 'GET', 'after')).toBe('2');
  });

  it('takes a killed master back as a replica of the new one', async () => {
    group = await RedisSentinelGroup.start();
    const killed = await group.killMaster();
    const promoted = await group.waitForFailover(killed, 15_000);
    await group.restart(killed);
    const role = (await redisCommand(killed, 'ROLE')) as unknown[];
    expect(role.slice(0, 3)).toEqual(['slave', promoted.host, promoted.port]);
  });

  it('stops every process, twice without harm', async () => {
    group = await RedisSentinelGroup.start({ replicas: 2 });
    const addresses = [...group.sentinels, ...group.servers];
    await group.stop();
    await group.stop();
    for (const address of addresses) {
      await expect(redisCommand(address, 'PING')).rejects.toThrow();
    }
  });
});
