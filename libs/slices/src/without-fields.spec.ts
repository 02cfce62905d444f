import { withoutFields } from './without-fields';

describe('withoutFields', () => {
  const slice = {
    spec: {
      sharedCounters: [{ name: 'mem' }],
      devices: [
        { name: 'a', taints: [{ key: 'k', effect: 'NoSchedule' }] },
        { name: 'b', taints: [{ key: 'k', effect: 'NoSchedule' }] },
      ],
    },
  };

  it('removes the named fields from a copy, leaving the original alone', () => {
    const stripped = withoutFields(slice, [
      { path: 'spec.devices[1].taints' },
      { path: 'spec.sharedCounters' },
    ]);
    expect(stripped).toEqual({
      spec: {
        devices: [{ name: 'a', taints: [{ key: 'k', effect: 'NoSchedule' }] }, { name: 'b' }],
      },
    });
    expect(slice.spec.devices[1]?.taints).toHaveLength(1);
    expect(slice.spec.sharedCounters).toHaveLength(1);
  });

  it('follows map keys, dots included', () => {
    const device = {
      capacity: { 'example.com/x': { value: '1', requestPolicy: { default: '1' } } },
    };
    expect(withoutFields(device, [{ path: 'capacity[example.com/x].requestPolicy' }])).toEqual({
      capacity: { 'example.com/x': { value: '1' } },
    });
  });

  it('ignores paths that do not exist or do not parse', () => {
    expect(withoutFields(slice, [{ path: 'spec.devices[7].taints' }, { path: 'spec.[x' }])).toEqual(
      slice,
    );
  });
});
