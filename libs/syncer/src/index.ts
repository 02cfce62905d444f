export { RetryLater, defaultBackoffPolicy, retryDelayMs } from './backoff';
export type { BackoffPolicy, Requeue } from './backoff';
export { Maintenance } from './maintenance';
export type { MaintenanceOptions } from './maintenance';
export type { ClusterView, SliceApi, SliceTarget } from './slice-api';
export { SyncWorker } from './sync-worker';
export type { MaintenanceScheduleOptions, SyncWorkerOptions } from './sync-worker';
export { ResourceApiFollower } from './resource-api-follower';
export type { ResourceApiFollowerOptions } from './resource-api-follower';
export { Reconciler } from './reconciler';
export type { ReconcileResult, ReconcilerOptions, SyncContext } from './reconciler';
export { SyncerMetrics } from './syncer-metrics';
export { ClusterTriggers } from './cluster-triggers';
export type { ClusterTriggersOptions, WatchedChange } from './cluster-triggers';
export { AntiEntropy } from './anti-entropy';
export type { AntiEntropyOptions } from './anti-entropy';
export {
  MAX_CONDITION_MESSAGE_LENGTH,
  evaluateNodeCondition,
  nodeConditionReasons,
  planNodeConditionWrite,
} from './node-condition';
export type { NodeCondition, NodeConditionReason } from './node-condition';
export { NodeConditionMetrics, NodeConditionReconciler } from './node-condition-reconciler';
export type {
  NodeConditionReconcilerOptions,
  NodeConditionResult,
} from './node-condition-reconciler';
export {
  NODE_CONDITION_JOB_NAME,
  NodeConditionQueue,
  nodeConditionJobOptions,
  nodeConditionJobSchema,
} from './node-condition-queue';
export type { NodeConditionJob, NodeConditionQueueOptions } from './node-condition-queue';
export { NodeConditionWorker } from './node-condition-worker';
export type { NodeConditionWorkerOptions } from './node-condition-worker';
export { KeyEventReporter, keyEventReasons, keyEvents } from './key-events';
export type {
  KeyEvent,
  KeyEventInput,
  KeyEventReason,
  KeyEventReporterOptions,
} from './key-events';
