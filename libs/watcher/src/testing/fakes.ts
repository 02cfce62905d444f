import type {
  DriverInventory,
  Registration,
  SliceKey,
  StreamState,
  SyncReason,
  SyncStatus,
} from '@slicekeeper/contracts';
import { keyId } from '@slicekeeper/contracts';
import { TerminalError, TransientError } from '@slicekeeper/errors';
import { createLogger } from '@slicekeeper/observability';
import { canonicalJson } from '@slicekeeper/state';
import type {
  InventoryStreamHandlers,
  NotifyResult,
  PublisherConnector,
  WatchRequest,
} from '../publisher-connector';
import type { SnapshotWriter, StoreOptions, StoreResult, WithdrawResult } from '@slicekeeper/state';
import type { SyncEnqueuer } from '../sync-enqueuer';
import { KEY } from '@slicekeeper/state/testing';

export const silentLogger = createLogger({ service: 'test', level: 'silent' });

export { KEY, gpus } from '@slicekeeper/state/testing';

/** A registration of `KEY` (or `key`) at `endpoint`. */
export function registration(
  endpoint: string,
  sequence: number,
  key: SliceKey = KEY,
): Registration {
  return {
    ...key,
    endpoint,
    version: 'v1.ResourcePublisher',
    registeredAt: new Date(Date.parse('2026-11-21T12:00:00Z') + sequence).toISOString(),
    sequence,
  };
}

/** One connection attempt of a {@link ScriptedConnector}, driven by the test. */
export class ScriptedCall {
  cancelled = false;
  /** The statuses the plugin was told on this connection (`NotifyPublishStatus`). */
  readonly told: SyncStatus[] = [];
  /** What the plugin answers to `NotifyPublishStatus`. */
  answer: NotifyResult = 'delivered';
  constructor(
    readonly request: WatchRequest,
    private readonly handlers: InventoryStreamHandlers,
  ) {}
  /** Sends a message, with the driver's `traceparent` when given. */
  send(inventory: DriverInventory, traceparent?: string): void {
    this.handlers.message(inventory, traceparent);
  }
  /** Reports a message the connector could not use; `callEnded` as for a too large one. */
  reject(problem: string, callEnded = false, traceparent?: string): void {
    this.handlers.rejected(
      traceparent === undefined ? { problem, callEnded } : { problem, callEnded, traceparent },
    );
  }
  end(): void {
    this.handlers.end();
  }
  fail(code: 'unimplemented' | 'unavailable' = 'unavailable'): void {
    this.handlers.error(
      code === 'unimplemented'
        ? new TerminalError('WatchResources: not served', { code })
        : new TransientError('WatchResources: connection refused', { code }),
    );
  }
}

/** A connector whose streams the test drives by hand. */
export class ScriptedConnector {
  readonly calls: ScriptedCall[] = [];
  readonly connect: PublisherConnector = (request, handlers) => {
    const call = new ScriptedCall(request, handlers);
    this.calls.push(call);
    return {
      cancel: () => {
        call.cancelled = true;
      },
      notify: (_node, status) => {
        if (call.answer === 'delivered') call.told.push(status);
        return Promise.resolve(call.answer);
      },
    };
  };

  /** Attempts made to `endpoint`. */
  to(endpoint: string): ScriptedCall[] {
    return this.calls.filter((c) => c.request.endpoint === endpoint);
  }

  /** The latest attempt to `endpoint`. */
  last(endpoint: string): ScriptedCall {
    const call = this.to(endpoint).at(-1);
    if (call === undefined) throw new Error(`no connection to ${endpoint}`);
    return call;
  }
}

/**
 * The snapshot writer's semantics in memory: equal inventory → unchanged; else the next
 * generation. Each call takes a few turns of the event loop, like a Redis round trip.
 */
export class MemoryWriter
  implements Pick<SnapshotWriter, 'store' | 'reject' | 'withdraw' | 'writeState'>
{
  readonly snapshots = new Map<
    string,
    { generation: number; endpoint: string; json: string; traceparents: readonly string[] }
  >();
  readonly states = new Map<string, StreamState>();
  stores = 0;
  private generation = 0;

  /**
   * Keeps the traceparents passed, as they are (carrying them forward is the real writer's), and
   * the state with a stored snapshot.
   */
  async store(
    key: SliceKey,
    endpoint: string,
    inventory: DriverInventory,
    _receivedAt?: Date,
    options: StoreOptions = {},
  ): Promise<StoreResult> {
    return this.storeJson(key, endpoint, canonicalJson(inventory), options);
  }

  /** Stores a rejection as the snapshot; `rejection(key)` reads it back. */
  async reject(
    key: SliceKey,
    endpoint: string,
    problem: string,
    _receivedAt?: Date,
    options: StoreOptions = {},
  ): Promise<StoreResult> {
    return this.storeJson(key, endpoint, JSON.stringify({ rejected: problem }), options);
  }

  private async storeJson(
    key: SliceKey,
    endpoint: string,
    json: string,
    { traceparents = [], state }: StoreOptions,
  ): Promise<StoreResult> {
    await roundTrip();
    this.stores++;
    if (this.snapshots.get(keyId(key))?.json === json) return { kind: 'unchanged' };
    this.generation++;
    this.snapshots.set(keyId(key), { generation: this.generation, endpoint, json, traceparents });
    if (state !== undefined) this.states.set(keyId(key), state);
    return { kind: 'stored', generation: this.generation, bytes: json.length };
  }

  rejection(key: SliceKey = KEY): string | undefined {
    const json = this.snapshots.get(keyId(key))?.json;
    return json === undefined ? undefined : (JSON.parse(json) as { rejected?: string }).rejected;
  }

  async withdraw(key: SliceKey, state?: StreamState): Promise<WithdrawResult> {
    await roundTrip();
    if (state !== undefined) this.states.set(keyId(key), state);
    return this.snapshots.delete(keyId(key)) ? { kind: 'withdrawn' } : { kind: 'absent' };
  }

  async writeState(key: SliceKey, state: StreamState): Promise<void> {
    await roundTrip();
    this.states.set(keyId(key), state);
  }

  inventory(key: SliceKey = KEY): DriverInventory | undefined {
    const json = this.snapshots.get(keyId(key))?.json;
    return json === undefined ? undefined : (JSON.parse(json) as DriverInventory);
  }
}

/** Records the syncs asked for. */
export class RecordingQueue implements SyncEnqueuer {
  readonly jobs: { key: string; reason: SyncReason }[] = [];
  enqueue(key: SliceKey, reason: SyncReason): Promise<void> {
    this.jobs.push({ key: keyId(key), reason });
    return Promise.resolve();
  }
  reasons(): SyncReason[] {
    return this.jobs.map((j) => j.reason);
  }
}

function roundTrip(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
