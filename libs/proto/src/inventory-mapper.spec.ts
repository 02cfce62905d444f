import { BinaryWriter } from '@bufbuild/protobuf/wire';
import type { DriverInventory } from '@slicekeeper/contracts';
import { fromDriverInventory, mapDriverResources, toDriverInventory } from './inventory-mapper';
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

describe('int64 range', () => {
  const MAX = 2n ** 53n - 1n;

  /** A decoded message with one device whose `x` attribute is `int` and pool generation `generation`. */
  function decoded(int: bigint, generation?: bigint): publisher.DriverResources {
    const message = publisher.DriverResources.fromPartial({
      pools: [
        { name: 'other', devices: [{ name: 'd' }] },
        {
          name: 'p',
          generation,
          devices: [
            { name: 'd0' },
            {
              name: 'd1',
              attributes: { 'example.com/x': { value: { $case: 'intValue', value: int } } },
            },
          ],
        },
      ],
    });
    return publisher.DriverResources.decode(publisher.DriverResources.encode(message).finish());
  }

  it.each([
    ['zero', 0n],
    ['largest-exact', MAX],
    ['smallest-exact', -MAX],
  ])('carries %s over as a number', (_, int) => {
    const mapping = mapDriverResources(decoded(int, MAX), { nodeName: 'n' });
    expect(mapping).toEqual({
      kind: 'inventory',
      inventory: expect.objectContaining({
        pools: [
          expect.anything(),
          expect.objectContaining({
            generation: Number.MAX_SAFE_INTEGER,
            devices: [
              { name: 'd0' },
              { name: 'd1', attributes: { 'example.com/x': { int: Number(int) } } },
            ],
          }),
        ],
      }) as unknown,
    });
  });

  it.each([
    ['2^53+1', MAX + 2n, '9007199254740993'],
    ['-2^53', -(MAX + 1n), '-9007199254740992'],
    ['2^63-1', 2n ** 63n - 1n, '9223372036854775807'],
  ])('rejects an attribute of %s, naming the field', (_, int, printed) => {
    expect(mapDriverResources(decoded(int), { nodeName: 'n' })).toEqual({
      kind: 'rejected',
      problem:
        `pools[1].devices[1].attributes[example.com/x].int: ${printed} is outside the range ` +
        'slicekeeper can publish exactly (±9007199254740991)',
    });
  });

  it('rejects a pool generation beyond the exact range, naming the field', () => {
    expect(mapDriverResources(decoded(0n, 2n ** 63n - 1n), { nodeName: 'n' })).toEqual({
      kind: 'rejected',
      problem:
        'pools[1].generation: 9223372036854775807 is outside the range slicekeeper can publish ' +
        'exactly (±9007199254740991)',
    });
  });

  it('leaves a negative generation that a number holds to the validator', () => {
    const mapping = mapDriverResources(decoded(0n, -1n), { nodeName: 'n' });
    expect(mapping.kind === 'inventory' && mapping.inventory.pools[1]?.generation).toBe(-1);
  });

  it('names the devices of explicit slices by their slice', () => {
    const message = publisher.DriverResources.fromPartial({
      pools: [
        {
          name: 'p',
          slices: [
            { devices: [{ name: 'a' }] },
            {
              devices: [
                {
                  name: 'b',
                  attributes: { x: { value: { $case: 'intValue', value: 2n ** 60n } } },
                },
              ],
            },
          ],
        },
      ],
    });
    const mapping = mapDriverResources(message, { nodeName: 'n' });
    expect(mapping.kind === 'rejected' && mapping.problem).toMatch(
      /^pools\[0\]\.slices\[1\]\.devices\[0\]\.attributes\[x\]\.int: 1152921504606846976 is outside/,
    );
  });

  it('lists every problem up to the bound, then counts the rest', () => {
    const devices = Array.from({ length: 1000 }, (_, k) => ({
      name: `d${k}`,
      attributes: { x: { value: { $case: 'intValue' as const, value: 2n ** 62n } } },
    }));
    const message = publisher.DriverResources.fromPartial({ pools: [{ name: 'p', devices }] });
    const mapping = mapDriverResources(message, { nodeName: 'n' });
    if (mapping.kind !== 'rejected') throw new Error('expected a rejection');
    const listed = mapping.problem.split('; ');
    expect(listed).toHaveLength(21);
    expect(listed[19]).toMatch(/^pools\[0\]\.devices\[19\]\.attributes\[x\]\.int: /);
    expect(listed[20]).toBe('… and 980 more');
  });

  it('rejects a taint time beyond the range of a date, instead of throwing', () => {
    // pools[0].devices[0].taints[0].time_added.seconds = 2^62, as a driver may send it.
    const w = new BinaryWriter();
    w.uint32(10).fork(); // DriverResources.pools
    w.uint32(10).string('p'); // Pool.name
    w.uint32(42).fork(); // Pool.devices
    w.uint32(10).string('d'); // Device.name
    w.uint32(34).fork(); // Device.taints
    w.uint32(10).string('k').uint32(26).string('None'); // DeviceTaint.key, .effect
    w.uint32(34)
      .fork()
      .uint32(8)
      .int64(2n ** 62n)
      .join(); // DeviceTaint.time_added.seconds
    w.join().join().join();
    const message = publisher.DriverResources.decode(w.finish());
    expect(mapDriverResources(message, { nodeName: 'n' })).toEqual({
      kind: 'rejected',
      problem:
        'pools[0].devices[0].taints[0].timeAdded: is outside the range of a timestamp ' +
        '(0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z)',
    });
  });

  it('throws the rejection from toDriverInventory, which is for messages the caller built', () => {
    expect(() => toDriverInventory(decoded(2n ** 63n - 1n), { nodeName: 'n' })).toThrow(
      /attributes\[example\.com\/x\]\.int: 9223372036854775807 is outside/,
    );
  });
});
