import type { InventorySnapshot, StreamState } from '@slicekeeper/contracts';
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
  /**
   * Nothing in Redis says what to publish or to withdraw: what is published stays. `why` is
   * for the log.
   */
  | { kind: 'idle'; why: string }
  /** Removed, within its grace: the slices stay until `remainingMs` have passed. */
  | { kind: 'removing'; remainingMs: number }
  /** The watcher could not take the driver's last message. */
  | { kind: 'rejected'; snapshot: InventorySnapshot; problem: string }
  | { kind: 'corrupt'; problem: string }
  | { kind: 'unreadable'; problem: string };

/**
 * Reads what the key's records ask for; a record that cannot be decoded is `corrupt`. Slices are
 * withdrawn only on a record that asks for it: a removal whose grace is over, or a snapshot the
 * watcher withdrew. Redis that lost its data (it came back empty) holds neither, and the
 * watchers are writing back what their live streams know: a sync that runs meanwhile (a job
 * that was running, a slice's watch event) leaves the slices alone, and the janitor withdraws
 * those of a key nobody brings back once the orphan grace is over.
 */
export function readDesired(turn: KeyTurn, now: number): Desired {
  try {
    if (!turn.registered()) {
      // The registration store records a removal in the step that removes the last
      // registration, and the janitor one for an orphan it gives up on.
      const removal = turn.removal();
      if (removal === undefined) {
        return {
          kind: 'idle',
          why: 'no registration and no removal (Redis lost its data, or the removal expired): left to the janitor',
        };
      }
      const remainingMs = removal.withdrawAt - now;
      if (remainingMs > 0) return { kind: 'removing', remainingMs };
      return { kind: 'publish', registered: false, snapshot: undefined, stream: undefined };
    }
    const snapshot = turn.snapshot();
    // The watcher withdraws a snapshot by deleting it; the generation counter stays. Without the
    // counter the driver has sent nothing yet, or Redis lost it: the watcher's store asks for
    // the sync that publishes it.
    if (snapshot === undefined && !turn.generationIssued()) {
      return { kind: 'idle', why: 'registered, no inventory in Redis yet' };
    }
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
