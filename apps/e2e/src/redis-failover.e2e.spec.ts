import { RedisClusterGroup, RedisSentinelGroup } from '@slicekeeper/local-stack';
import type { RedisAddress } from '@slicekeeper/local-stack';
import { System, gpuInventory, inParallel, publishes } from './harness';
import type { InProcessDriver, ServiceName } from './harness';

const NODES = ['node-a', 'node-b', 'node-c'];
const DRIVERS = ['gpu.example.com', 'nic.example.com'];
const SERVICES: ServiceName[] = ['registration-api', 'plugin-watcher', 'slice-syncer-1'];
/** Sentinel's down-after-milliseconds and Redis Cluster's cluster-node-timeout. */
const DOWN_AFTER_MS = 1000;
/** Sentinel's failover-timeout. */
const FAILOVER_TIMEOUT_MS = 3000;
const list = (addresses: readonly RedisAddress[]): string =>
  addresses.map((a) => `${a.host}:${a.port}`).join(',');

/** A Redis that fails over, as the scenario needs it. */
interface FailingRedis {
  /** The services' Redis settings. */
  settings: Record<string, string>;
  /** Kills the master the sync queue lives on; resolves with what it killed. */
  killMaster(): Promise<RedisAddress>;
  /** Resolves once a replica serves in its place; fails past `timeoutMs`. */
  waitForFailover(killed: RedisAddress, timeoutMs: number): Promise<RedisAddress>;
  stop(): Promise<void>;
}

/**
 * The whole system on a Redis that loses its master in the middle of a churn: every driver
 * changes its inventory every 100 ms before, during and after the failover. Asynchronous
 * replication may lose the last writes the old master acknowledged; the watcher stores its live
 * snapshots again once the failover is over, so the last inventory of every driver must be
 * published, exactly once, by the same processes.
 */
function failoverScenario(name: string, start: () => Promise<FailingRedis>): void {
  let redis: FailingRedis;
  let system: System;
  let drivers: InProcessDriver[];
  const revs = new Map<InProcessDriver, number>();

  const publish = (driver: InProcessDriver, rev: number): void => {
    revs.set(driver, rev);
    driver.publish(gpuInventory({ rev }));
  };
  const converged = async (): Promise<boolean> => {
    for (const driver of drivers) {
      const slices = await system.emulator.slices({ node: driver.node, driver: driver.driver });
      if (!publishes(slices, gpuInventory({ rev: revs.get(driver) ?? 0 }))) return false;
    }
    return true;
  };

  beforeAll(async () => {
    redis = await start();
    system = await System.start({
      name,
      nodes: NODES,
      redisSettings: redis.settings,
      syncerEnv: { SYNC_LOCK_DURATION: '2s', SYNC_STALLED_INTERVAL: '1s' },
    });
    drivers = [];
    await inParallel(
      NODES.flatMap((node) => DRIVERS.map((driver) => ({ node, driver }))),
      4,
      async (plugin) => {
        const driver = await system.inProcessDriver({ ...plugin, inventory: gpuInventory() });
        revs.set(driver, 0);
        drivers.push(driver);
      },
    );
    await system.until('every driver published', converged, 30_000);
  }, 90_000);

  afterAll(async () => {
    await system.close();
    await redis.stop();
  });

  it('fails over in the middle of a churn: every last inventory published once, no restart, the outage logged and counted', async () => {
    const pids = SERVICES.map((service) => system.servicePid(service));
    let rev = 0;
    const stopChurn = new AbortController();
    const churn = (async () => {
      while (!stopChurn.signal.aborted) {
        rev++;
        for (const driver of drivers) publish(driver, rev);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await system.until('a few changes published', async () => rev >= 5 && (await converged()));

    const killed = await redis.killMaster();
    const revAtKill = rev;
    // Within what the Sentinels (or the Cluster's node timeout) are configured to take.
    await redis.waitForFailover(killed, DOWN_AFTER_MS + FAILOVER_TIMEOUT_MS);
    await system.until('more changes after the failover', () => rev >= revAtKill + 10);
    stopChurn.abort();
    await churn;

    await system.until('the last inventory of every driver published', converged, 60_000);
    // The API answers 503 until its connection is back: it reconnects with a backoff of up to 2 s.
    await system.until('the API to report every key synced and streaming', async () => {
      for (const driver of drivers) {
        const status = await system.status(driver.node, driver.driver).catch(() => undefined);
        if (status?.sync?.outcome !== 'synced' || status.stream?.state !== 'streaming') {
          return false;
        }
      }
      return true;
    });
    // No duplicate slice: one per key (publishes checks one per pool index), none left over.
    expect(await system.kubectlSlices()).toHaveLength(drivers.length);
    // The same processes: they reconnected, nobody restarted them.
    expect(SERVICES.map((service) => system.servicePid(service))).toEqual(pids);
    // Each process logs the end of its outage once its last connection answers a PING, which
    // can come after its first successful command on a busy machine: waited for, not assumed.
    const logged = async (service: (typeof SERVICES)[number]) =>
      (await system.logEntries(service)).map((entry) => entry.msg);
    await system.until('every service to log that Redis is back', async () => {
      for (const service of SERVICES) {
        if (!(await logged(service)).includes('redis reconnected')) return false;
      }
      return true;
    });
    for (const service of SERVICES) {
      expect(await logged(service)).toContain('redis unavailable');
    }
    const metrics = await system.syncerMetrics();
    expect(metrics).toMatch(/^slicekeeper_redis_outages_total\{[^}]*\} [1-9]/m);
    expect(metrics).not.toMatch(/^slicekeeper_redis_up\{[^}]*\} 0$/m);
  }, 120_000);
}

describe('Redis with Sentinel', () => {
  failoverScenario('redis-sentinel', async () => {
    const group = await RedisSentinelGroup.start({
      downAfterMs: DOWN_AFTER_MS,
      failoverTimeoutMs: FAILOVER_TIMEOUT_MS,
    });
    return {
      settings: { REDIS_SENTINELS: list(group.sentinels), REDIS_SENTINEL_NAME: group.masterName },
      killMaster: () => group.killMaster(),
      waitForFailover: (killed, timeoutMs) => group.waitForFailover(killed, timeoutMs),
      stop: () => group.stop(),
    };
  });
});

describe('Redis Cluster', () => {
  failoverScenario('redis-cluster', async () => {
    const cluster = await RedisClusterGroup.start({ nodeTimeoutMs: DOWN_AFTER_MS });
    return {
      settings: { REDIS_CLUSTER_NODES: list(cluster.nodes) },
      // The master of the queue's slot: every service's commands go there, BullMQ's most of all.
      killMaster: async () => {
        const master = await cluster.masterOf('{sk}');
        await cluster.killNode(master);
        return master;
      },
      waitForFailover: (killed, timeoutMs) => cluster.waitForFailover(killed, timeoutMs),
      stop: () => cluster.stop(),
    };
  });
});
