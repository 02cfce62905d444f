import { createMetricsRegistry } from '@slicekeeper/observability';
import { ManualClock } from '@slicekeeper/time/testing';
import { AntiEntropy } from './anti-entropy';
import { SyncerMetrics } from './syncer-metrics';
import { silentLogger } from './testing/fakes';

describe('AntiEntropy', () => {
  it('relists every interval and counts what the watch missed', async () => {
    const clock = new ManualClock();
    const found = [
      { added: 0, changed: 0, removed: 0 },
      { added: 1, changed: 2, removed: 0 },
    ];
    let relists = 0;
    const registry = createMetricsRegistry('test');
    const antiEntropy = new AntiEntropy({
      cache: {
        relist: () => Promise.resolve(found[relists++] ?? { added: 0, changed: 0, removed: 0 }),
      },
      intervalMs: 3_600_000,
      logger: silentLogger,
      metrics: new SyncerMetrics(registry),
      clock,
      random: () => 0.5,
    });
    antiEntropy.start();
    await clock.advance(3_599_999);
    expect(relists).toBe(0);
    await clock.advance(1);
    expect(relists).toBe(1);
    await clock.advance(3_600_000);
    expect(relists).toBe(2);
    const metric = await registry.getSingleMetric('slicekeeper_relist_differences_total')?.get();
    expect(metric?.values.map((v) => [v.labels.difference, v.value])).toEqual([
      ['added', 1],
      ['changed', 2],
      ['removed', 0],
    ]);
    await antiEntropy.close();
    await clock.advance(7_200_000);
    expect(relists).toBe(2);
  });
});
