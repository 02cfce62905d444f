import { resourceSliceSchema } from './api-schemas';
import {
  decodeManagedFields,
  encodeManagedFields,
  serverSideApply,
  toFieldsV1,
  trackUpdate,
} from './managed-fields';
import type { JsonObject } from './object-schema';

const options = (manager: string) => ({
  schema: resourceSliceSchema,
  manager,
  apiVersion: 'resource.k8s.io/v1',
  subresource: '',
  resetFields: [],
  nowMs: Date.parse('2026-01-01T00:00:00Z'),
});

const slice = (generation: number, labels?: Record<string, string>): JsonObject => ({
  metadata: { name: 's', ...(labels === undefined ? {} : { labels }) },
  spec: {
    driver: 'd',
    pool: { name: 'p', generation, resourceSliceCount: 1 },
    nodeName: 'n',
    devices: [{ name: 'gpu-0' }],
  },
});

describe('managed fields', () => {
  it('an Update owns what it set, maps and lists marked with "."', () => {
    const entries = trackUpdate([], undefined, slice(1, { a: '1' }), options('writer'));
    expect(encodeManagedFields(entries)[0]?.fieldsV1).toEqual({
      'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } },
      'f:spec': {
        'f:devices': {},
        'f:driver': {},
        'f:nodeName': {},
        'f:pool': { 'f:generation': {}, 'f:name': {}, 'f:resourceSliceCount': {} },
      },
    });
  });

  it('round-trips through FieldsV1', () => {
    const entries = trackUpdate([], undefined, slice(1, { a: '1' }), options('writer'));
    const decoded = decodeManagedFields({ managedFields: encodeManagedFields(entries) });
    expect(decoded?.[0]?.fields).toEqual(entries[0]?.fields);
    expect(toFieldsV1([])).toEqual({});
  });

  it('apply conflicts only on fields another manager owns with a different value', () => {
    const [publisher] = serverSideApply(
      [],
      slice(1),
      slice(1),
      false,
      options('publisher'),
    ).entries;
    if (publisher === undefined) throw new Error('no entry');
    const same = serverSideApply([publisher], slice(1), slice(1), false, options('other'));
    expect(same.conflicts).toEqual([]);
    const changed = serverSideApply([publisher], slice(1), slice(2), false, options('other'));
    expect(changed.conflicts.map((c) => c.path.split('\u0000').join('/'))).toEqual([
      'f:spec/f:pool/f:generation',
    ]);
    const forced = serverSideApply([publisher], slice(1), slice(2), true, options('other'));
    const kept = forced.entries.find((e) => e.manager === 'publisher');
    expect([...(kept?.fields ?? [])].some((p) => p.endsWith('f:generation'))).toBe(false);
    expect(forced.object).toMatchObject({ spec: { pool: { generation: 2 } } });
  });
});
