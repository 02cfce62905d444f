import { getHeapStatistics } from 'node:v8';
import { Registry } from 'prom-client';
import { ManualClock } from '@slicekeeper/time/testing';
import { MemoryReducer, reducingCollection } from './memory-reducer';

const quiet = { debug: () => undefined };

describe('MemoryReducer', () => {
  it('gives back the committed heap a burst of allocation left behind', () => {
    let burst: { id: number; text: string }[] = [];
    for (let i = 0; i < 400_000; i++) burst.push({ id: i, text: `object ${i}` });
    burst = burst.filter((_, i) => i % 100 === 0);
    const before = getHeapStatistics().total_heap_size;

    reducingCollection()();

    const after = getHeapStatistics().total_heap_size;
    expect(burst).toHaveLength(4_000);
    expect(before - after).toBeGreaterThan(8 * 1024 * 1024);
  });

  it('collects every interval and records each pause and what it gave back', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const committed = [60, 40, 58, 41].map((mib) => mib * 1024 * 1024);
    let collections = 0;
    const reducer = new MemoryReducer({
      intervalMs: 300_000,
      logger: quiet,
      registry,
      clock,
      collect: () => {
        collections += 1;
      },
      heapCommitted: () => committed.shift() ?? 0,
    });
    reducer.start();

    await clock.advance(299_999);
    expect(collections).toBe(0);
    await clock.advance(300_001);
    expect(collections).toBe(2);

    const text = await registry.metrics();
    expect(text).toContain(`slicekeeper_memory_reduce_released_bytes_total ${37 * 1024 * 1024}`);
    expect(text).toContain('slicekeeper_memory_reduce_seconds_count 2');
    await reducer.close();
    await clock.advance(600_000);
    expect(collections).toBe(2);
  });

  it('does nothing when its interval is 0', async () => {
    const clock = new ManualClock();
    let collections = 0;
    const reducer = new MemoryReducer({
      intervalMs: 0,
      logger: quiet,
      registry: new Registry(),
      clock,
      collect: () => {
        collections += 1;
      },
    });
    reducer.start();
    await clock.advance(3_600_000);
    expect(collections).toBe(0);
    expect(clock.pending()).toEqual([]);
  });
});
