import type { FieldProblem, SyncOutcome, SyncStatus } from '@slicekeeper/contracts';
import { TerminalError, listProblems } from '@slicekeeper/errors';
import type * as wire from './generated/slicekeeper/v1/resources';
import { PublishOutcome } from './generated/slicekeeper/v1/resources';

/**
 * What slicekeeper made of a driver's inventory, as the driver receives it through
 * `NotifyPublishStatus`: the outcome of the last sync of its (node, driver).
 */
export interface PublishFeedback {
  /** The node the outcome is for; empty for a cluster-scoped plugin. */
  nodeName: string;
  /** The snapshot generation (slicekeeper's number of the stored inventory) it concerns; 0: none. */
  snapshotGeneration: number;
  /** The sync outcome, in the words of slicekeeper's status (`synced`, `invalid`, …). */
  outcome: SyncOutcome;
  /** Why an `invalid` inventory was refused: each problem with its field path. */
  problems: FieldProblem[];
  /** Fields the API server dropped, e.g. `spec.devices[*].taints (DRADeviceTaints)`. */
  droppedFields: string[];
  /** Names of the ResourceSlices that hold the driver's devices now. */
  sliceNames: string[];
  /** Why the sync did not succeed. */
  error?: string;
}

/** The wire outcome of each sync outcome, one for one. */
const WIRE_OUTCOMES: Readonly<Record<SyncOutcome, PublishOutcome>> = {
  synced: PublishOutcome.PUBLISH_OUTCOME_PUBLISHED,
  withdrawn: PublishOutcome.PUBLISH_OUTCOME_WITHDRAWN,
  removing: PublishOutcome.PUBLISH_OUTCOME_REMOVING,
  invalid: PublishOutcome.PUBLISH_OUTCOME_INVALID,
  corrupt: PublishOutcome.PUBLISH_OUTCOME_CORRUPT,
  'node-missing': PublishOutcome.PUBLISH_OUTCOME_NODE_MISSING,
  failed: PublishOutcome.PUBLISH_OUTCOME_FAILED,
  retrying: PublishOutcome.PUBLISH_OUTCOME_RETRYING,
};

const SYNC_OUTCOMES: ReadonlyMap<number, SyncOutcome> = new Map(
  Object.entries(WIRE_OUTCOMES).map(([outcome, wire]) => [wire, outcome as SyncOutcome]),
);

/** Largest int64 a JavaScript number holds exactly. */
const MAX_EXACT_INTEGER = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The `NotifyPublishStatus` request that tells the plugin of `node` (empty: a cluster-scoped
 * plugin) the outcome of its key's last sync.
 */
export function publishStatusRequest(
  node: string,
  status: SyncStatus,
): wire.NotifyPublishStatusRequest {
  return {
    nodeName: node,
    snapshotGeneration: BigInt(status.snapshotGeneration),
    outcome: WIRE_OUTCOMES[status.outcome],
    problems: (status.problems ?? []).map(({ field, message }) => ({ field, message })),
    droppedFields: [...(status.droppedFields ?? [])],
    sliceNames: [...status.slices],
    error: status.error ?? '',
  };
}

/**
 * The feedback a `NotifyPublishStatus` request carries, for the driver.
 * @throws {TerminalError} (code `rejected`) naming each field and rule broken: an outcome that is
 * unset or not one this code knows, a snapshot generation that is negative or beyond 2^53−1.
 */
export function publishFeedback(request: wire.NotifyPublishStatusRequest): PublishFeedback {
  const problems: string[] = [];
  const outcome = SYNC_OUTCOMES.get(request.outcome);
  if (outcome === undefined) {
    const known = [...SYNC_OUTCOMES.keys()].map((n) => PublishOutcome[n]).join(', ');
    problems.push(`outcome: must be one of ${known} (is ${request.outcome})`);
  }
  const generation = request.snapshotGeneration;
  if (generation < 0n || generation > MAX_EXACT_INTEGER) {
    problems.push(
      `snapshotGeneration: must be within 0 and ${Number.MAX_SAFE_INTEGER} (is ${generation})`,
    );
  }
  if (outcome === undefined || problems.length > 0) {
    throw new TerminalError(listProblems(problems), { code: 'rejected' });
  }
  const feedback: PublishFeedback = {
    nodeName: request.nodeName,
    snapshotGeneration: Number(generation),
    outcome,
    problems: request.problems.map(({ field, message }) => ({ field, message })),
    droppedFields: [...request.droppedFields],
    sliceNames: [...request.sliceNames],
  };
  if (request.error !== '') feedback.error = request.error;
  return feedback;
}
