export { Backoff, backoffDelayMs } from './backoff';
export type { BackoffOptions } from './backoff';
export { systemClock } from './clock';
export type { Clock, TimerHandle } from './clock';
export { RedisConnections } from './redis-connections';
export type { RedisConnectionsOptions, RedisFactory } from './redis-connections';
export { runService } from './run-service';
export type {
  Closable,
  ProbeSettings,
  RunServiceOptions,
  RunningService,
  ServiceConfig,
  ServiceContext,
  ServiceParts,
} from './run-service';
