import type {
  DriverInventory,
  SliceKey,
  StreamState,
  StreamStateName,
  SyncReason,
} from '@slicekeeper/contracts';
import type { StoreOptions, StoreResult, WithdrawResult } from '@slicekeeper/state';
import { ManualClock, flushPromises } from '@slicekeeper/time/testing';
import { CoalescingWriter } from './coalescing-writer';
import type { CoalescingWriterOptions, SnapshotWrite } from './coalescing-writer';
import { KEY, gpus, silentLogger } from './testing/fakes';

const T0 = Date.parse('2026-11-21T12:00:00Z');

/** A snapshot writer and queue that log every call in order, with scripted answers. */
class ScriptedRedis {
  readonly calls: string[] = [];
  /** The next store answers, in order; `stored` with the next generation once used up. */
  readonly storeResults: (StoreResult | Error)[] = [];
  withdrawResult: WithdrawResult | Error = { kind: 'withdrawn' };
  /** While set, writes wait for it. */
  gate: Promise<void> | undefined;
  private generation = 0;

  readonly writer: CoalescingWriterOptions['writer'] = {
    store: async (
      _key: SliceKey,
      _endpoint: string,
      inventory: DriverInventory,
      _receivedAt: Date,
      options?: StoreOptions,
    ) => {
      const state = options?.state === undefined ? '' : ` with state ${options.state.state}`;
      this.calls.push(`store ${String(inventory.pools[0]?.devices.length)}${state}`);
      await this.gate;
      const result = this.storeResults.shift() ?? {
        kind: 'stored',
        generation: ++this.generation,
        bytes: 1,
      };
      if (result instanceof Error) throw result;
      return result;
    },
    reject: async (_key: SliceKey, _endpoint: string, problem: string) => {
      this.calls.push(`reject ${problem}`);
      await this.gate;
      return { kind: 'stored', generation: ++this.generation, bytes: 1 };
    },
    withdraw: async (_key: SliceKey, state?: StreamState) => {
      this.calls.push(state === undefined ? 'withdraw' : `withdraw with state ${state.state}`);
      await this.gate;
      if (this.withdrawResult instanceof Error) throw this.withdrawResult;
      return this.withdrawResult;
    },
    writeState: async (_key: SliceKey, state: StreamState) => {
      this.calls.push(`state ${state.state}`);
      await this.gate;
    },
  };

  readonly queue = {
    enqueue: (_key: SliceKey, reason: SyncReason): Promise<void> => {
      this.calls.push(`sync ${reason}`);
      return Promise.resolve();
    },
  };
}

function store(devices: number, reason: 'snapshot' | 'health' = 'snapshot'): SnapshotWrite {
  return { kind: 'store', endpoint: 'a', inventory: gpus(devices), receivedAt: T0, reason };
}

function state(name: StreamStateName): StreamState {
  return { state: name, endpoint: 'a', since: new Date(T0).toISOString(), reconnects: 0 };
}

