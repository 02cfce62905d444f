import type { StoredResourceSlice } from '@slicekeeper/slices';
import { slicesForEpoch, toSyncedRecord, versionsOf } from './synced-slices';
import type { SyncedRecord } from './synced-slices';

function slice(name: string, resourceVersion: string): StoredResourceSlice {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name, uid: `uid-${name}`, resourceVersion },
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 3, resourceSliceCount: 2 },
      devices: [{ name: `gpu-${name}`, attributes: { index: { int: 0 } } }],
    },
  } as StoredResourceSlice;
}

const slices = [slice('b', '12'), slice('a', '9')];

function recorded(epoch: number, stored: unknown = slices): SyncedRecord {
  return {
    epoch,
    versions: versionsOf(slices),
    slices: typeof stored === 'string' ? stored : JSON.stringify(stored),
  };
}

describe('synced slices record', () => {
  it('names every slice with its resourceVersion, in name order', () => {
    expect(versionsOf(slices)).toBe('a=9,b=12');
    expect(versionsOf([])).toBe('');
  });

  it('reads the hash fields Redis answers, missing ones as undefined', () => {
    expect(toSyncedRecord(['4', 'a=9', '[]'])).toEqual({ epoch: 4, versions: 'a=9', slices: '[]' });
    expect(toSyncedRecord([null, null])).toEqual({
      epoch: undefined,
      versions: undefined,
      slices: undefined,
    });
    expect(toSyncedRecord(['four', 'a=9']).epoch).toBeUndefined();
  });

  it('hands the slices of one sync to the sync of the next epoch only', () => {
    expect(slicesForEpoch(recorded(4), 5)).toEqual(slices);
    // Epoch 5 went to a sync that recorded nothing (it crashed): the record is stale for 6.
    expect(slicesForEpoch(recorded(4), 6)).toBeUndefined();
    expect(slicesForEpoch(recorded(4), 4)).toBeUndefined();
  });

  it.each([
    ['no record', toSyncedRecord([null, null, null])],
    ['the slices not read', { ...recorded(4), slices: undefined }],
    ['slices that are not JSON', recorded(4, '[{"metadata":')],
    ['slices that do not match their versions', { ...recorded(4), versions: 'a=9,b=13' }],
    [
      'a slice without a resourceVersion',
      recorded(4, [{ ...slice('a', '9'), metadata: { name: 'a', uid: 'u' } }]),
    ],
    ['a slice without spec.driver', recorded(4, [{ ...slice('a', '9'), spec: {} }])],
  ])('is not used (the sync lists) with %s', (_name, record) => {
    expect(slicesForEpoch(record, 5)).toBeUndefined();
  });
});
