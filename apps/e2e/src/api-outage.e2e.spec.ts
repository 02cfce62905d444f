import { System, gpuInventory, publishes } from './harness';
import type { InProcessDriver, LoggedRequest } from './harness';

const NODES = Array.from({ length: 20 }, (_, i) => `node-${i}`);
const GPU = 'gpu.example.com';
const OUTAGE_MS = 30_000;

/** Requests per second, bucketed by when they were answered. */
function perSecond(requests: readonly LoggedRequest[], from: number, to: number): number[] {
  const buckets = Array.from({ length: Math.ceil((to - from) / 1000) }, () => 0);
  for (const r of requests) {
    const i = Math.floor((r.at - from) / 1000);
    if (i >= 0 && i < buckets.length) buckets[i] = (buckets[i] ?? 0) + 1;
  }
  return buckets;
}

describe('the API server failing for 30 s (scenario 9)', () => {
  let system: System;
  let drivers: InProcessDriver[];

  beforeAll(async () => {
    system = await System.start({ name: 'api-outage', nodes: NODES });
    drivers = await Promise.all(
      NODES.map((node) => system.inProcessDriver({ node, driver: GPU, inventory: gpuInventory() })),
    );
    await system.until('every driver published', async () => {
      return (await system.emulator.slices()).length === NODES.length;
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('retries are spread out during 500s then 429s, and everything converges afterwards', async () => {
    await system.emulator.clearLog();
    const start = Date.now();
    // First matching rule wins: 500 for the first half, then 429 with Retry-After.
    await system.emulator.injectFault({
      resource: 'resourceslices',
      status: 500,
      durationMs: OUTAGE_MS / 2,
    });
    await system.emulator.injectFault({
      resource: 'resourceslices',
      status: 429,
      retryAfterSeconds: 2,
      durationMs: OUTAGE_MS,
    });
    // Changes keep coming during the outage.
    let rev = 0;
    while (Date.now() < start + OUTAGE_MS) {
      rev++;
      for (const driver of drivers) driver.publish(gpuInventory({ rev }));
      const next = start + rev * 5000;
      await system.until('the next change', () => Date.now() >= next, 10_000);
    }
    const last = gpuInventory({ rev });

    await system.until(
      'every driver converged after the outage',
      async () => {
        for (const driver of drivers) {
          const slices = await system.emulator.slices({ node: driver.node, driver: GPU });
          if (!publishes(slices, last)) return false;
        }
        return true;
      },
      60_000,
    );

    const requests = (await system.emulator.requests()).filter(
      (r) => r.resource === 'resourceslices' && r.at < start + OUTAGE_MS,
    );
    const failed = requests.filter((r) => r.code === 500 || r.code === 429);
    expect(failed.length).toBeGreaterThan(0);
    const rates = perSecond(failed, start, start + OUTAGE_MS);
    process.stdout.write(
      `api-outage: ${failed.length} failed requests in ${OUTAGE_MS / 1000} s, per second: ${rates.join(' ')}\n`,
    );
    // 20 keys with a change every 5 s: a hot loop would make thousands of requests a second.
    // Backoff from 100 ms allows about five attempts per key in the first second of a failure,
    // then fewer and fewer; on 429 the whole queue pauses for the Retry-After.
    expect(Math.max(...rates)).toBeLessThanOrEqual(150);
    expect(failed.length / (OUTAGE_MS / 1000)).toBeLessThanOrEqual(20);
  }, 150_000);
});
