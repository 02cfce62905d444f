export {
  NodeMissingError,
  RemovalPendingError,
  defaultBackoffPolicy,
  retryDelayMs,
} from './backoff';
export type { BackoffPolicy } from './backoff';
export { Maintenance } from './maintenance';
export type { MaintenanceOptions } from './maintenance';
export type { SliceApi } from './slice-api';
export { SliceSyncer } from './slice-syncer';
export type { SliceSyncerOptions } from './slice-syncer';
export { SyncProcessor } from './sync-processor';
export type { SyncContext, SyncProcessorOptions } from './sync-processor';
export { SyncerMetrics } from './syncer-metrics';
