import type { StreamState, SyncOutcome, SyncStatus } from '@slicekeeper/contracts';
import type { ObservedCondition } from '@slicekeeper/kube';
import type { KeyPublishState } from '@slicekeeper/state';
import {
  MAX_CONDITION_MESSAGE_LENGTH,
  evaluateNodeCondition,
  planNodeConditionWrite,
} from './node-condition';
import type { NodeCondition, NodeConditionReason } from './node-condition';

const NODE = 'node-a';
const GPU = 'gpu.example.com';
const NIC = 'nic.example.com';
const NOW = new Date('2026-11-21T12:00:07.654Z');

function status(outcome: SyncOutcome, overrides: Partial<SyncStatus> = {}): SyncStatus {
  return {
    outcome,
    snapshotGeneration: 3,
    slices: [],
    pools: [],
    attempt: 1,
    startedAt: '2026-11-21T12:00:01.010Z',
    finishedAt: '2026-11-21T12:00:01.020Z',
    writes: 0,
    ...overrides,
  };
}

function stream(state: StreamState['state'], overrides: Partial<StreamState> = {}): StreamState {
  return {
    state,
    endpoint: 'unix:///plugins/driver.sock',
    since: '2026-11-21T12:00:00.000Z',
    reconnects: 0,
    ...overrides,
  };
}

/** A key of node-a whose current snapshot (generation 3) is published, unless overridden. */
function key(
  driver: string,
  overrides: { status?: SyncStatus; stream?: StreamState; snapshotGeneration?: number } = {
    status: status('synced'),
    stream: stream('streaming'),
    snapshotGeneration: 3,
  },
): KeyPublishState {
  return { key: { node: NODE, driver }, ...overrides };
}

const published = (driver: string) => key(driver);

interface EvaluateCase {
  name: string;
  keys: KeyPublishState[];
  expected: NodeCondition;
}