describe('CoalescingWriter', () => {
  let clock: ManualClock;
  let redis: ScriptedRedis;
  let notOwner: number;
  let writer: CoalescingWriter;

  beforeEach(() => {
    clock = new ManualClock(T0);
    redis = new ScriptedRedis();
    notOwner = 0;
    writer = new CoalescingWriter({
      key: KEY,
      writer: redis.writer,
      queue: redis.queue,
      clock,
      logger: silentLogger,
      onNotOwner: () => notOwner++,
    });
  });

  afterEach(async () => {
    await writer.close();
  });

  it('keeps only the latest snapshot while a write is in flight', async () => {
    let open = (): void => undefined;
    redis.gate = new Promise((resolve) => (open = resolve));
    writer.submit({ snapshot: store(1) });
    writer.submit({ snapshot: store(2) });
    writer.submit({ snapshot: store(3) });
    await flushPromises();
    expect(redis.calls).toEqual(['store 1']);
    open();
    await flushPromises();
    // One sync, after the latest snapshot, for the most urgent reason owed.
    expect(redis.calls).toEqual(['store 1', 'store 3', 'sync first-snapshot']);
  });

  it.each<[string, StoreResult, SnapshotWrite, string[]]>([
    [
      'first-generation-is-a-first-snapshot',
      { kind: 'stored', generation: 1, bytes: 1 },
      store(2),
      ['store 2', 'sync first-snapshot'],
    ],
    [
      'later-generation-is-a-snapshot',
      { kind: 'stored', generation: 7, bytes: 1 },
      store(2),
      ['store 2', 'sync snapshot'],
    ],
    [
      'health-only-store-asks-health',
      { kind: 'stored', generation: 7, bytes: 1 },
      store(2, 'health'),
      ['store 2', 'sync health'],
    ],
    ['unsynced-asks-again', { kind: 'unsynced' }, store(2), ['store 2', 'sync snapshot']],
    ['unchanged-asks-nothing', { kind: 'unchanged' }, store(2), ['store 2']],
    ['unregistered-asks-nothing', { kind: 'unregistered' }, store(2), ['store 2']],
  ])('%s', async (_name, result, write, calls) => {
    redis.storeResults.push(result);
    writer.submit({ snapshot: write });
    await flushPromises();
    expect(redis.calls).toEqual(calls);
  });

  it.each<[string, WithdrawResult, string[], number]>([
    ['withdrawn-asks-stream-lost', { kind: 'withdrawn' }, ['withdraw', 'sync stream-lost'], 0],
    ['absent-asks-nothing', { kind: 'absent' }, ['withdraw'], 0],
    ['not-owner-lets-go', { kind: 'not-owner' }, ['withdraw'], 1],
  ])('%s', async (_name, result, calls, lettingGo) => {
    redis.withdrawResult = result;
    writer.submit({ snapshot: { kind: 'withdraw' } });
    await flushPromises();
    expect(redis.calls).toEqual(calls);
    expect(notOwner).toBe(lettingGo);
  });

  it('writes the state that explains a withdrawal with it, before the sync it owes', async () => {
    // A sync that sees the snapshot gone must see why (wiped: a Warning Event), not the state
    // before it.
    writer.submit({
      snapshot: { kind: 'withdraw' },
      state: { value: state('wiped'), changed: true },
    });
    await flushPromises();
    expect(redis.calls).toEqual(['withdraw with state wiped', 'sync stream-lost']);
  });

  it('retries a failed withdrawal with its state', async () => {
    redis.withdrawResult = new Error('connection lost');
    writer.submit({
      snapshot: { kind: 'withdraw' },
      state: { value: state('wiped'), changed: true },
    });
    await flushPromises();
    redis.withdrawResult = { kind: 'withdrawn' };
    await clock.advance(1000);
    expect(redis.calls).toEqual([
      'withdraw with state wiped',
      'withdraw with state wiped',
      'sync stream-lost',
    ]);
  });

  it('asks for a sync that reads the stream state only once the state is written', async () => {
    writer.submit({ state: { value: state('backoff'), changed: true }, syncs: ['unreachable'] });
    await flushPromises();
    expect(redis.calls).toEqual(['state backoff', 'sync unreachable']);
  });

  it('writes the state with a stored snapshot, in one step, before the sync it asks for', async () => {
    writer.submit({ snapshot: store(2), state: { value: state('streaming'), changed: true } });
    await flushPromises();
    expect(redis.calls).toEqual(['store 2 with state streaming', 'sync first-snapshot']);
  });

  it('writes a state that came while a snapshot was stored after the store', async () => {
    let open = (): void => undefined;
    redis.gate = new Promise((resolve) => (open = resolve));
    writer.submit({ snapshot: store(2), state: { value: state('streaming'), changed: true } });
    await flushPromises();
    // The next message's state: only its lastMessageAt moved on.
    writer.submit({ state: { value: state('streaming'), changed: false } });
    redis.gate = undefined;
    open();
    await flushPromises();
    expect(redis.calls).toEqual([
      'store 2 with state streaming',
      'sync first-snapshot',
      'state streaming',
    ]);
  });

  it('asks for the sync of the highest priority of several owed at once', async () => {
    writer.submit({ syncs: ['snapshot', 'stream-lost', 'first-snapshot'] });
    await flushPromises();
    expect(redis.calls).toEqual(['sync stream-lost']);
  });

  it('writes an unchanged state only with the next stored snapshot', async () => {
    writer.submit({ state: { value: state('streaming'), changed: false } });
    await flushPromises();
    expect(redis.calls).toEqual([]);
    redis.storeResults.push({ kind: 'unchanged' });
    writer.submit({ snapshot: store(2) });
    await flushPromises();
    expect(redis.calls).toEqual(['store 2 with state streaming']);
    writer.submit({ snapshot: store(3) });
    await flushPromises();
    expect(redis.calls).toEqual([
      'store 2 with state streaming',
      'store 3 with state streaming',
      'sync first-snapshot',
    ]);
  });

  it('retries a failed write after the retry delay, with the latest snapshot', async () => {
    redis.storeResults.push(new Error('connection lost'));
    writer.submit({ snapshot: store(1) });
    await flushPromises();
    writer.submit({ snapshot: store(2) });
    await clock.advance(999);
    expect(redis.calls).toEqual(['store 1']);
    await clock.advance(1);
    expect(redis.calls).toEqual(['store 1', 'store 2', 'sync first-snapshot']);
  });

  it('rewrites the last store and the state on republish, but not a withdrawn snapshot', async () => {
    redis.storeResults.push({ kind: 'stored', generation: 1, bytes: 1 });
    writer.submit({ snapshot: store(2), state: { value: state('streaming'), changed: true } });
    await flushPromises();
    redis.calls.length = 0;
    redis.storeResults.push({ kind: 'unchanged' });
    writer.republish();
    await flushPromises();
    // The store was unchanged: the state is written on its own.
    expect(redis.calls).toEqual(['store 2 with state streaming', 'state streaming']);

    writer.submit({ snapshot: { kind: 'withdraw' } });
    await flushPromises();
    redis.calls.length = 0;
    writer.republish();
    await flushPromises();
    expect(redis.calls).toEqual(['state streaming']);
  });

  it('drops what is not written on close, stops retrying, and closes once', async () => {
    redis.storeResults.push(new Error('connection lost'));
    writer.submit({ snapshot: store(1), syncs: ['unreachable'] });
    await flushPromises();
    expect(clock.pending()).toEqual([1000]);
    const closed = writer.close();
    expect(writer.close()).toBe(closed);
    await closed;
    expect(clock.pending()).toEqual([]);
    writer.submit({ snapshot: store(2) });
    await clock.advance(10_000);
    expect(redis.calls).toEqual(['store 1']);
  });
});
