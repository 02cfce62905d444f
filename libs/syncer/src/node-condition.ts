import { PUBLISHED_CONDITION_TYPE } from '@slicekeeper/kube';
import type { NodeConditionWrite, ObservedCondition } from '@slicekeeper/kube';
import type { KeyPublishState } from '@slicekeeper/state';

/**
 * The reasons of the `DRAResourcesPublished` condition. `Published` is the one reason of
 * `True`; the others are `False`, worst first: a node with keys of several reasons shows the
 * worst. Renaming one is a breaking change for whoever matches on it.
 */
export const nodeConditionReasons = [
  /** Every registered driver's current inventory is published. */
  'Published',
  /** A driver's stream failed (its devices are tainted) or its slices were withdrawn for it. */
  'DriverUnreachable',
  /** A driver's inventory breaks a Kubernetes rule, or a record of it cannot be read. */
  'Invalid',
  /** The API server refused a driver's slices for good (403, 422). */
  'Failed',
  /** A driver's last sync did not find the Node (it was just created, or the cache lagged). */
  'NodeMissing',
  /** A driver's current inventory is on its way: not synced yet, or being retried. */
  'Publishing',
  /** No driver is registered on the node any more. */
  'NoPlugins',
] as const;
export type NodeConditionReason = (typeof nodeConditionReasons)[number];

/** The reasons a key can have, worst first (`Published` last: it is no problem). */
const KEY_REASONS_WORST_FIRST = [
  'DriverUnreachable',
  'Invalid',
  'Failed',
  'NodeMissing',
  'Publishing',
  'Published',
] as const satisfies readonly NodeConditionReason[];
type KeyReason = (typeof KEY_REASONS_WORST_FIRST)[number];

/** The longest condition message written, characters; longer ones end in `…`. */
export const MAX_CONDITION_MESSAGE_LENGTH = 1024;

/** What the condition should say. */
export interface NodeCondition {
  status: 'True' | 'False';
  reason: NodeConditionReason;
  /** Human-readable, naming the drivers, at most {@link MAX_CONDITION_MESSAGE_LENGTH} long. */
  message: string;
}

/** Where one key stands, and the words for it in the message. */
interface KeyVerdict {
  driver: string;
  reason: KeyReason;
  /** What is wrong, after `<driver>: `; empty for a published key. */
  detail: string;
}

/**
 * Where one registered key stands, from its records: its stream first (a driver that cannot be
 * reached is the worst news, whatever was last published), then its last sync's outcome, then
 * whether that outcome is for the key's current snapshot generation.
 */
function judgeKey(state: KeyPublishState): KeyVerdict {
  const { driver } = state.key;
  const verdict = (reason: KeyReason, detail: string): KeyVerdict => ({ driver, reason, detail });
  if (state.corrupt !== undefined) return verdict('Invalid', state.corrupt);
  const { status, stream, snapshotGeneration } = state;
  if (stream?.state === 'wiped') {
    return verdict('DriverUnreachable', 'driver unreachable, its slices were withdrawn');
  }
  if (stream?.unreachableSince !== undefined) {
    return verdict('DriverUnreachable', `driver unreachable since ${stream.unreachableSince}`);
  }
  if (stream?.state === 'backoff') {
    const why = stream.error === undefined ? '' : `: ${stream.error}`;
    return verdict('DriverUnreachable', `driver unreachable, reconnecting${why}`);
  }
  if (status === undefined) {
    return verdict(
      'Publishing',
      snapshotGeneration === undefined
        ? 'waiting for its first inventory'
        : `publishing inventory ${snapshotGeneration}`,
    );
  }
  switch (status.outcome) {
    case 'invalid': {
      const [first] = status.problems ?? [];
      const problem =
        first === undefined
          ? (status.error ?? 'invalid inventory')
          : `${first.field}: ${first.message}`;
      return verdict('Invalid', `invalid: ${problem}`);
    }
    case 'corrupt':
      return verdict('Invalid', `corrupt: ${status.error ?? 'a record cannot be read'}`);
    case 'failed':
      return verdict('Failed', `failed: ${status.error ?? 'refused by the API server'}`);
    case 'node-missing':
      return verdict('NodeMissing', 'the Node was missing at its last sync');
    case 'retrying':
      return verdict('Publishing', `retrying: ${status.error ?? 'a transient error'}`);
    case 'removing':
      // Deregistered (a driver restarting, most often): its slices stay through the removal
      // grace, and a restart within it must not show on the node. Once withdrawn, the key's
      // status says so; registered again, its next sync records what it publishes.
      return verdict('Published', '');
    case 'synced':
    case 'withdrawn':
      break;
  }
  // A driver that answered Unimplemented publishes nothing: its withdrawal is all there is.
  if (status.outcome === 'withdrawn' && stream?.state === 'unimplemented') {
    return verdict('Published', '');
  }
  if (snapshotGeneration === undefined)
    return verdict('Publishing', 'waiting for its first inventory');
  if (status.snapshotGeneration !== snapshotGeneration) {
    return verdict('Publishing', `publishing inventory ${snapshotGeneration}`);
  }
  return verdict('Published', '');
}