const evaluateCases: EvaluateCase[] = [
  {
    name: 'all-published',
    keys: [published(NIC), published(GPU)],
    expected: {
      status: 'True',
      reason: 'Published',
      message: 'published: gpu.example.com, nic.example.com',
    },
  },
  {
    name: 'withdrawn-empty-inventory',
    keys: [key(GPU, { status: status('withdrawn'), snapshotGeneration: 3 })],
    expected: { status: 'True', reason: 'Published', message: 'published: gpu.example.com' },
  },
  {
    name: 'withdrawn-unimplemented',
    // The watcher withdrew its snapshot (the counter stays): the driver publishes nothing.
    keys: [
      key(GPU, {
        status: status('withdrawn', { snapshotGeneration: 0 }),
        stream: stream('unimplemented'),
        snapshotGeneration: 2,
      }),
    ],
    expected: { status: 'True', reason: 'Published', message: 'published: gpu.example.com' },
  },
  {
    name: 'no-plugins',
    keys: [],
    expected: { status: 'False', reason: 'NoPlugins', message: 'no DRA driver is registered' },
  },
  {
    name: 'unreachable',
    keys: [
      published(NIC),
      key(GPU, {
        status: status('synced'),
        stream: stream('connecting', { unreachableSince: '2026-11-21T11:59:00.000Z' }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'DriverUnreachable',
      message: 'gpu.example.com: driver unreachable since 2026-11-21T11:59:00.000Z',
    },
  },
  {
    name: 'unreachable-backoff',
    keys: [
      key(GPU, {
        status: status('synced'),
        stream: stream('backoff', { error: 'connection refused' }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'DriverUnreachable',
      message: 'gpu.example.com: driver unreachable, reconnecting: connection refused',
    },
  },
  {
    name: 'unreachable-wiped',
    keys: [
      key(GPU, {
        status: status('withdrawn', { snapshotGeneration: 0 }),
        stream: stream('wiped'),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'DriverUnreachable',
      message: 'gpu.example.com: driver unreachable, its slices were withdrawn',
    },
  },
  {
    name: 'invalid-first-problem',
    keys: [
      key(GPU, {
        status: status('invalid', {
          error: '2 problems',
          problems: [
            { field: 'spec.devices[0].name', message: 'must be a DNS label' },
            { field: 'spec.devices[1].name', message: 'must be a DNS label' },
          ],
        }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'Invalid',
      message: 'gpu.example.com: invalid: spec.devices[0].name: must be a DNS label',
    },
  },
  {
    name: 'invalid-rejected-message',
    keys: [
      key(GPU, {
        status: status('invalid', { error: 'message larger than 4194304 bytes' }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'Invalid',
      message: 'gpu.example.com: invalid: message larger than 4194304 bytes',
    },
  },
  {
    name: 'corrupt-outcome',
    keys: [
      key(GPU, {
        status: status('corrupt', {
          error: 'corrupt snapshot of node-a/gpu.example.com: not JSON',
        }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'Invalid',
      message: 'gpu.example.com: corrupt: corrupt snapshot of node-a/gpu.example.com: not JSON',
    },
  },
  {
    name: 'corrupt-record',
    keys: [
      {
        key: { node: NODE, driver: GPU },
        corrupt: 'corrupt status of node-a/gpu.example.com: not JSON',
      },
    ],
    expected: {
      status: 'False',
      reason: 'Invalid',
      message: 'gpu.example.com: corrupt status of node-a/gpu.example.com: not JSON',
    },
  },
  {
    name: 'failed',
    keys: [
      key(GPU, {
        status: status('failed', { error: 'create ResourceSlice "x": forbidden: no' }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'Failed',
      message: 'gpu.example.com: failed: create ResourceSlice "x": forbidden: no',
    },
  },
  {
    name: 'node-missing',
    keys: [key(GPU, { status: status('node-missing'), snapshotGeneration: 3 })],
    expected: {
      status: 'False',
      reason: 'NodeMissing',
      message: 'gpu.example.com: the Node was missing at its last sync',
    },
  },
  {
    name: 'publishing-no-status',
    keys: [key(GPU, { stream: stream('connecting') })],
    expected: {
      status: 'False',
      reason: 'Publishing',
      message: 'gpu.example.com: waiting for its first inventory',
    },
  },
  {
    name: 'publishing-not-synced-yet',
    keys: [key(GPU, { snapshotGeneration: 1 })],
    expected: {
      status: 'False',
      reason: 'Publishing',
      message: 'gpu.example.com: publishing inventory 1',
    },
  },
  {
    name: 'publishing-status-behind',
    keys: [key(GPU, { status: status('synced'), snapshotGeneration: 4 })],
    expected: {
      status: 'False',
      reason: 'Publishing',
      message: 'gpu.example.com: publishing inventory 4',
    },
  },
  {
    name: 'publishing-retrying',
    keys: [
      key(GPU, {
        status: status('retrying', { error: 'create ResourceSlice "x": server-error: boom' }),
        snapshotGeneration: 3,
      }),
    ],
    expected: {
      status: 'False',
      reason: 'Publishing',
      message: 'gpu.example.com: retrying: create ResourceSlice "x": server-error: boom',
    },
  },
  {
    name: 'publishing-no-snapshot',
    // A resync before the driver's first message withdrew nothing: there is nothing yet.
    keys: [key(GPU, { status: status('withdrawn', { snapshotGeneration: 0 }) })],
    expected: {
      status: 'False',
      reason: 'Publishing',
      message: 'gpu.example.com: waiting for its first inventory',
    },
  },
  {
    // Deregistered to restart: the slices stay through the removal grace, and so does True.
    name: 'published-within-removal-grace',
    keys: [key(GPU, { status: status('removing'), snapshotGeneration: 3 })],
    expected: { status: 'True', reason: 'Published', message: 'published: gpu.example.com' },
  },
];

describe('evaluateNodeCondition', () => {
  it.each(evaluateCases)('$name', ({ keys, expected }) => {
    expect(evaluateNodeCondition(keys)).toEqual(expected);
  });

  it('shows the worst reason, and names every unpublished driver worst first', () => {
    const keys = [
      key('a.example.com', { snapshotGeneration: 1 }),
      key('b.example.com', { status: status('node-missing'), snapshotGeneration: 3 }),
      key('c.example.com', { status: status('failed', { error: 'no' }), snapshotGeneration: 3 }),
      key('d.example.com', { status: status('invalid', { error: 'bad' }), snapshotGeneration: 3 }),
      published('e.example.com'),
      key('f.example.com', { stream: stream('wiped'), snapshotGeneration: 3 }),
    ];
    const expectedOrder: NodeConditionReason[] = [
      'DriverUnreachable',
      'Invalid',
      'Failed',
      'NodeMissing',
      'Publishing',
    ];
    // Drop the worst key one at a time: the next one in the order takes its place.
    const worstFirst = ['f.example.com', 'd.example.com', 'c.example.com', 'b.example.com'];
    for (const [index, reason] of expectedOrder.entries()) {
      const dropped = worstFirst.slice(0, index);
      const remaining = keys.filter((k) => !dropped.includes(k.key.driver));
      expect(evaluateNodeCondition(remaining).reason).toBe(reason);
    }
    expect(evaluateNodeCondition(keys).message).toBe(
      [
        'f.example.com: driver unreachable, its slices were withdrawn',
        'd.example.com: invalid: bad',
        'c.example.com: failed: no',
        'b.example.com: the Node was missing at its last sync',
        'a.example.com: publishing inventory 1',
      ].join('; '),
    );
  });

  it('puts an unreachable driver above its own last outcome', () => {
    const condition = evaluateNodeCondition([
      key(GPU, {
        status: status('invalid', { error: 'bad' }),
        stream: stream('backoff'),
        snapshotGeneration: 3,
      }),
    ]);
    expect(condition.reason).toBe('DriverUnreachable');
  });

  it('caps the message', () => {
    const problem = { field: 'spec.devices[0].name', message: 'x'.repeat(5000) };
    const { message } = evaluateNodeCondition([
      key(GPU, { status: status('invalid', { problems: [problem] }), snapshotGeneration: 3 }),
    ]);
    expect(message).toHaveLength(MAX_CONDITION_MESSAGE_LENGTH);
    expect(message.startsWith('gpu.example.com: invalid: spec.devices[0].name: xxx')).toBe(true);
    expect(message.endsWith('…')).toBe(true);
  });
});

const TRUE: NodeCondition = { status: 'True', reason: 'Published', message: 'published: gpu' };
const INVALID: NodeCondition = { status: 'False', reason: 'Invalid', message: 'gpu: invalid: x' };
const PUBLISHING: NodeCondition = {
  status: 'False',
  reason: 'Publishing',
  message: 'gpu: publishing inventory 2',
};
const NO_PLUGINS: NodeCondition = {
  status: 'False',
  reason: 'NoPlugins',
  message: 'no DRA driver is registered',
};

function shown(status: 'True' | 'False' | 'Unknown', reason: string): ObservedCondition {
  return { kind: 'set', status, reason };
}

interface PlanCase {
  name: string;
  desired: NodeCondition;
  observed: ObservedCondition | undefined;
  /** undefined: no write. */
  expected: { status: string; reason: string; message: string; transition: boolean } | undefined;
}

const planCases: PlanCase[] = [
  {
    name: 'first-condition',
    desired: TRUE,
    observed: undefined,
    expected: { ...TRUE, transition: true },
  },
  { name: 'keep-true', desired: TRUE, observed: shown('True', 'Published'), expected: undefined },
  {
    name: 'keep-false-same-reason',
    // Another message (another driver, another field) is no transition.
    desired: INVALID,
    observed: shown('False', 'Invalid'),
    expected: undefined,
  },
  {
    name: 'true-to-false',
    desired: INVALID,
    observed: shown('True', 'Published'),
    expected: { ...INVALID, transition: true },
  },
  {
    name: 'false-to-true',
    desired: TRUE,
    observed: shown('False', 'Publishing'),
    expected: { ...TRUE, transition: true },
  },
  {
    name: 'reason-change-keeps-transition-time',
    desired: PUBLISHING,
    observed: shown('False', 'Invalid'),
    expected: { ...PUBLISHING, transition: false },
  },
  {
    name: 'unknown-to-true',
    desired: TRUE,
    observed: shown('Unknown', 'Published'),
    expected: { ...TRUE, transition: true },
  },
  {
    name: 'rewrite-malformed',
    desired: TRUE,
    observed: { kind: 'malformed', problem: 'status.conditions[4].status: must be True…' },
    expected: { ...TRUE, transition: true },
  },
  {
    name: 'no-plugins-never-created',
    desired: NO_PLUGINS,
    observed: undefined,
    expected: undefined,
  },
  {
    name: 'no-plugins-after-plugins',
    desired: NO_PLUGINS,
    observed: shown('True', 'Published'),
    expected: { ...NO_PLUGINS, transition: true },
  },
  {
    name: 'keep-no-plugins',
    desired: NO_PLUGINS,
    observed: shown('False', 'NoPlugins'),
    expected: undefined,
  },
];

describe('planNodeConditionWrite', () => {
  it.each(planCases)('$name', ({ desired, observed, expected }) => {
    const write = planNodeConditionWrite(desired, observed, NOW);
    if (expected === undefined) {
      expect(write).toBeUndefined();
      return;
    }
    const { transition, ...condition } = expected;
    expect(write).toEqual({
      type: 'DRAResourcesPublished',
      ...condition,
      lastHeartbeatTime: '2026-11-21T12:00:07Z',
      ...(transition ? { lastTransitionTime: '2026-11-21T12:00:07Z' } : {}),
    });
  });
});
