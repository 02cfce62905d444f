import type { FieldProblem, SyncStatus } from './status';

/**
 * The part of a sync status a driver is told about (`NotifyPublishStatus`): what it would act
 * on. The snapshot generation, timings, attempt and write counts are left out, so an inventory
 * change published into the same slices costs the driver no call (and the node condition no
 * evaluation) per change.
 */
export interface Feedback {
  outcome: SyncStatus['outcome'];
  slices: readonly string[];
  droppedFields: readonly string[];
  problems: readonly FieldProblem[];
  /** Empty when the status carries no error. */
  error: string;
}

/** The comparable part of `status` a driver is told about. */
export function feedbackOf(status: SyncStatus): Feedback {
  return {
    outcome: status.outcome,
    slices: status.slices,
    droppedFields: status.droppedFields ?? [],
    problems: status.problems ?? [],
    error: status.error ?? '',
  };
}

/**
 * Whether a driver last told of `before` (nothing yet when undefined) would learn something from
 * `after`: a new outcome, other slices, other dropped fields or problems, or a new error. The one
 * rule for both the syncer's announcements and the watcher's per-connection feedback.
 */
export function tellsNews(before: SyncStatus | undefined, after: SyncStatus): boolean {
  if (before === undefined) return true;
  const a = feedbackOf(before);
  const b = feedbackOf(after);
  return (
    a.outcome !== b.outcome ||
    a.error !== b.error ||
    !sameStrings(a.slices, b.slices) ||
    !sameStrings(a.droppedFields, b.droppedFields) ||
    !sameProblems(a.problems, b.problems)
  );
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

function sameProblems(a: readonly FieldProblem[], b: readonly FieldProblem[]): boolean {
  return (
    a.length === b.length &&
    a.every((p, i) => {
      const q = b[i];
      return q !== undefined && p.field === q.field && p.message === q.message;
    })
  );
}

/**
 * Whether a key's stored snapshot still owes a sync: its generation (`stored`) is newer than the
 * one the key's last finished sync was for (`synced`), or no sync has finished yet (undefined).
 * A watcher that stores an inventory equal to the stored one asks for the sync again when this
 * holds (it, or a watcher before it, may have crashed between its store and its enqueue).
 *
 * The watcher's store script evaluates this rule inside Redis: its one Lua mirror is
 * `OWES_SYNC_LUA` in libs/state (`owes-sync-lua.ts`), checked against this function on a table
 * of cases.
 */
export function owesSync(stored: number, synced: number | undefined): boolean {
  return synced === undefined || synced < stored;
}
