import { metricValue, metricValuesBy } from '../bench/soak-sampler';

const METRICS = [
  '# HELP nodejs_heap_space_size_total_bytes Process heap space size total from Node.js in bytes.',
  '# TYPE nodejs_heap_space_size_total_bytes gauge',
  'nodejs_heap_space_size_total_bytes{space="new",service="plugin-watcher"} 8388608',
  'nodejs_heap_space_size_total_bytes{service="plugin-watcher",space="old"} 48758784',
  'nodejs_heap_space_size_used_bytes{space="old",service="plugin-watcher"} 43903560',
  'nodejs_heap_space_size_total_bytes{space="code",service="plugin-watcher"} NaN',
  'process_resident_memory_bytes{service="plugin-watcher"} 161000000',
].join('\n');

describe('the soak sampler reading a service /metrics', () => {
  it('reads a metric by one label, whichever position the label has, skipping what is not a number', () => {
    expect(metricValuesBy(METRICS, 'nodejs_heap_space_size_total_bytes', 'space')).toEqual({
      new: 8388608,
      old: 48758784,
    });
  });

  it('reads nothing of a metric the text does not have', () => {
    expect(metricValuesBy(METRICS, 'nodejs_heap_space_size_available_bytes', 'space')).toEqual({});
  });

  it('reads an unlabelled or default-labelled metric whole', () => {
    expect(metricValue(METRICS, 'process_resident_memory_bytes')).toBe(161000000);
  });
});
