import type { InventorySnapshot, StreamState, SyncReason } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import { CorruptRecordError } from '@slicekeeper/state';
import type { KeyTurn } from './reconciler';

/** What the key's records in Redis ask for. */
export type Desired =
  | {
      kind: 'publish';
      registered: boolean;
      snapshot: InventorySnapshot | undefined;
      stream: StreamState | undefined;
    }
  /** Registered, but the driver has sent nothing yet (or Redis lost it): what is published stays. */
  | { kind: 'idle' }
  /** Removed, within its grace: the slices stay until `remainingMs` have passed. */
  | { kind: 'removing'; remainingMs: number }
  /** The watcher could not take the driver's last message. */
  | { kind: 'rejected'; snapshot: InventorySnapshot; problem: string }
  | { kind: 'corrupt'; problem: string }
  | { kind: 'unreadable'; problem: string };

/** Reads what the key's records ask for; a record that cannot be decoded is `corrupt`. */
export function readDesired(turn: KeyTurn, now: number, reason: SyncReason): Desired {
  try {
    if (!turn.registered()) {
      const remainingMs = (turn.removal()?.withdrawAt ?? 0) - now;
      if (remainingMs > 0) return { kind: 'removing', remainingMs };
      return { kind: 'publish', registered: false, snapshot: undefined, stream: undefined };
    }
    const snapshot = turn.snapshot();
    // A registration's sync publishes the snapshot a re-registered driver kept. Without one,
    // the watcher's first store asks for the sync that publishes it.
    if (snapshot === undefined && reason === 'registered') return { kind: 'idle' };
    if (snapshot?.rejected !== undefined) {
      return { kind: 'rejected', snapshot, problem: snapshot.rejected };
    }
    const stream = snapshot === undefined ? undefined : turn.streamState();
    return { kind: 'publish', registered: true, snapshot, stream };
  } catch (error) {
    if (error instanceof CorruptRecordError) return { kind: 'corrupt', problem: error.message };
    // Redis answered a read with an error (a record of the wrong type): worth another try.
    return { kind: 'unreadable', problem: errorMessage(error) };
  }
}

/** The key's stream state; undefined when unreadable (the sync recorded `corrupt` then). */
export function readableStreamState(turn: KeyTurn): StreamState | undefined {
  try {
    return turn.streamState();
  } catch (error) {
    if (error instanceof CorruptRecordError) return undefined;
    throw error;
  }
}

/** The driver-unreachable part of the planner's input, from the key's stream state. */
export function unreachable(stream: StreamState | undefined): { unreachableSince?: string } {
  const since = stream?.unreachableSince;
  return since === undefined || stream?.state === 'wiped' ? {} : { unreachableSince: since };
}
