import { shortenProblem } from '@slicekeeper/errors';
import { z } from 'zod';
import { TRACE_ID_PATTERN } from './trace-context';

/** Where a plugin's inventory stream stands, as the plugin-watcher records it. */
export const streamStates = [
  /** Dialling the endpoint or waiting for the first message. */
  'connecting',
  /** Open; messages are being received. */
  'streaming',
  /** Failed; a reconnect is scheduled. */
  'backoff',
  /** The plugin ended the stream (EOF): its last inventory is kept until it re-registers. */
  'ended',
  /** The plugin answered Unimplemented: it publishes nothing; its slices are withdrawn. */
  'unimplemented',
  /** No live stream for longer than the wipe delay: the key's slices were withdrawn. */
  'wiped',
] as const;
export type StreamStateName = (typeof streamStates)[number];

export const streamStateSchema = z
  .object({
    state: z.enum(streamStates),
    endpoint: z.string(),
    /** Since when the stream is in this state, RFC 3339. */
    since: z.iso.datetime({ offset: true }),
    lastMessageAt: z.iso.datetime({ offset: true }).optional(),
    /** Reconnect attempts since the last successful message. */
    reconnects: z.number().int().nonnegative(),
    error: z.string().optional(),
    /**
     * Since when (RFC 3339) no stream of the key is live after one failed (an error, not EOF):
     * while set and the key is not wiped, its devices carry the `driver-unreachable` taint.
     */
    unreachableSince: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();
export type StreamState = z.infer<typeof streamStateSchema>;

/** The outcome of a key's last sync, as the slice-syncer records it. */
export const syncOutcomes = [
  /** The key's slices match its latest snapshot. */
  'synced',
  /** The key has no registration or no inventory: its slices were deleted. */
  'withdrawn',
  /**
   * The plugin was removed: its slices stay until its removal grace ends (a restarting driver
   * registers again in time), then they are withdrawn.
   */
  'removing',
  /** The driver's inventory breaks a Kubernetes rule: nothing written until it sends a new one. */
  'invalid',
  /**
   * A Redis record of the key cannot be read (not JSON, or not of its schema): nothing written,
   * not retried until the record is written anew. Not `invalid`, which is the driver's fault.
   */
  'corrupt',
  /** The node does not exist (any more): parked, retried slowly. */
  'node-missing',
  /** The API server refused for good (403, 422): not retried until something changes. */
  'failed',
  /** A transient error; being retried with backoff. */
  'retrying',
] as const;
export type SyncOutcome = (typeof syncOutcomes)[number];

export const poolSummarySchema = z
  .object({
    name: z.string(),
    generation: z.number().int().nonnegative(),
    sliceCount: z.number().int().nonnegative(),
    devices: z.number().int().nonnegative(),
  })
  .strict();
export type PoolSummary = z.infer<typeof poolSummarySchema>;

/**
 * Most problems a status lists. With each field and message cut to `MAX_PROBLEM_LENGTH` (512)
 * characters, 40 problems keep a status record (error text and slice names included) under
 * 64 KiB however many devices a driver gets wrong: the record is read on every sync, served by
 * the API and polled by the status page.
 */
export const MAX_STATUS_PROBLEMS = 40;

/** The problems a status records: the first {@link MAX_STATUS_PROBLEMS}, shortened, and a count. */
export function boundProblems(problems: readonly FieldProblem[]): {
  problems: FieldProblem[];
  problemsOmitted?: number;
} {
  const listed = problems.slice(0, MAX_STATUS_PROBLEMS).map(({ field, message }) => ({
    field: shortenProblem(field),
    message: shortenProblem(message),
  }));
  const omitted = problems.length - listed.length;
  return omitted > 0 ? { problems: listed, problemsOmitted: omitted } : { problems: listed };
}

/** One problem of an invalid inventory: the field path and the rule it breaks. */
export const fieldProblemSchema = z.object({ field: z.string(), message: z.string() }).strict();
export type FieldProblem = z.infer<typeof fieldProblemSchema>;

/**
 * The taints slicekeeper added to a key's devices in its last sync (beside the driver's own):
 * `unreachable` when the key's stream was lost (`tainted`, or `dropped` when the API server
 * dropped taints: the devices stay schedulable until the wipe), and how many devices carry an
 * `unhealthy` or `health-unknown` taint.
 */
export const publishedTaintsSchema = z
  .object({
    unreachable: z.enum(['tainted', 'dropped']).optional(),
    unhealthy: z.number().int().nonnegative(),
    healthUnknown: z.number().int().nonnegative(),
    /** Devices that could not be tainted, and why (too many taints, an oversized slice). */
    notApplied: z.string().optional(),
  })
  .strict();
export type PublishedTaints = z.infer<typeof publishedTaintsSchema>;

export const syncStatusSchema = z
  .object({
    outcome: z.enum(syncOutcomes),
    /** The snapshot generation this outcome is for; 0 when there was no snapshot. */
    snapshotGeneration: z.number().int().nonnegative(),
    /** Names of the key's published slices. */
    slices: z.array(z.string()),
    pools: z.array(poolSummarySchema),
    /** Why the sync did not succeed. */
    error: z.string().optional(),
    /** Attempts made for this snapshot generation. */
    attempt: z.number().int().positive(),
    startedAt: z.iso.datetime({ offset: true }),
    finishedAt: z.iso.datetime({ offset: true }),
    /** API writes the sync made (creates + updates + deletes). */
    writes: z.number().int().nonnegative(),
    /**
     * Fields the API server dropped from what was written (a feature gate is off, or the
     * release lacks a pass-through member), each with the gate that likely guards it when one
     * is known, e.g. `spec.devices[*].taints (DRADeviceTaints)`. The key is still `synced`: what
     * the server stored is what the scheduler sees. Resyncs of the same snapshot hand these
     * lines to the planner (`adoptDropped`), which then takes the stored slices as they are
     * instead of writing the fields again: their wording is `summarizeDroppedFields`'s.
     */
    droppedFields: z.array(z.string()).optional(),
    /**
     * Why an `invalid` inventory was refused: each problem with its field path, the first
     * {@link MAX_STATUS_PROBLEMS} of them ({@link boundProblems}).
     */
    problems: z.array(fieldProblemSchema).max(MAX_STATUS_PROBLEMS).optional(),
    /** How many problems there were beyond those listed in `problems`. */
    problemsOmitted: z.number().int().positive().optional(),
    /**
     * The API version the slices were written in and the server's release, e.g.
     * `resource.k8s.io/v1beta1 (Kubernetes v1.32.9)`.
     */
    api: z.string().optional(),
    /** The taints slicekeeper put on the key's devices, when any. */
    taints: publishedTaintsSchema.optional(),
    /** With tracing on: the trace id of the sync that recorded this status. */
    traceId: z.string().regex(TRACE_ID_PATTERN, 'must be 32 lowercase hex digits').optional(),
  })
  .strict();
export type SyncStatus = z.infer<typeof syncStatusSchema>;
