import { Redis } from 'ioredis';
import { parseKeyId } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import { RedisServer, uniquePrefix, waitFor } from '@slicekeeper/testing';
import { systemClock } from '@slicekeeper/time';
import { ManualClock } from '@slicekeeper/time/testing';
import { LeaseManager } from './lease-manager';
import { silentLogger } from './testing/fakes';

const LEASE_MS = 600;

describe('LeaseManager', () => {
  let server: RedisServer;
  let redis: Redis;
  const managers: LeaseManager[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    await Promise.all(managers.map((m) => m.close()));
    redis.disconnect();
    await server.stop();
  });

  function manager(prefix: string, replicaId: string, clock = systemClock) {
    const owned = new Set<string>();
    const lease = new LeaseManager({
      redis,
      prefix,
      replicaId,
      leaseMs: LEASE_MS,
      clock,
      logger: silentLogger,
      onAcquired: (id) => owned.add(id),
      onLost: (id) => owned.delete(id),
    });
    managers.push(lease);
    return { lease, owned };
  }

  const ids = Array.from({ length: 40 }, (_, i) => `node-${i}/gpu.example.com`);

  it('gives every key to exactly one replica, and a dead one’s keys to the survivor', async () => {
    const prefix = uniquePrefix('lease');
    const a = manager(prefix, 'replica-a');
    // b runs on a clock the test moves; when the test stops moving it, b never renews again,
    // as if its process had been killed.
    const bClock = new ManualClock();
    const b = manager(prefix, 'replica-b', bClock);
    const pump = setInterval(() => void bClock.advance(LEASE_MS / 3), LEASE_MS / 3);
    a.lease.setCandidates(ids);
    b.lease.setCandidates(ids);
    await a.lease.start();
    await b.lease.start();
    await waitFor(() => a.owned.size + b.owned.size === ids.length && a.owned.size < ids.length, {
      description: 'keys split over both replicas',
    });
    for (const id of ids) expect(a.owned.has(id) !== b.owned.has(id)).toBe(true);
    expect(b.owned.size).toBeGreaterThan(5);

    // b stops renewing: its keys move to a once its leases expire.
    clearInterval(pump);
    await waitFor(() => a.owned.size === ids.length, {
      timeoutMs: 15_000,
      description: 'takeover of the dead replica’s keys',
    });
  }, 30_000);

  it('takes its leases back, losing no key, when Redis comes back empty', async () => {
    const prefix = uniquePrefix('lease');
    const clock = new ManualClock();
    const lost: string[] = [];
    const lease = new LeaseManager({
      redis,
      prefix,
      replicaId: 'replica-a',
      leaseMs: LEASE_MS,
      clock,
      logger: silentLogger,
      onAcquired: () => undefined,
      onLost: (id) => lost.push(id),
    });
    managers.push(lease);
    lease.setCandidates(ids);
    await lease.start();
    expect(lease.heldCount).toBe(ids.length);
    const keys = redisKeys(prefix);
    await redis.del(...ids.map((id) => keys.watcherLease(parseKeyId(id))), keys.watcherMembers);
    await clock.advance(LEASE_MS / 3);
    await waitFor(
      async () => (await redis.exists(keys.watcherLease(parseKeyId(ids[0] ?? '')))) === 1,
      {
        description: 'leases taken back',
      },
    );
    expect(lost).toEqual([]);
    expect(lease.heldCount).toBe(ids.length);
  });

  it('hands keys over to a replica that joins, and releases all on close', async () => {
    const prefix = uniquePrefix('lease');
    const a = manager(prefix, 'replica-a');
    a.lease.setCandidates(ids);
    await a.lease.start();
    await waitFor(() => a.owned.size === ids.length, { description: 'a owns all' });
    const b = manager(prefix, 'replica-b');
    b.lease.setCandidates(ids);
    await b.lease.start();
    await waitFor(() => b.owned.size > 5 && a.owned.size + b.owned.size === ids.length, {
      timeoutMs: LEASE_MS * 5,
      description: 'rebalanced',
    });
    await b.lease.close();
    await waitFor(() => a.owned.size === ids.length, {
      timeoutMs: LEASE_MS * 2,
      description: 'a takes back at once after b left',
    });
  });

  it('lets go of a deregistered key', async () => {
    const prefix = uniquePrefix('lease');
    const a = manager(prefix, 'replica-a');
    a.lease.setCandidates(ids.slice(0, 2));
    await a.lease.start();
    await waitFor(() => a.owned.size === 2);
    a.lease.removeCandidate(ids[0] ?? '');
    await waitFor(() => a.owned.size === 1);
    expect(a.lease.holds(ids[1] ?? '')).toBe(true);
  });
});
