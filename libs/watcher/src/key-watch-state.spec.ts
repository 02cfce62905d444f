import type { DriverInventory, StreamState } from '@slicekeeper/contracts';
import { initialKeyWatchState, stepKeyWatch } from './key-watch-state';
import type { KeyWatchEffect, KeyWatchEvent, KeyWatchState, StreamView } from './key-watch-state';
import { gpus, registration } from './testing/fakes';

const A = 'a';
const B = 'b';
const WIPE_DELAY = 30_000;
const T0 = Date.parse('2026-11-21T12:00:00Z');
/** `s` seconds after the start. */
const at = (s: number): number => T0 + s * 1000;

function registered(now: number, ...endpoints: [string, number][]): KeyWatchEvent {
  const registrations = endpoints.map(([endpoint, sequence]) => registration(endpoint, sequence));
  return { kind: 'registrations-changed', registrations, now };
}

function view(endpoint: string, sequence: number, fields: Partial<StreamView>): StreamView {
  return {
    endpoint,
    sequence,
    state: 'connecting',
    since: T0,
    reconnects: 0,
    error: undefined,
    lastRejection: undefined,
    latest: undefined,
    lastMessageAt: undefined,
    ...fields,
  };
}

function changed(now: number, stream: StreamView): KeyWatchEvent {
  return { kind: 'stream-changed', stream, now };
}

/** A message on a stream streaming since `since` (the first message makes it streaming). */
function message(
  endpoint: string,
  sequence: number,
  inventory: DriverInventory,
  now: number,
  since = now,
): KeyWatchEvent {
  const stream = view(endpoint, sequence, {
    state: 'streaming',
    since,
    latest: inventory,
    lastMessageAt: now,
  });
  return changed(now, stream);
}

function failed(endpoint: string, sequence: number, now: number): KeyWatchEvent {
  const stream = view(endpoint, sequence, {
    state: 'backoff',
    since: now,
    reconnects: 1,
    error: '14 UNAVAILABLE: connect ECONNREFUSED',
    latest: eight,
    lastMessageAt: at(1),
  });
  return changed(now, stream);
}

function withHealth(status: 'healthy' | 'unhealthy', timeoutSeconds?: number): DriverInventory {
  const inventory = gpus(2);
  const [pool] = inventory.pools;
  const health = timeoutSeconds === undefined ? { status } : { status, timeoutSeconds };
  if (pool?.devices[0] !== undefined) pool.devices[0] = { ...pool.devices[0], health };
  return inventory;
}

/** The effects in a line each; logs and unchanged stream states are left out. */
function describeEffect(effect: KeyWatchEffect): string | undefined {
  switch (effect.kind) {
    case 'open-stream':
      return `open ${effect.registration.endpoint}#${effect.registration.sequence}`;
    case 'close-stream':
      return `close ${effect.endpoint} (${effect.reason})`;
    case 'set-timer':
      return `set ${effect.timer} @${(effect.at - T0) / 1000}s`;
    case 'clear-timer':
      return `clear ${effect.timer}`;
    case 'write-snapshot':
      switch (effect.write.kind) {
        case 'store':
          return `store ${effect.write.endpoint} (${effect.write.reason})`;
        case 'reject':
          return `reject ${effect.write.endpoint}: ${effect.write.problem}`;
        case 'withdraw':
          return 'withdraw';
      }
      break;
    case 'record-state':
      return effect.changed ? `record ${effect.state.state} ${effect.state.endpoint}` : undefined;
    case 'sync':
      return `sync ${effect.reason}`;
    case 'log':
      return undefined;
  }
}

function run(events: readonly KeyWatchEvent[]): KeyWatchState {
  return events.reduce(
    (state, event) => stepKeyWatch(state, event).state,
    initialKeyWatchState({ wipeDelayMs: WIPE_DELAY }),
  );
}

const eight = gpus(8);
const eightAgain = gpus(8);
const four = gpus(4);

interface Case {
  name: string;
  /** The events that bring the key where the case starts. */
  given: KeyWatchEvent[];
  when: KeyWatchEvent;
  effects: string[];
  /** What the key's recorded stream state holds after the step. */
  recorded?: Partial<StreamState>;
}

const live = [registered(at(0), [A, 1]), message(A, 1, eight, at(1))];
const lost = [...live, failed(A, 1, at(5))];

