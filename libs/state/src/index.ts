export { CorruptRecordError } from './codec';
export { DeletionMarks } from './deletion-marks';
export type { DeletionMarksOptions } from './deletion-marks';
export { RegistrationRefusedError, RegistrationStore } from './registration-store';
export type {
  AddRegistration,
  FollowResult,
  ListRegistrationsOptions,
  PositionedEvent,
  RegistrationPage,
  RegistrationStoreOptions,
  RemoveOptions,
} from './registration-store';
export { KeyStatusReader, snapshotSummarySchema } from './key-status-reader';
export type { KeyStatus, KeyStatusReaderOptions, SnapshotSummary } from './key-status-reader';
export { canonicalJson } from './canonical-json';
export { SnapshotWriter } from './snapshot-writer';
export type {
  RestoreResult,
  SnapshotWriterOptions,
  StoreOptions,
  StoreResult,
  WithdrawResult,
} from './snapshot-writer';
export { WatcherLeases } from './watcher-leases';
export type { WatcherLeasesOptions } from './watcher-leases';
export { KeyIndex } from './key-index';
export type { KeyIndexOptions, KeyStanding } from './key-index';
export { SyncFeedback } from './sync-feedback';
export type { SyncFeedbackOptions } from './sync-feedback';
export { SyncRecords, SyncTurn } from './sync-records';
export type { SyncRecordsOptions } from './sync-records';
export { WriteRateLimiter } from './write-rate-limiter';
export type { WriteRateLimiterOptions } from './write-rate-limiter';
export { apiRateLimitNamespace } from './redis-keys';
export { NodePublishState } from './node-publish-state';
export type { KeyPublishState, NodePublishStateOptions } from './node-publish-state';
