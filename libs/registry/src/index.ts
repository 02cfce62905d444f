export { RegistrationRefusedError, RegistrationStore, parseRemoval } from './registration-store';
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
