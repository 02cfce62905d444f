import type { SliceKey, StreamState, SyncOutcome, SyncStatus } from '@slicekeeper/contracts';
import type { EventOccurrence } from '@slicekeeper/kube';
import {
  RESOURCE_SLICE_API_VERSION,
  RESOURCE_SLICE_KIND,
  TAINT_CONDITIONS,
} from '@slicekeeper/slices';

/** What a recorded sync status tells a user looking at the Node (`kubectl describe node`). */
export const keyEventReasons = [
  /** The driver's inventory breaks a Kubernetes rule (field path and rule in the note). */
  'InvalidInventory',
  /** The API server refused the writes for good, or a record of the key cannot be read. */
  'PublishFailed',
  /** The driver has devices for a Node that does not exist. */
  'NodeMissing',
  /** The API server dropped fields of the key's slices (a feature gate is off). */
  'FieldsDropped',
  /** The driver's stream was lost: its devices are tainted until it reconnects or the wipe. */
  'DriverUnreachable',
  /** The key's slices were deleted. */
  'ResourceSlicesWithdrawn',
  /** The key is published again after one of the above. */
  'ResourcesPublished',
] as const;
export type KeyEventReason = (typeof keyEventReasons)[number];

/** One Event of a key, about its Node (or, cluster-scoped, one of its ResourceSlices). */
export interface KeyEvent {
  type: 'Normal' | 'Warning';
  reason: KeyEventReason;
  /** What was done or failed. */
  action: 'PublishResourceSlices' | 'TaintDevices' | 'WithdrawResourceSlices';
  note: string;
}

/** A sync's recorded status, with what it needs to be told as Events. */
export interface KeyEventInput {
  key: SliceKey;
  /** The status before this sync; undefined for the key's first. */
  previous: SyncStatus | undefined;
  status: SyncStatus;
  /** Whether the key is registered (a withdrawal after a removal is a plugin's own doing). */
  registered: boolean;
  stream: StreamState | undefined;
}

/** Outcomes a user must act on; the sync after one that succeeds is a recovery. */
const PROBLEMS: ReadonlySet<SyncOutcome> = new Set<SyncOutcome>([
  'invalid',
  'failed',
  'corrupt',
  'node-missing',
]);

/** Problems named in an `InvalidInventory` note; the rest are counted. */
const NOTED_PROBLEMS = 3;

/**
 * The Events a recorded status calls for. A problem outcome is an occurrence every time a sync
 * records it (the recorder makes a series of the repeats); a change of state (unreachable,
 * withdrawn, published again, newly dropped fields) is one when it happens. A sync being
 * retried (`retrying`) is no Event: it is transient, and metrics show a retry storm.
 */
export function keyEvents(input: KeyEventInput): KeyEvent[] {
  const { key, previous, status, registered, stream } = input;
  const driver = `driver ${key.driver}`;
  const events: KeyEvent[] = [];
  const publish = (type: KeyEvent['type'], reason: KeyEventReason, note: string) =>
    events.push({ type, reason, action: 'PublishResourceSlices', note });

  switch (status.outcome) {
    case 'invalid':
      publish(
        'Warning',
        'InvalidInventory',
        `${driver}: inventory refused, ${invalidNote(status)}`,
      );
      break;
    case 'failed':
    case 'corrupt':
      publish('Warning', 'PublishFailed', `${driver}: ${status.error ?? status.outcome}`);
      break;
    case 'node-missing':
      publish(
        'Warning',
        'NodeMissing',
        `${driver} has devices for this node, but the Node does not exist: published when it appears`,
      );
      break;
    default:
      break;
  }

  const known = new Set(previous?.droppedFields ?? []);
  const dropped = (status.droppedFields ?? []).filter((field) => !known.has(field));
  if (dropped.length > 0) {
    publish(
      'Warning',
      'FieldsDropped',
      `${driver}: the API server dropped fields of its ResourceSlices (a feature gate is off): ${dropped.join('; ')}`,
    );
  }

  const unreachable = status.taints?.unreachable;
  if (unreachable !== undefined && previous?.taints?.unreachable === undefined) {
    const since = stream?.unreachableSince === undefined ? '' : ` since ${stream.unreachableSince}`;
    events.push({
      type: 'Warning',
      reason: 'DriverUnreachable',
      action: 'TaintDevices',
      note:
        unreachable === 'tainted'
          ? `${driver} unreachable${since}: its devices are tainted ${key.driver}/${TAINT_CONDITIONS.driverUnreachable}:NoSchedule until it reconnects; its slices are withdrawn if it does not in time`
          : `${driver} unreachable${since}: the API server drops device taints (DRADeviceTaints off), so its devices stay schedulable until its slices are withdrawn`,
    });
  }

  if (
    status.outcome === 'withdrawn' &&
    previous !== undefined &&
    previous.outcome !== 'withdrawn' &&
    previous.slices.length > 0
  ) {
    const [type, why] = withdrawal(registered, stream);
    events.push({
      type,
      reason: 'ResourceSlicesWithdrawn',
      action: 'WithdrawResourceSlices',
      note: `${driver}: ${why}: ${plural(previous.slices.length, 'ResourceSlice')} deleted`,
    });
  }

  if (status.outcome === 'synced' && previous !== undefined && recovered(previous, status)) {
    const devices = status.pools.reduce((sum, pool) => sum + pool.devices, 0);
    const pools = status.pools.map((p) => `${p.name} generation ${p.generation}`).join(', ');
    publish(
      'Normal',
      'ResourcesPublished',
      `${driver}: ${plural(devices, 'device')} published in ${plural(status.slices.length, 'ResourceSlice')} (${pools})`,
    );
  }
  return events;
}

