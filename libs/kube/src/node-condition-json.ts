/**
 * The Node condition slicekeeper owns: whether every registered DRA driver of the node has its
 * current inventory published. Renaming it is a breaking change for whoever reads it (cluster
 * autoscaler, readiness gates, dashboards).
 */
export const PUBLISHED_CONDITION_TYPE = 'DRAResourcesPublished';

/** A condition's `status`, as core/v1 `ConditionStatus` allows it. */
export const conditionStatuses = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof conditionStatuses)[number];

/**
 * A Node's {@link PUBLISHED_CONDITION_TYPE} condition as the API server last showed it: its
 * status and reason (what decides whether a write is due), or what is wrong with it, the field
 * named, when someone wrote one slicekeeper cannot read (it is then rewritten).
 */
export type ObservedCondition =
  | { kind: 'set'; status: ConditionStatus; reason: string }
  | { kind: 'malformed'; problem: string };

/** One condition as slicekeeper writes it with a strategic merge patch (merged by `type`). */
export interface NodeConditionWrite {
  type: string;
  status: ConditionStatus;
  /** CamelCase, machine-readable. */
  reason: string;
  /** Human-readable. */
  message: string;
  /** RFC 3339, seconds. */
  lastHeartbeatTime: string;
  /** RFC 3339, seconds; left out when the status stays, so that the server keeps the old one. */
  lastTransitionTime?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isConditionStatus(value: unknown): value is ConditionStatus {
  return (conditionStatuses as readonly unknown[]).includes(value);
}

/**
 * The {@link PUBLISHED_CONDITION_TYPE} condition of a Node object (as a list, a watch or a patch
 * returns it); undefined when the Node has none. A Node whose `status.conditions` cannot be
 * read answers `malformed`, naming the field, rather than failing: the Node itself is still
 * good for everything else the syncer needs of it.
 */
export function observedConditionOf(node: unknown): ObservedCondition | undefined {
  if (!isRecord(node) || node.status === undefined) return undefined;
  if (!isRecord(node.status)) return { kind: 'malformed', problem: 'status: not an object' };
  const { conditions } = node.status;
  if (conditions === undefined || conditions === null) return undefined;
  if (!Array.isArray(conditions)) {
    return { kind: 'malformed', problem: 'status.conditions: not a list' };
  }
  const index = conditions.findIndex(
    (condition) => isRecord(condition) && condition.type === PUBLISHED_CONDITION_TYPE,
  );
  if (index < 0) return undefined;
  const condition = conditions[index] as Record<string, unknown>;
  const field = `status.conditions[${index}]`;
  if (!isConditionStatus(condition.status)) {
    const found = condition.status === undefined ? '' : `, not ${JSON.stringify(condition.status)}`;
    return {
      kind: 'malformed',
      problem: `${field}.status: must be True, False or Unknown${found}`,
    };
  }
  const reason = condition.reason ?? '';
  if (typeof reason !== 'string') {
    return { kind: 'malformed', problem: `${field}.reason: not a string` };
  }
  return { kind: 'set', status: condition.status, reason };
}
