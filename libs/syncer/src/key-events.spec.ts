import type { StreamState, SyncOutcome, SyncStatus } from '@slicekeeper/contracts';
import type { EventOccurrence } from '@slicekeeper/kube';
import { KeyEventReporter, keyEvents } from './key-events';
import type { KeyEvent, KeyEventInput } from './key-events';

const KEY = { node: 'node-a', driver: 'gpu.example.com' };
const SLICES = ['00000-gpu.example.com-node-a-x7k2p', '00001-gpu.example.com-node-a-q9z4m'];
const POOLS = [{ name: 'node-a', generation: 4, sliceCount: 2, devices: 130 }];

function status(outcome: SyncOutcome, overrides: Partial<SyncStatus> = {}): SyncStatus {
  return {
    outcome,
    snapshotGeneration: 3,
    slices: outcome === 'synced' ? SLICES : [],
    pools: outcome === 'synced' ? POOLS : [],
    attempt: 1,
    startedAt: '2026-11-24T12:00:01.010Z',
    finishedAt: '2026-11-24T12:00:01.020Z',
    writes: 0,
    ...overrides,
  };
}

function stream(state: StreamState['state'], overrides: Partial<StreamState> = {}): StreamState {
  return {
    state,
    endpoint: 'unix:///plugins/gpu.sock',
    since: '2026-11-24T12:00:00.000Z',
    reconnects: 0,
    ...overrides,
  };
}

const synced = status('synced');
const invalid = status('invalid', {
  error: 'inventory invalid',
  problems: [
    { field: 'pools[0].devices[1].name', message: 'Invalid value: "GPU_1": must be a DNS label' },
    { field: 'pools[0].devices[2].name', message: 'Invalid value: "GPU_2": must be a DNS label' },
    { field: 'pools[0].devices[3].name', message: 'Invalid value: "GPU_3": must be a DNS label' },
    { field: 'pools[0].devices[4].name', message: 'Invalid value: "GPU_4": must be a DNS label' },
  ],
});

interface Case {
  name: string;
  input: Omit<KeyEventInput, 'key'>;
  expected: Pick<KeyEvent, 'type' | 'reason'>[];
  /** A part of the first event's note. */
  note?: string;
}

const base = { registered: true, stream: stream('streaming') };

