export {
  NodeMissingError,
  RemovalPendingError,
  defaultBackoffPolicy,
  retryDelayMs,
} from './backoff';
export type { BackoffPolicy } from './backoff';
export { KeyGuard } from './key-guard';
export type { HeldGuard } from './key-guard';
export { Maintenance } from './maintenance';
export type { MaintenanceOptions } from './maintenance';
export type { SliceApi } from './slice-api';
export { SliceSyncer } from './slice-syncer';
export type { SliceSyncerOptions } from './slice-syncer';
export { SyncProcessor } from './sync-processor';
export type { SyncContext, SyncProcessorOptions } from './sync-processor';
export { SyncerMetrics } from './syncer-metrics';
export { WriteRateLimiter } from './write-rate-limiter';
export type { WriteRateLimiterOptions } from './write-rate-limiter';