function severity(reason: KeyReason): number {
  return KEY_REASONS_WORST_FIRST.indexOf(reason);
}

function capped(message: string): string {
  return message.length <= MAX_CONDITION_MESSAGE_LENGTH
    ? message
    : `${message.slice(0, MAX_CONDITION_MESSAGE_LENGTH - 1)}…`;
}

/**
 * The `DRAResourcesPublished` condition a node should have, from its registered keys' records
 * (pure: no I/O, no clock). `True`/`Published` when there is at least one key and every key's
 * current snapshot is published (`synced`, or `withdrawn` for a driver that publishes nothing,
 * at the key's snapshot generation counter); otherwise `False` with the worst key's reason and,
 * in the message, every key that is not published, worst first, e.g.
 * `gpu.example.com: invalid: spec.devices[0].name: …`.
 */
export function evaluateNodeCondition(keys: readonly KeyPublishState[]): NodeCondition {
  if (keys.length === 0) {
    return { status: 'False', reason: 'NoPlugins', message: 'no DRA driver is registered' };
  }
  const verdicts = keys
    .map(judgeKey)
    .sort((a, b) => severity(a.reason) - severity(b.reason) || a.driver.localeCompare(b.driver));
  const pending = verdicts.filter((v) => v.reason !== 'Published');
  const [worst] = pending;
  if (worst === undefined) {
    const drivers = verdicts.map((v) => v.driver).join(', ');
    return { status: 'True', reason: 'Published', message: capped(`published: ${drivers}`) };
  }
  return {
    status: 'False',
    reason: worst.reason,
    message: capped(pending.map((v) => `${v.driver}: ${v.detail}`).join('; ')),
  };
}

/** RFC 3339 with seconds, as Kubernetes writes condition times. */
function conditionTime(now: Date): string {
  return new Date(Math.floor(now.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * The write that brings the Node's condition (`observed`, undefined when it has none) to
 * `desired`, or undefined when none is due: only a transition is written (status or reason
 * differ), so that a node whose drivers keep publishing costs no API call. `lastTransitionTime`
 * comes with a status change only; `lastHeartbeatTime` is `now` on every write. `NoPlugins` is
 * never the first condition of a node: one that never had a plugin is left alone.
 */
export function planNodeConditionWrite(
  desired: NodeCondition,
  observed: ObservedCondition | undefined,
  now: Date,
): NodeConditionWrite | undefined {
  if (observed === undefined && desired.reason === 'NoPlugins') return undefined;
  const current = observed?.kind === 'set' ? observed : undefined;
  if (current?.status === desired.status && current.reason === desired.reason) return undefined;
  const time = conditionTime(now);
  return {
    type: PUBLISHED_CONDITION_TYPE,
    status: desired.status,
    reason: desired.reason,
    message: desired.message,
    lastHeartbeatTime: time,
    ...(current?.status === desired.status ? {} : { lastTransitionTime: time }),
  };
}
