import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ClusterCache, KubeNodeStatusClient } from '@slicekeeper/kube';
import type { NodePublishState } from '@slicekeeper/state';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import {
  evaluateNodeCondition,
  nodeConditionReasons,
  planNodeConditionWrite,
} from './node-condition';

/** The Node condition's metrics, in {@link SyncerMetrics}' style. */
export class NodeConditionMetrics {
  /** `DRAResourcesPublished` writes by the status and reason written: one per transition. */
  readonly writes: Counter<'status' | 'reason'>;

  constructor(registry: Registry) {
    this.writes = new Counter({
      name: 'slicekeeper_node_condition_writes_total',
      help: 'DRAResourcesPublished Node condition writes (transitions) by status and reason.',
      labelNames: ['status', 'reason'],
      registers: [registry],
    });
    for (const reason of nodeConditionReasons) {
      this.writes.inc({ status: reason === 'Published' ? 'True' : 'False', reason }, 0);
    }
  }
}

export interface NodeConditionReconcilerOptions {
  /** The node's keys' records (`NodePublishState`). */
  records: Pick<NodePublishState, 'read'>;
  /** The Nodes as the watch sees them, with our own condition writes overlaid. */
  cluster: Pick<
    ClusterCache,
    'keysOfNode' | 'nodeUid' | 'publishedCondition' | 'recordNodeCondition'
  >;
  api: Pick<KubeNodeStatusClient, 'patchCondition'>;
  metrics?: NodeConditionMetrics;
  logger: Logger;
  /** The condition's transition time comes from it. @defaultValue systemClock */
  clock?: Pick<Clock, 'now'>;
}

/** What one evaluation did. */
export type NodeConditionResult =
  /** The condition changed: written. */
  | 'written'
  /** The Node already shows it (or never had a plugin): nothing written. */
  | 'unchanged'
  /** The Node does not exist (as the cache or the API server says): nothing to write on. */
  | 'no-node';

/**
 * One evaluation of a node's `DRAResourcesPublished` condition, level-triggered: whatever asked
 * for it, it makes the Node's condition match the node's keys' records now.
 *
 * 1. Read what is desired: the node's registered keys, and the keys whose slices are still up
 *    without a registration (a driver restarting within the removal grace), with their records
 *    (Redis).
 * 2. Read what the Node shows: its condition in the watch-fed cache (no API read).
 * 3. Plan: a write only on a transition (`planNodeConditionWrite`).
 * 4. Apply: one strategic merge patch of `nodes/status`; what it returns goes into the cache.
 *
 * Errors are thrown as classified (transient or terminal); retrying is the queue's business.
 */
export class NodeConditionReconciler {
  private readonly clock: Pick<Clock, 'now'>;

  constructor(private readonly options: NodeConditionReconcilerOptions) {
    this.clock = options.clock ?? systemClock;
  }

  async reconcile(node: string): Promise<NodeConditionResult> {
    const { records, cluster, api, metrics } = this.options;
    const log = this.options.logger.child({ node });
    // 1. What is desired.
    const desired = evaluateNodeCondition(await records.read(node, cluster.keysOfNode(node)));
    // 2. What the Node shows. A Node the cache does not know yet is evaluated again when it
    // appears (the cache reports it).
    if (cluster.nodeUid(node) === undefined) return 'no-node';
    const observed = cluster.publishedCondition(node);
    if (observed?.kind === 'malformed') {
      log.warn(
        { problem: observed.problem },
        'unreadable DRAResourcesPublished condition, rewriting it',
      );
    }
    // 3. The plan.
    const write = planNodeConditionWrite(desired, observed, new Date(this.clock.now()));
    if (write === undefined) return 'unchanged';
    // 4. The write.
    const patched = await api.patchCondition(node, write);
    if (patched === undefined) return 'no-node';
    cluster.recordNodeCondition(node, patched.resourceVersion, patched.condition);
    metrics?.writes.inc({ status: write.status, reason: write.reason });
    // A node that lost its resources is worth a line; one that has them is the normal case
    // (thousands at once when a syncer starts), shown by the condition and the metric.
    const fields = { status: write.status, reason: write.reason, message: write.message };
    if (write.status === 'True') log.debug(fields, 'node condition written');
    else log.info(fields, 'node condition written');
    return 'written';
  }
}
