import { keyId, parseKeyId, sliceKeySchema } from './key';
import { queuePrefix, syncDeduplicationId, syncJobSchema } from './queue';
import { inventorySnapshotSchema } from './snapshot';

describe('slice keys', () => {
  it.each([
    { node: 'node-a', driver: 'gpu.example.com', id: 'node-a/gpu.example.com' },
    { node: '', driver: 'net.example.com', id: '/net.example.com' },
  ])('round-trips $id', ({ node, driver, id }) => {
    expect(keyId({ node, driver })).toBe(id);
    expect(parseKeyId(id)).toEqual({ node, driver });
  });

  it.each([
    ['no separator', 'node-a', /expected <node>\/<driver>/],
    ['uppercase driver', 'node-a/GPU.example.com', /driver: a lowercase RFC 1123 subdomain/],
    ['empty driver', 'node-a/', /driver: Required value/],
    ['bad node', 'Node_A/gpu.example.com', /node: a lowercase RFC 1123 subdomain/],
    ['driver too long', `n/${'a'.repeat(64)}`, /driver: must be no more than 63 characters/],
  ])('rejects %s', (_name, id, message) => {
    expect(() => parseKeyId(id)).toThrow(message);
  });

  it('rejects unknown fields in a key', () => {
    expect(sliceKeySchema.safeParse({ node: 'n', driver: 'd', extra: 1 }).success).toBe(false);
  });
});

describe('sync job contract', () => {
  it('accepts a key and a reason, nothing else', () => {
    expect(syncJobSchema.parse({ node: 'n', driver: 'd.example.com', reason: 'snapshot' })).toEqual(
      {
        node: 'n',
        driver: 'd.example.com',
        reason: 'snapshot',
      },
    );
    const bad = syncJobSchema.safeParse({ node: 'n', driver: 'd', reason: 'because' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(['reason']);
  });

  it('deduplicates per key', () => {
    expect(syncDeduplicationId({ node: 'n', driver: 'd' })).toBe(
      syncDeduplicationId({ node: 'n', driver: 'd' }),
    );
    expect(syncDeduplicationId({ node: 'n', driver: 'd' })).not.toBe(
      syncDeduplicationId({ node: '', driver: 'd' }),
    );
  });

  it('hash-tags the queue prefix for Redis Cluster', () => {
    expect(queuePrefix('sk')).toBe('{sk}');
  });
});

describe('inventory snapshot schema', () => {
  it('accepts a stored snapshot and rejects a malformed one', () => {
    const snapshot = {
      generation: 3,
      receivedAt: '2026-11-21T15:00:00.000Z',
      endpoint: 'unix:///var/lib/kubelet/plugins/gpu/plugin.sock',
      inventory: {
        pools: [{ name: 'node-a', scope: { kind: 'node' }, devices: [{ name: 'gpu-0' }] }],
      },
    };
    expect(inventorySnapshotSchema.parse(snapshot)).toEqual(snapshot);
    const bad = inventorySnapshotSchema.safeParse({ ...snapshot, generation: 0 });
    expect(bad.error?.issues[0]?.path).toEqual(['generation']);
  });
});