function invalidNote(status: SyncStatus): string {
  const problems = status.problems ?? [];
  if (problems.length === 0) return status.error ?? 'no reason recorded';
  const named = problems.slice(0, NOTED_PROBLEMS).map((p) => `${p.field}: ${p.message}`);
  const more = problems.length - named.length;
  return `nothing published from it: ${named.join('; ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}

function withdrawal(
  registered: boolean,
  stream: StreamState | undefined,
): ['Normal' | 'Warning', string] {
  if (!registered) return ['Normal', 'plugin removed'];
  switch (stream?.state) {
    case 'wiped':
      return ['Warning', 'unreachable for longer than the wipe delay'];
    case 'unimplemented':
      return ['Warning', 'the plugin does not implement WatchResources'];
    default:
      return ['Normal', 'the driver publishes no devices'];
  }
}

function recovered(previous: SyncStatus, status: SyncStatus): boolean {
  if (PROBLEMS.has(previous.outcome)) return true;
  if (previous.taints?.unreachable !== undefined && status.taints?.unreachable === undefined) {
    return true;
  }
  return previous.outcome === 'withdrawn' && previous.slices.length === 0;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

export interface KeyEventReporterOptions {
  recorder: { record(occurrence: EventOccurrence): void };
  /** The UID of a Node, from the watch-fed cache; undefined when not known. */
  nodeUid: (node: string) => string | undefined;
  /**
   * A ResourceSlice of a cluster-scoped key (the first by name), from the watch-fed cache;
   * undefined when the key has none.
   */
  sliceOf: (key: SliceKey) => { name: string; uid: string } | undefined;
}

/**
 * Tells recorded sync statuses as Events: about the key's Node for a node-local key
 * (`kubectl describe node`); about one of its ResourceSlices for a cluster-scoped key, which has
 * no Node (`kubectl describe resourceslice`, Events in `default`). A cluster-scoped key without
 * a slice, now or at its previous sync (an inventory refused from the start), has no object to
 * be about and gets none; its status and the driver's feedback still say it all.
 */
export class KeyEventReporter {
  constructor(private readonly options: KeyEventReporterOptions) {}

  report(input: KeyEventInput): void {
    const regarding = this.regarding(input);
    if (regarding === undefined) return;
    for (const event of keyEvents(input)) this.options.recorder.record({ regarding, ...event });
  }

  private regarding(input: KeyEventInput): EventOccurrence['regarding'] | undefined {
    const { key } = input;
    if (key.node !== '') {
      // Without the Node's UID, its name, as the kubelet does; `kubectl describe node` finds both.
      return {
        apiVersion: 'v1',
        kind: 'Node',
        name: key.node,
        uid: this.options.nodeUid(key.node) ?? key.node,
      };
    }
    const slice = this.options.sliceOf(key);
    const name = slice?.name ?? input.status.slices[0] ?? input.previous?.slices[0];
    if (name === undefined) return undefined;
    return {
      apiVersion: RESOURCE_SLICE_API_VERSION,
      kind: RESOURCE_SLICE_KIND,
      name,
      uid: slice?.uid ?? name,
    };
  }
}
