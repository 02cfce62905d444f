export { freePort, repoRoot } from '@slicekeeper/local-stack';
export { RedisServer } from './redis-server';
export type { RedisServerOptions } from './redis-server';
export { uniquePrefix } from './unique-prefix';
export { waitFor } from './wait-for';
export type { WaitForOptions } from './wait-for';
export { ServiceProcess, readMetric } from './service-process';
export type { LogEntry, ServiceProcessOptions } from './service-process';
