import { resourceSliceSchema } from './api-schemas';
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

  it('strategic merge patch: atomic devices are replaced, owner references merge by uid', () => {
    const patched = applyStrategicMergePatch(
      live,
      {
        metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'm', uid: 'u2' }] },
        spec: { devices: [{ name: 'gpu-1', attributes: { model: { string: 'h100' } } }] },
      },
      resourceSliceSchema,
    );
    expect(patched).toMatchObject({
      metadata: { ownerReferences: [{ uid: 'u1' }, { uid: 'u2' }] },
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