const cases: Case[] = [
  { name: 'first-publish', input: { ...base, previous: undefined, status: synced }, expected: [] },
  { name: 'steady', input: { ...base, previous: synced, status: synced }, expected: [] },
  {
    name: 'invalid-names-fields',
    input: { ...base, previous: synced, status: invalid },
    expected: [{ type: 'Warning', reason: 'InvalidInventory' }],
    note: 'driver gpu.example.com: inventory refused, nothing published from it: pools[0].devices[1].name: Invalid value: "GPU_1": must be a DNS label; pools[0].devices[2].name',
  },
  {
    // Every resync of a key still invalid is an occurrence: the recorder makes it a series.
    name: 'invalid-again',
    input: { ...base, previous: invalid, status: invalid },
    expected: [{ type: 'Warning', reason: 'InvalidInventory' }],
    note: '(and 1 more)',
  },
  {
    name: 'invalid-without-field-problems',
    input: {
      ...base,
      previous: synced,
      status: status('invalid', { error: 'message of 5000000 bytes exceeds 4194304' }),
    },
    expected: [{ type: 'Warning', reason: 'InvalidInventory' }],
    note: 'inventory refused, message of 5000000 bytes exceeds 4194304',
  },
  {
    name: 'retrying-is-transient',
    input: { ...base, previous: synced, status: status('retrying', { error: '503' }) },
    expected: [],
  },
  {
    name: 'failed',
    input: {
      ...base,
      previous: synced,
      status: status('failed', { error: 'create ResourceSlice: forbidden' }),
    },
    expected: [{ type: 'Warning', reason: 'PublishFailed' }],
    note: 'driver gpu.example.com: create ResourceSlice: forbidden',
  },
  {
    name: 'corrupt',
    input: {
      ...base,
      previous: synced,
      status: status('corrupt', { error: 'snapshot: not JSON' }),
    },
    expected: [{ type: 'Warning', reason: 'PublishFailed' }],
  },
  {
    name: 'node-missing',
    input: { ...base, previous: undefined, status: status('node-missing') },
    expected: [{ type: 'Warning', reason: 'NodeMissing' }],
  },
  {
    name: 'recovered-from-invalid',
    input: { ...base, previous: invalid, status: synced },
    expected: [{ type: 'Normal', reason: 'ResourcesPublished' }],
    note: 'driver gpu.example.com: 130 devices published in 2 ResourceSlices (node-a generation 4)',
  },
  {
    name: 'recovered-from-node-missing',
    input: { ...base, previous: status('node-missing'), status: synced },
    expected: [{ type: 'Normal', reason: 'ResourcesPublished' }],
  },
  {
    name: 'recovered-after-retries-is-no-news',
    input: { ...base, previous: status('retrying'), status: synced },
    expected: [],
  },
  {
    name: 'fields-dropped',
    input: {
      ...base,
      previous: synced,
      status: status('synced', { droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'] }),
    },
    expected: [{ type: 'Warning', reason: 'FieldsDropped' }],
    note: 'dropped fields of its ResourceSlices (a feature gate is off): spec.devices[*].taints (DRADeviceTaints)',
  },
  {
    name: 'fields-dropped-known',
    input: {
      ...base,
      previous: status('synced', { droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'] }),
      status: status('synced', { droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'] }),
    },
    expected: [],
  },
  {
    name: 'unreachable',
    input: {
      registered: true,
      stream: stream('backoff', { unreachableSince: '2026-11-24T12:00:00.000Z' }),
      previous: synced,
      status: status('synced', {
        taints: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
      }),
    },
    expected: [{ type: 'Warning', reason: 'DriverUnreachable' }],
    note: 'driver gpu.example.com unreachable since 2026-11-24T12:00:00.000Z: its devices are tainted gpu.example.com/driver-unreachable:NoSchedule',
  },
  {
    name: 'unreachable-still',
    input: {
      registered: true,
      stream: stream('backoff', { unreachableSince: '2026-11-24T12:00:00.000Z' }),
      previous: status('synced', {
        taints: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
      }),
      status: status('synced', {
        taints: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
      }),
    },
    expected: [],
  },
  {
    name: 'unreachable-taints-dropped',
    input: {
      registered: true,
      stream: stream('backoff', { unreachableSince: '2026-11-24T12:00:00.000Z' }),
      previous: synced,
      status: status('synced', {
        droppedFields: ['spec.devices[*].taints (DRADeviceTaints)'],
        taints: { unreachable: 'dropped', unhealthy: 0, healthUnknown: 0 },
      }),
    },
    expected: [
      { type: 'Warning', reason: 'FieldsDropped' },
      { type: 'Warning', reason: 'DriverUnreachable' },
    ],
  },
  {
    name: 'reconnected',
    input: {
      ...base,
      previous: status('synced', {
        taints: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
      }),
      status: synced,
    },
    expected: [{ type: 'Normal', reason: 'ResourcesPublished' }],
  },
  {
    name: 'wiped',
    input: {
      registered: true,
      stream: stream('wiped'),
      previous: status('synced', {
        taints: { unreachable: 'tainted', unhealthy: 0, healthUnknown: 0 },
      }),
      status: status('withdrawn'),
    },
    expected: [{ type: 'Warning', reason: 'ResourceSlicesWithdrawn' }],
    note: 'driver gpu.example.com: unreachable for longer than the wipe delay: 2 ResourceSlices deleted',
  },
  {
    name: 'unimplemented',
    input: {
      registered: true,
      stream: stream('unimplemented'),
      previous: synced,
      status: status('withdrawn'),
    },
    expected: [{ type: 'Warning', reason: 'ResourceSlicesWithdrawn' }],
  },
  {
    name: 'plugin-removed',
    input: { registered: false, stream: undefined, previous: synced, status: status('withdrawn') },
    expected: [{ type: 'Normal', reason: 'ResourceSlicesWithdrawn' }],
    note: 'driver gpu.example.com: plugin removed: 2 ResourceSlices deleted',
  },
  {
    name: 'withdrawn-again-is-no-news',
    input: { ...base, previous: status('withdrawn'), status: status('withdrawn') },
    expected: [],
  },
  {
    name: 'published-again-after-wipe',
    input: { ...base, previous: status('withdrawn'), status: synced },
    expected: [{ type: 'Normal', reason: 'ResourcesPublished' }],
  },
];

describe('keyEvents', () => {
  it.each(cases)('$name', ({ input, expected, note }) => {
    const events = keyEvents({ key: KEY, ...input });
    expect(events.map(({ type, reason }) => ({ type, reason }))).toEqual(expected);
    if (note !== undefined) expect(events[0]?.note).toContain(note);
  });
});

describe('KeyEventReporter', () => {
  function reporter(nodeUid: string | undefined, slice?: { name: string; uid: string }) {
    const recorded: EventOccurrence[] = [];
    const events = new KeyEventReporter({
      recorder: { record: (occurrence) => recorded.push(occurrence) },
      nodeUid: () => nodeUid,
      sliceOf: () => slice,
    });
    return { events, recorded };
  }

  it('makes the Events about the Node, by its UID', () => {
    const { events, recorded } = reporter('9f1c');
    events.report({ key: KEY, ...base, previous: synced, status: invalid });
    expect(recorded).toEqual([
      expect.objectContaining({
        regarding: { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: '9f1c' },
        reason: 'InvalidInventory',
        action: 'PublishResourceSlices',
      }),
    ]);
  });

  it('names a Node it does not know by its name as its UID, as the kubelet does', () => {
    const { events, recorded } = reporter(undefined);
    events.report({ key: KEY, ...base, previous: undefined, status: status('node-missing') });
    expect(recorded[0]?.regarding.uid).toBe('node-a');
  });

  const cluster = { node: '', driver: 'nic.example.com' };

  it('makes the Events of a cluster-scoped key about its ResourceSlice, by its UID', () => {
    const { events, recorded } = reporter('9f1c', { name: '0-nic.example.com-x7k2p', uid: 'a1b2' });
    events.report({ key: cluster, ...base, previous: synced, status: invalid });
    expect(recorded).toEqual([
      expect.objectContaining({
        regarding: {
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceSlice',
          name: '0-nic.example.com-x7k2p',
          uid: 'a1b2',
        },
        reason: 'InvalidInventory',
      }),
    ]);
  });

  it("names a cluster-scoped key's slice from its status when the cache has none any more", () => {
    const { events, recorded } = reporter(undefined);
    events.report({
      key: cluster,
      ...base,
      previous: { ...synced, slices: ['0-nic.example.com-x7k2p'] },
      status: status('withdrawn'),
    });
    expect(recorded[0]?.regarding).toMatchObject({
      kind: 'ResourceSlice',
      name: '0-nic.example.com-x7k2p',
      uid: '0-nic.example.com-x7k2p',
    });
  });

  it('has nothing to tell about a cluster-scoped key that never had a slice', () => {
    const { events, recorded } = reporter('9f1c');
    events.report({
      key: cluster,
      ...base,
      previous: { ...synced, slices: [] },
      status: { ...invalid, slices: [] },
    });
    expect(recorded).toEqual([]);
  });
});
