export { createLogger } from './logger';
export type { LevelWithSilent, Logger, LoggerOptions } from './logger';
export { RedisOutageLog } from './log-redis-outages';
export type { RedisOutageLogOptions } from './log-redis-outages';
export { createMetricsRegistry } from './metrics';
export { ProbeServer } from './probe-server';
export type { ProbeServerOptions, ReadinessCheck } from './probe-server';
export { installShutdown } from './shutdown';
export type { ShutdownOptions } from './shutdown';
