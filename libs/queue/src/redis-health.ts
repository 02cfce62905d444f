import { EventEmitter } from 'node:events';
import { Cluster } from 'ioredis';
import type { RedisClient } from './redis-connection';

/** How often a Cluster in an outage is asked whether every master answers again, ms. */
const PROBE_INTERVAL_MS = 500;

const healthOf = new WeakMap<Cluster, EventEmitter>();

/**
 * The emitter of a connection's outages: `error` while it cannot serve (once or more), `ready`
 * when it serves again. For a single server or a master found through Sentinel that is the
 * client itself. A Cluster client emits neither when one node fails over: it stays `ready` and
 * reports `node error`, or only `-node` (of a node the slot map lists) when idle. Its emitter
 * turns either into `error`, then asks every PROBE_INTERVAL_MS, with the slot map refreshed,
 * whether every master answers, and emits `ready` when they do: the failover is over. Listeners of `ready` thus learn of every
 * failover, which is what a writer whose last writes may have been lost with the old master
 * needs (the plugin-watcher stores its live snapshots again).
 */
export function redisHealth(redis: RedisClient): EventEmitter {
  if (!(redis instanceof Cluster)) return redis;
  let health = healthOf.get(redis);
  if (health === undefined) {
    health = clusterHealth(redis);
    healthOf.set(redis, health);
  }
  return health;
}

function clusterHealth(cluster: Cluster): EventEmitter {
  const health = new EventEmitter();
  // An outage nobody listens to is no crash: the Cluster itself keeps retrying.
  health.on('error', () => undefined);
  let probing = false;
  const probe = async (): Promise<void> => {
    probing = true;
    while (cluster.status !== 'end' && cluster.status !== 'close') {
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS).unref());
      try {
        await new Promise<void>((resolve, reject) => {
          cluster.refreshSlotsCache((error) => {
            if (error) reject(error);
            else resolve();
          });
        });
        const masters = cluster.nodes('master');
        if (masters.length === 0) continue;
        await Promise.all(masters.map((master) => master.ping()));
        probing = false;
        health.emit('ready');
        return;
      } catch {
        // Not over yet: the next round asks again.
      }
    }
    probing = false;
  };
  const down = (error: unknown): void => {
    health.emit('error', error);
    if (!probing) void probe();
  };
  cluster.on('node error', down);
  cluster.on('error', down);
  // An idle client hears of a dead node only as its removal from the pool. The client also
  // drops every node the slot map it just read does not list (startup nodes it connected to
  // first, a node that left): no outage, nothing of the data set was on it.
  cluster.on('-node', (node: { options: { host?: string; port?: number } }) => {
    const address = `${node.options.host ?? '?'}:${node.options.port ?? '?'}`;
    if (!cluster.slots.some((holders) => holders.includes(address))) return;
    down(new Error(`lost the connection to ${address}`));
  });
  cluster.on('ready', () => health.emit('ready'));
  return health;
}
