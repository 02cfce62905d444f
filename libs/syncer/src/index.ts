export {
  NodeMissingError,
  RemovalPendingError,
  defaultBackoffPolicy,
  retryDelayMs,
} from './backoff';
export type { BackoffPolicy } from './backoff';
export { Maintenance } from './maintenance';
export type { MaintenanceOptions } from './maintenance';
export type { ClusterView, SliceApi, SliceTarget } from './slice-api';
export { SyncWorker } from './sync-worker';
export type { MaintenanceScheduleOptions, SyncWorkerOptions } from './sync-worker';
export { Reconciler } from './reconciler';
export type { Reconciled, ReconcilerOptions, SyncContext } from './reconciler';
export { SyncerMetrics } from './syncer-metrics';
export { ClusterTriggers } from './cluster-triggers';
export type { ClusterTriggersOptions, WatchedChange } from './cluster-triggers';
export { AntiEntropy } from './anti-entropy';
export type { AntiEntropyOptions } from './anti-entropy';
