export { createGrpcConnector } from './grpc-connector';
export type { GrpcConnectorOptions } from './grpc-connector';
export { KeyWatch } from './key-watch';
export type { KeyWatchOptions } from './key-watch';
export { LeaseManager, firstChoice } from './lease-manager';
export type { LeaseManagerOptions } from './lease-manager';
export { PluginStream } from './plugin-stream';
export type { PluginStreamOptions, PluginStreamState } from './plugin-stream';
export { PluginWatcher } from './plugin-watcher';
export type { PluginWatcherOptions, SharedModeOptions } from './plugin-watcher';
export type {
  InventoryStream,
  InventoryStreamHandlers,
  PublisherConnector,
  WatchRequest,
} from './publisher-connector';
export { RegistrationFollower } from './registration-follower';
export type { RegistrationFollowerOptions } from './registration-follower';
export type { SyncEnqueuer } from './sync-enqueuer';
export { WatcherMetrics } from './watcher-metrics';
export type { WatcherGaugeSource } from './watcher-metrics';
export { PluginDiscovery, infoProblem, serviceEndpoint } from './plugin-discovery';
export type { DiscoveryRegistrar, PluginDiscoveryOptions } from './plugin-discovery';
export { planSocket } from './plan-socket';
export type { SocketAction, SocketFacts } from './plan-socket';
export { socketDirectory } from './registration-directory';
export type { SocketDirectory } from './registration-directory';
export { RECEIVE_SPAN, STORE_SPAN } from './watcher-spans';