describe('stepKeyWatch', () => {
  it.each<Case>([
    {
      name: 'registration-opens-stream-and-arms-wipe',
      given: [],
      when: registered(at(0), [A, 1]),
      effects: ['open a#1', 'set wipe @30s', 'record connecting a'],
      recorded: { state: 'connecting', reconnects: 0 },
    },
    {
      name: 'first-message-stores',
      given: [registered(at(0), [A, 1])],
      when: message(A, 1, eight, at(1)),
      effects: ['clear wipe', 'store a (snapshot)', 'record streaming a'],
      recorded: { state: 'streaming', lastMessageAt: new Date(at(1)).toISOString() },
    },
    {
      name: 'same-message-stores-nothing',
      given: live,
      when: message(A, 1, eight, at(2), at(1)),
      effects: [],
    },
    {
      name: 'new-message-stores',
      given: live,
      when: message(A, 1, four, at(2), at(1)),
      effects: ['store a (snapshot)'],
    },
    {
      name: 'health-only-change-stores-for-health',
      given: [registered(at(0), [A, 1]), message(A, 1, withHealth('healthy'), at(1))],
      when: message(A, 1, withHealth('unhealthy'), at(2), at(1)),
      effects: ['store a (health)'],
    },
    {
      name: 'eof-keeps-inventory',
      given: live,
      when: changed(at(5), view(A, 1, { state: 'ended', since: at(5), latest: eight })),
      effects: ['record ended a'],
      recorded: { state: 'ended' },
    },
    {
      name: 'unimplemented-withdraws',
      given: live,
      when: changed(at(5), view(A, 1, { state: 'unimplemented', since: at(5), error: 'x' })),
      effects: ['withdraw', 'record unimplemented a'],
      recorded: { state: 'unimplemented', error: 'x' },
    },
    {
      name: 'failure-taints',
      given: live,
      when: failed(A, 1, at(5)),
      effects: ['sync unreachable', 'set wipe @35s', 'record backoff a'],
      recorded: { state: 'backoff', unreachableSince: new Date(at(5)).toISOString() },
    },
    {
      name: 'failure-taints-then-wipes',
      given: lost,
      when: { kind: 'timer-fired', timer: 'wipe', now: at(35) },
      effects: ['withdraw', 'record wiped a'],
      recorded: { state: 'wiped', since: new Date(at(35)).toISOString() },
    },
    {
      name: 'connecting-again-keeps-the-loss',
      given: lost,
      when: changed(at(10), view(A, 1, { state: 'connecting', since: at(10), reconnects: 1 })),
      effects: ['record connecting a'],
      recorded: { unreachableSince: new Date(at(5)).toISOString() },
    },
    {
      name: 'reconnect-in-time-cancels-wipe',
      given: lost,
      when: message(A, 1, eightAgain, at(20)),
      effects: ['clear wipe', 'sync reachable', 'store a (snapshot)', 'record streaming a'],
      recorded: { state: 'streaming', unreachableSince: undefined },
    },
    {
      name: 'back-after-wipe-publishes-again',
      given: [...lost, { kind: 'timer-fired', timer: 'wipe', now: at(35) }],
      when: message(A, 1, eightAgain, at(60)),
      effects: ['sync reachable', 'store a (snapshot)', 'record streaming a'],
    },
    {
      name: 'never-connected-wipes-what-it-never-stored',
      given: [registered(at(0), [A, 1])],
      when: { kind: 'timer-fired', timer: 'wipe', now: at(30) },
      effects: ['withdraw', 'record wiped a'],
    },
    {
      name: 'stale-wipe-timer-ignored',
      given: live,
      when: { kind: 'timer-fired', timer: 'wipe', now: at(30) },
      effects: [],
    },
    {
      name: 'rejection-stores-rejection',
      given: live,
      when: {
        kind: 'message-rejected',
        stream: view(A, 1, { state: 'streaming', lastRejection: 'too large', latest: eight }),
        problem: 'too large',
        now: at(3),
      },
      effects: ['reject a: too large'],
    },
    {
      name: 'rejection-of-a-standby-ignored',
      given: [...live, registered(at(2), [A, 1], [B, 2])],
      when: {
        kind: 'message-rejected',
        stream: view(B, 2, { lastRejection: 'undecodable' }),
        problem: 'undecodable',
        now: at(3),
      },
      effects: [],
    },
    {
      name: 'rejected-call-is-not-an-outage',
      given: live,
      when: changed(
        at(3),
        view(A, 1, { state: 'backoff', since: at(3), lastRejection: 'too large', latest: eight }),
      ),
      effects: ['record backoff a'],
      recorded: { state: 'backoff', unreachableSince: undefined },
    },
    {
      name: 'message-arms-health-timer',
      given: [registered(at(0), [A, 1])],
      when: message(A, 1, withHealth('healthy', 30), at(1)),
      effects: ['clear wipe', 'set health @31s', 'store a (snapshot)', 'record streaming a'],
    },
    {
      name: 'health-timeout-marks-unknown',
      given: [registered(at(0), [A, 1]), message(A, 1, withHealth('healthy', 30), at(1))],
      when: { kind: 'timer-fired', timer: 'health', now: at(31) },
      effects: ['store a (health)'],
    },
    {
      name: 'newer-endpoint-takes-over',
      given: [...live, registered(at(2), [A, 1], [B, 2])],
      when: message(B, 2, four, at(3)),
      effects: ['store b (snapshot)', 'record streaming b'],
    },
    {
      name: 'older-streaming-endpoint-takes-over-at-once',
      given: [...live, registered(at(2), [A, 1], [B, 2]), message(B, 2, four, at(3))],
      when: failed(B, 2, at(4)),
      effects: ['store a (snapshot)', 'record streaming a'],
      recorded: { state: 'streaming', endpoint: A, unreachableSince: undefined },
    },
    {
      name: 're-registration-replaces-stream',
      given: live,
      when: registered(at(2), [A, 2]),
      effects: ['close a (re-registered)', 'open a#2', 'set wipe @32s', 'record connecting a'],
    },
    {
      name: 'deregistration-closes-stream',
      given: [registered(at(0), [A, 1], [B, 2])],
      when: registered(at(1), [B, 2]),
      effects: ['close a (deregistered)'],
    },
    {
      name: 'late-report-of-a-replaced-stream-ignored',
      given: [...live, registered(at(2), [A, 2])],
      when: message(A, 1, four, at(3)),
      effects: [],
    },
  ])('$name', ({ given, when, effects, recorded }) => {
    const step = stepKeyWatch(run(given), when);
    expect(step.effects.map(describeEffect).filter((e) => e !== undefined)).toEqual(effects);
    const summary: Partial<StreamState> = step.state.summary ?? {};
    for (const [field, value] of Object.entries(recorded ?? {})) {
      expect([field, summary[field as keyof StreamState]]).toEqual([field, value]);
    }
  });

  it('stores health unknown once a device times out, and the next message as the driver sends it', () => {
    const healthy = withHealth('healthy', 30);
    const timedOut = stepKeyWatch(run([registered(at(0), [A, 1]), message(A, 1, healthy, at(1))]), {
      kind: 'timer-fired',
      timer: 'health',
      now: at(31),
    });
    const stored = timedOut.effects.find((e) => e.kind === 'write-snapshot');
    expect(stored?.kind === 'write-snapshot' && stored.write).toMatchObject({
      kind: 'store',
      receivedAt: at(31),
      inventory: {
        pools: [
          {
            devices: [
              {
                health: {
                  status: 'unknown',
                  message: 'no health update from the driver for 30s (its timeout)',
                },
              },
              {},
            ],
          },
        ],
      },
    });
    const again = stepKeyWatch(timedOut.state, message(A, 1, withHealth('healthy', 30), at(40)));
    const restored = again.effects.find((e) => e.kind === 'write-snapshot');
    expect(restored?.kind === 'write-snapshot' && restored.write).toMatchObject({
      kind: 'store',
      reason: 'health',
      receivedAt: at(40),
    });
  });

  it('leaves the state it is given as it was', () => {
    const before = run(lost);
    const copy = structuredClone({ ...before, streams: [...before.streams] });
    const first = stepKeyWatch(before, { kind: 'timer-fired', timer: 'wipe', now: at(35) });
    const second = stepKeyWatch(before, { kind: 'timer-fired', timer: 'wipe', now: at(35) });
    expect({ ...before, streams: [...before.streams] }).toEqual(copy);
    expect(second).toEqual(first);
  });
});
