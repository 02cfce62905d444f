import { uniquePrefix, useRedisServer } from '@slicekeeper/testing';
import { QUEUE_EVENTS_KEPT, createNodeConditionQueue, createSyncQueue } from './queues';

describe('the queues', () => {
  const db = useRedisServer();

  it('keep a bounded event stream in Redis, however many jobs come and go', async () => {
    const prefix = uniquePrefix('events');
    const sync = createSyncQueue({ connection: db.redis, prefix });
    const nodeStatus = createNodeConditionQueue({ connection: db.redis, prefix });
    try {
      // A queue writes its settings (the bound among them) once connected; a service's queues
      // are made at start, long before their first job.
      await Promise.all([sync.getVersion(), nodeStatus.getVersion()]);
      const jobs = 3 * QUEUE_EVENTS_KEPT;
      await sync.addBulk(
        Array.from({ length: jobs }, (_, i) => ({
          name: 'sync',
          data: { node: `node-${i}`, driver: 'gpu.example.com', reason: 'snapshot' as const },
        })),
      );
      await nodeStatus.addBulk(
        Array.from({ length: jobs }, (_, i) => ({ name: 'evaluate', data: { node: `node-${i}` } })),
      );
      for (const queue of [sync, nodeStatus]) {
        const stream = queue.keys.events;
        if (stream === undefined) throw new Error(`BullMQ names no event stream of ${queue.name}`);
        const events = await db.redis.xlen(stream);
        // Trimming is approximate (whole stream nodes of 100 entries), never below the bound.
        expect(events).toBeGreaterThanOrEqual(QUEUE_EVENTS_KEPT);
        expect(events).toBeLessThanOrEqual(QUEUE_EVENTS_KEPT + 100);
      }
    } finally {
      await Promise.all([sync.close(), nodeStatus.close()]);
    }
  });
});
