import {
  lastWrittenBySlicekeeper,
  parseJson,
  toListPage,
  toStoredResourceSlice,
} from './resource-slice-json';

/** A list item as the API server sends it: no apiVersion or kind, and a field of a newer API. */
const listItem = {
  metadata: {
    name: 'a',
    uid: 'u',
    resourceVersion: '7',
    creationTimestamp: '2025-06-01T12:00:00Z',
    managedFields: [
      {
        manager: 'slicekeeper',
        operation: 'Update',
        time: '2025-06-01T12:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': {} },
      },
    ],
  },
  spec: {
    driver: 'gpu.example.com',
    nodeName: 'node-a',
    pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
    devices: [
      {
        name: 'gpu-0',
        attributes: { index: { int: 3 } },
        capacity: { memory: { value: '80Gi', requestPolicy: { default: '1Gi' } } },
        taints: [{ key: 'k', effect: 'NoSchedule', timeAdded: '2025-03-04T05:06:07.250+02:00' }],
        aFieldOfANewerApi: { kept: true },
      },
    ],
  },
};

describe('API server answers', () => {
  it('keep a slice exactly as the API server sent it, with apiVersion and kind', () => {
    expect(toStoredResourceSlice(structuredClone(listItem))).toEqual({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      ...listItem,
    });
  });

  it('refuse a slice without the fields the planner relies on, naming them', () => {
    const noUid = { ...listItem, metadata: { name: 'a', resourceVersion: '7' } };
    expect(() => toStoredResourceSlice(noUid)).toThrow(/without name, uid or resourceVersion/);
    expect(() => toStoredResourceSlice({ metadata: listItem.metadata })).toThrow(
      /ResourceSlice "a" without spec.driver/,
    );
    expect(() => toStoredResourceSlice('a')).toThrow(/without metadata/);
  });

  it('read a list page: items, the continue token (empty: the last page) and the version', () => {
    expect(
      toListPage({ items: [1], metadata: { continue: 'next', resourceVersion: '42' } }, 'List'),
    ).toStrictEqual({ items: [1], continueToken: 'next', resourceVersion: '42' });
    expect(toListPage({ items: [], metadata: { continue: '' } }, 'List').continueToken).toBe(
      undefined,
    );
    expect(() => toListPage({ metadata: {} }, 'NodeList')).toThrow(/a NodeList without items/);
    expect(() => toListPage({ items: [], metadata: { continue: 3 } }, 'NodeList')).toThrow(
      /non-string continue/,
    );
  });

  it('say what came instead of JSON', () => {
    expect(() => parseJson('<html>bad gateway</html>')).toThrow(
      'the API server answered with no JSON: <html>bad gateway</html>',
    );
  });
});

describe('lastWrittenBySlicekeeper', () => {
  const entry = (manager: string, time: string) => ({ manager, operation: 'Update', time });
  const slice = (...managedFields: unknown[]) => ({ metadata: { managedFields } });

  it('is true when slicekeeper made the latest write', () => {
    expect(lastWrittenBySlicekeeper(slice(entry('slicekeeper', '2026-11-24T12:00:01Z')))).toBe(
      true,
    );
    expect(
      lastWrittenBySlicekeeper(
        slice(
          entry('kubectl-patch', '2026-11-24T12:00:00Z'),
          entry('slicekeeper', '2026-11-24T12:00:01Z'),
        ),
      ),
    ).toBe(true);
  });

  it('is false when someone else wrote last, in the same second, or nobody is named', () => {
    const ours = entry('slicekeeper', '2026-11-24T12:00:00Z');
    expect(
      lastWrittenBySlicekeeper(slice(ours, entry('kubectl-patch', '2026-11-24T12:00:01Z'))),
    ).toBe(false);
    expect(
      lastWrittenBySlicekeeper(slice(ours, entry('kubectl-edit', '2026-11-24T12:00:00Z'))),
    ).toBe(false);
    expect(lastWrittenBySlicekeeper({ metadata: {} })).toBe(false);
    expect(lastWrittenBySlicekeeper(slice({ manager: 'slicekeeper' }))).toBe(false);
  });
});
