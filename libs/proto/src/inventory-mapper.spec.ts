import type { DriverInventory } from '@slicekeeper/contracts';
import { fromDriverInventory, toDriverInventory } from './inventory-mapper';
import { publisher } from './index';

const inventory: DriverInventory = {
  pools: [
    {
      name: 'node-a',
      generation: 7,
      scope: { kind: 'node' },
      devices: [
        {
          name: 'gpu-0',
          attributes: {
            count: { int: 3 },
            healthy: { bool: true },
            model: { string: 'A100' },
            driverVersion: { version: '1.2.3' },
          },
          capacity: { memory: { value: '80Gi' } },
          taints: [
            {
              key: 'example.com/unhealthy',
              value: 'ecc',
              effect: 'NoSchedule',
              timeAdded: '2026-01-02T03:04:05.000Z',
            },
          ],
          consumesCounters: [
            { counterSet: 'gpu-0-counters', counters: { memory: { value: '40Gi' } } },
          ],
        },
      ],
      sharedCounters: [{ name: 'gpu-0-counters', counters: { memory: { value: '80Gi' } } }],
    },
    {
      name: 'fabric',
      scope: {
        kind: 'node-selector',
        nodeSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'rack', operator: 'In', values: ['r1'] }] },
          ],
        },
      },
      devices: [],
      slices: [{ devices: [{ name: 'nic-0' }] }, { devices: [{ name: 'nic-1' }] }],
    },
    { name: 'shared', scope: { kind: 'all-nodes' }, devices: [{ name: 'fpga-0' }] },
  ],
};

describe('inventory mapping', () => {
  it('round-trips every field through the wire format', () => {
    const bytes = publisher.DriverResources.encode(fromDriverInventory(inventory)).finish();
    const decoded = publisher.DriverResources.decode(bytes);
    expect(toDriverInventory(decoded, { nodeName: 'node-a' })).toEqual(inventory);
  });

  it("names an unnamed pool after the plugin's node", () => {
    const message = publisher.DriverResources.fromPartial({ pools: [{ name: '' }] });
    expect(toDriverInventory(message, { nodeName: 'node-b' }).pools[0]?.name).toBe('node-b');
  });

  it('keeps an attribute without a value, for the validator to reject', () => {
    const message = publisher.DriverResources.fromPartial({
      pools: [{ name: 'p', devices: [{ name: 'd', attributes: { broken: {} } }] }],
    });
    expect(toDriverInventory(message, { nodeName: 'n' }).pools[0]?.devices[0]?.attributes).toEqual({
      broken: {},
    });
  });

  it('treats all_nodes=false as node-local', () => {
    const message = publisher.DriverResources.fromPartial({
      pools: [{ name: 'p', nodeScope: { $case: 'allNodes', value: false } }],
    });
    expect(toDriverInventory(message, { nodeName: 'n' }).pools[0]?.scope).toEqual({ kind: 'node' });
  });
});
