import type { SliceKey, SyncReason } from '@slicekeeper/contracts';

/** Asks for a key's sync; `SyncQueue` from @slicekeeper/queue is the real one. */
export interface SyncEnqueuer {
  enqueue(key: SliceKey, reason: SyncReason): Promise<void>;
}
