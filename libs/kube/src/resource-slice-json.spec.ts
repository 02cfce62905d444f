import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { V1ResourceSlice } from '@kubernetes/client-node';
import type { ResourceSlice } from '@slicekeeper/slices';
import { formatKubeTime, toResourceSliceModel, toStoredResourceSlice } from './resource-slice-json';

/** A slice as the API server sends it (JSON), with every renamed and timestamp field in use. */
const serverJson = {
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
        taints: [{ key: 'k', effect: 'NoSchedule', timeAdded: '2025-03-04T05:06:07Z' }],
      },
    ],
  },
};

describe('ResourceSlice JSON conversion', () => {
  it('turns a client-node model back into the JSON the API server sent', () => {
    const model = ObjectSerializer.deserialize(
      serverJson,
      'V1ResourceSlice',
      '',
    ) as V1ResourceSlice;
    expect(model.spec.devices?.[0]?.taints?.[0]?.timeAdded).toBeInstanceOf(Date);
    expect(toStoredResourceSlice(model)).toEqual({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      ...serverJson,
    });
  });

  it('sends the planner JSON verbatim: renamed fields mapped, timestamps untouched', () => {
    const slice = structuredClone(serverJson) as unknown as ResourceSlice;
    const taint = slice.spec.devices?.[0]?.taints?.[0];
    if (taint === undefined) throw new Error('fixture has no taint');
    taint.timeAdded = '2025-03-04T05:06:07.250+02:00';
    const model = toResourceSliceModel(slice);
    expect(model).toBeInstanceOf(V1ResourceSlice);
    const wire: unknown = JSON.parse(
      JSON.stringify(ObjectSerializer.serialize(model, 'V1ResourceSlice', '')),
    );
    expect(wire).toEqual(slice);
  });

  it('formats times as the API server does', () => {
    expect(formatKubeTime(new Date('2025-03-04T05:06:07Z'))).toBe('2025-03-04T05:06:07Z');
    expect(formatKubeTime(new Date('2025-03-04T05:06:07.120Z'))).toBe('2025-03-04T05:06:07.120Z');
  });
});
