import { nodeSchema, resourceSliceSchema } from './api-schemas';
import { PatchError, applyJsonPatch, applyMergePatch, applyStrategicMergePatch } from './patch';

const live = {
  metadata: {
    name: 's',
    labels: { a: '1' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n', uid: 'u1' }],
  },
  spec: { driver: 'd', devices: [{ name: 'gpu-0' }, { name: 'gpu-1' }] },
};

describe('patches', () => {
  it('merge patch: null deletes a key, lists are replaced', () => {
    expect(
      applyMergePatch(live, {
        metadata: { labels: { a: null, b: '2' } },
        spec: { devices: [{ name: 'x' }] },
      }),
    ).toEqual({
      metadata: { ...live.metadata, labels: { b: '2' } },
      spec: { driver: 'd', devices: [{ name: 'x' }] },
    });
  });

  it('strategic merge patch: atomic devices are replaced, owner references merge by uid, the new one first', () => {
    const patched = applyStrategicMergePatch(
      live,
      {
        metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'm', uid: 'u2' }] },
        spec: { devices: [{ name: 'gpu-1', attributes: { model: { string: 'h100' } } }] },
      },
      resourceSliceSchema,
    );
    expect(patched).toMatchObject({
      metadata: { ownerReferences: [{ uid: 'u2' }, { uid: 'u1' }] },
      spec: { devices: [{ name: 'gpu-1', attributes: { model: { string: 'h100' } } }] },
    });
  });

  it('strategic merge patch: $patch delete removes a list item by its merge key', () => {
    const patched = applyStrategicMergePatch(
      live,
      { metadata: { ownerReferences: [{ uid: 'u1', $patch: 'delete' }] } },
      resourceSliceSchema,
    );
    expect(patched).toMatchObject({ metadata: { ownerReferences: [] } });
  });

  describe('strategic merge patch of node conditions (merge key "type")', () => {
    const ready = {
      type: 'Ready',
      status: 'True',
      lastTransitionTime: '2026-01-01T00:00:00Z',
      reason: 'KubeletReady',
    };
    const memory = {
      type: 'MemoryPressure',
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
    };
    const node = { metadata: { name: 'n' }, status: { conditions: [ready, memory] } };
    const conditionsOf = (patch: unknown) =>
      (applyStrategicMergePatch(node, patch as never, nodeSchema) as typeof node).status.conditions;

    it.each([
      {
        name: 'update-in-place',
        patch: { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Down' }] } },
        want: [{ ...ready, status: 'False', reason: 'Down' }, memory],
      },
      {
        name: 'add-goes-first',
        patch: { status: { conditions: [{ type: 'DRAResourcesPublished', status: 'True' }] } },
        want: [{ type: 'DRAResourcesPublished', status: 'True' }, ready, memory],
      },
      {
        name: 'patch-order-wins',
        patch: { status: { conditions: [{ type: 'MemoryPressure' }, { type: 'Ready' }] } },
        want: [memory, ready],
      },
      {
        name: 'set-element-order',
        patch: {
          status: {
            '$setElementOrder/conditions': [
              { type: 'Ready' },
              { type: 'MemoryPressure' },
              { type: 'DRAResourcesPublished' },
            ],
            conditions: [{ type: 'DRAResourcesPublished', status: 'True' }],
          },
        },
        want: [ready, memory, { type: 'DRAResourcesPublished', status: 'True' }],
      },
      {
        name: 'null-clears-a-field',
        patch: { status: { conditions: [{ type: 'Ready', reason: null }] } },
        want: [
          { type: 'Ready', status: 'True', lastTransitionTime: ready.lastTransitionTime },
          memory,
        ],
      },
      {
        name: 'delete-directive',
        patch: { status: { conditions: [{ type: 'Ready', $patch: 'delete' }] } },
        want: [memory],
      },
      {
        name: 'replace-directive',
        patch: { status: { conditions: [{ $patch: 'replace' }, { type: 'X', status: 'True' }] } },
        want: [{ type: 'X', status: 'True' }],
      },
    ])('$name', ({ patch, want }) => {
      expect(conditionsOf(patch)).toEqual(want);
    });

    it('an item without its merge key is an internal error naming the item, as Go prints it', () => {
      let error: unknown;
      try {
        conditionsOf({ status: { conditions: [{ status: 'True', reason: 'X' }] } });
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({
        code: 500,
        message: 'map: map[reason:X status:True] does not contain declared merge key: type',
      });
    });
  });

  it('strategic merge patch: $deleteFromPrimitiveList removes finalizers, new ones come first', () => {
    const withFinalizers = { metadata: { name: 's', finalizers: ['a.io/x', 'b.io/y'] } };
    expect(
      applyStrategicMergePatch(
        withFinalizers,
        { metadata: { '$deleteFromPrimitiveList/finalizers': ['a.io/x'], finalizers: ['c.io/z'] } },
        resourceSliceSchema,
      ),
    ).toEqual({ metadata: { name: 's', finalizers: ['c.io/z', 'b.io/y'] } });
  });

  it('JSON patch: replace, add with "-", test', () => {
    const patched = applyJsonPatch(live, [
      { op: 'test', path: '/spec/driver', value: 'd' },
      { op: 'replace', path: '/spec/driver', value: 'e' },
      { op: 'add', path: '/spec/devices/-', value: { name: 'gpu-2' } },
      { op: 'remove', path: '/metadata/labels/a' },
    ]);
    expect(patched).toMatchObject({
      metadata: { labels: {} },
      spec: { driver: 'e', devices: [{}, {}, { name: 'gpu-2' }] },
    });
  });

  it('JSON patch: a failing operation is a 422 with the json-patch message', () => {
    let error: unknown;
    try {
      applyJsonPatch(live, [{ op: 'replace', path: '/spec/missing', value: 1 }]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PatchError);
    expect(error).toMatchObject({
      code: 422,
      message: 'replace operation does not apply: doc is missing key: /spec/missing',
    });
  });
});
