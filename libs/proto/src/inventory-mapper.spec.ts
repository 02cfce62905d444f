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
          health: {
            status: 'unhealthy',
            message: 'ECC errors above threshold',
            timeoutSeconds: 30,
          },
        },
        { name: 'gpu-1', health: { status: 'healthy' } },
        { name: 'gpu-2', health: { status: 'unknown', timeoutSeconds: 86_400 } },
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

  it("keeps the driver's traceparent off the wire, unchecked, with an inventory or a rejection", () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const bytes = publisher.DriverResources.encode(
      fromDriverInventory(inventory, traceparent),
    ).finish();
    const sent = publisher.DriverResources.decode(bytes);
    expect(mapDriverResources(sent, { nodeName: 'node-a' })).toEqual({
      kind: 'inventory',
      inventory,
      traceparent,
    });
    const rejected = publisher.DriverResources.fromPartial({
      traceparent: 'not-a-traceparent',
      pools: [{ name: 'p', generation: 2n ** 63n - 1n }],
    });
    expect(mapDriverResources(rejected, { nodeName: 'n' })).toMatchObject({
      kind: 'rejected',
      traceparent: 'not-a-traceparent',
    });
    const untraced = mapDriverResources(publisher.DriverResources.fromPartial({}), {
      nodeName: 'n',
    });
    expect('traceparent' in untraced).toBe(false);
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

describe('device health', () => {
  /** A decoded message of one pool `p` with devices `d0` (no health) and `d1` of `health`. */
  function decoded(health: Partial<publisher.DeviceHealth>): publisher.DriverResources {
    const message = publisher.DriverResources.fromPartial({
      pools: [{ name: 'p', devices: [{ name: 'd0' }, { name: 'd1', health }] }],
    });
    return publisher.DriverResources.decode(publisher.DriverResources.encode(message).finish());
  }

  function healthOf(health: Partial<publisher.DeviceHealth>) {
    const mapping = mapDriverResources(decoded(health), { nodeName: 'n' });
    if (mapping.kind === 'rejected') throw new Error(mapping.problem);
    return mapping.inventory.pools[0]?.devices[1]?.health;
  }

  const { HEALTH_STATUS_HEALTHY, HEALTH_STATUS_UNHEALTHY, HEALTH_STATUS_UNKNOWN } =
    publisher.HealthStatus;

  it.each<[string, Partial<publisher.DeviceHealth>, unknown]>([
    ['healthy', { status: HEALTH_STATUS_HEALTHY }, { status: 'healthy' }],
    [
      'unhealthy-with-message',
      { status: HEALTH_STATUS_UNHEALTHY, message: 'ECC errors' },
      { status: 'unhealthy', message: 'ECC errors' },
    ],
    ['unknown', { status: HEALTH_STATUS_UNKNOWN }, { status: 'unknown' }],
    [
      'unspecified-is-no-health',
      { status: publisher.HealthStatus.HEALTH_STATUS_UNSPECIFIED, message: 'ignored' },
      undefined,
    ],
    [
      'empty-message-is-none',
      { status: HEALTH_STATUS_HEALTHY, message: '' },
      { status: 'healthy' },
    ],
    [
      'longest-message',
      { status: HEALTH_STATUS_UNHEALTHY, message: 'x'.repeat(1024) },
      { status: 'unhealthy', message: 'x'.repeat(1024) },
    ],
    [
      'whole-seconds',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 30n, nanos: 0 } },
      { status: 'healthy', timeoutSeconds: 30 },
    ],
    [
      'fraction-rounds-up',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 29n, nanos: 1 } },
      { status: 'healthy', timeoutSeconds: 30 },
    ],
    [
      'under-a-second-is-one',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 0n, nanos: 500_000_000 } },
      { status: 'healthy', timeoutSeconds: 1 },
    ],
    [
      'zero-timeout-is-none',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 0n, nanos: 0 } },
      { status: 'healthy' },
    ],
    [
      'one-day',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 86_400n, nanos: 0 } },
      { status: 'healthy', timeoutSeconds: 86_400 },
    ],
  ])('maps %s', (_, health, expected) => {
    expect(healthOf(health)).toEqual(expected);
  });

  it('leaves a device without health without one', () => {
    const mapping = mapDriverResources(decoded({ status: HEALTH_STATUS_HEALTHY }), {
      nodeName: 'n',
    });
    expect(mapping.kind === 'inventory' && mapping.inventory.pools[0]?.devices[0]).toEqual({
      name: 'd0',
    });
  });

  it.each<[string, Partial<publisher.DeviceHealth>, string]>([
    [
      'status-not-in-enum',
      { status: 7 as publisher.HealthStatus },
      'pools[0].devices[1].health.status: must be one of HEALTH_STATUS_UNSPECIFIED, ' +
        'HEALTH_STATUS_HEALTHY, HEALTH_STATUS_UNHEALTHY, HEALTH_STATUS_UNKNOWN (is 7)',
    ],
    [
      'message-too-long',
      { status: HEALTH_STATUS_UNHEALTHY, message: 'x'.repeat(1025) },
      'pools[0].devices[1].health.message: must be at most 1024 characters (is 1025)',
    ],
    [
      'negative-timeout',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: -1n, nanos: -500_000_000 } },
      'pools[0].devices[1].health.timeout: must not be negative (is -1.5s)',
    ],
    [
      'negative-nanos',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 0n, nanos: -1 } },
      'pools[0].devices[1].health.timeout: must not be negative (is -0.000000001s)',
    ],
    [
      'over-a-day',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 86_400n, nanos: 1 } },
      'pools[0].devices[1].health.timeout: must be at most 86400s (24h) (is 86400.000000001s)',
    ],
    [
      'int64-timeout',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 2n ** 62n, nanos: 0 } },
      'pools[0].devices[1].health.timeout: must be at most 86400s (24h) ' +
        '(is 4611686018427387904s)',
    ],
    [
      'nanos-out-of-range',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 1n, nanos: 1_000_000_000 } },
      'pools[0].devices[1].health.timeout.nanos: must be within ±999999999 (is 1000000000)',
    ],
    [
      'mixed-signs',
      { status: HEALTH_STATUS_HEALTHY, timeout: { seconds: 5n, nanos: -1 } },
      'pools[0].devices[1].health.timeout: seconds and nanos must have the same sign ' +
        '(is 5s and -1ns)',
    ],
  ])('rejects %s, naming the field and the rule', (_, health, problem) => {
    expect(mapDriverResources(decoded(health), { nodeName: 'n' })).toEqual({
      kind: 'rejected',
      problem,
    });
  });

  it('lists every problem of one health', () => {
    const health = {
      status: HEALTH_STATUS_UNHEALTHY,
      message: 'x'.repeat(2000),
      timeout: { seconds: -5n, nanos: 0 },
    };
    expect(mapDriverResources(decoded(health), { nodeName: 'n' })).toEqual({
      kind: 'rejected',
      problem:
        'pools[0].devices[1].health.message: must be at most 1024 characters (is 2000); ' +
        'pools[0].devices[1].health.timeout: must not be negative (is -5s)',
    });
  });

  it('sends a domain health as the driver means it', () => {
    const message = fromDriverInventory({
      pools: [
        {
          name: 'p',
          scope: { kind: 'node' },
          devices: [
            { name: 'a', health: { status: 'unknown', message: 'no answer', timeoutSeconds: 10 } },
            { name: 'b' },
          ],
        },
      ],
    });
    expect(message.pools[0]?.devices.map((d) => d.health)).toEqual([
      {
        status: HEALTH_STATUS_UNKNOWN,
        message: 'no answer',
        timeout: { seconds: 10n, nanos: 0 },
      },
      undefined,
    ]);
  });
});
