export { LuaScript, execPipeline, replyOf } from './lua-script';
export type { PipelineReply } from './lua-script';
export { oldestReadyJobTimestamp } from './oldest-ready-job';
export { createRedisConnection } from './redis-connection';
export type { RedisConnectionOptions } from './redis-connection';
export { SYNC_ATTEMPTS, SYNC_BACKOFF_TYPE, SyncQueue, syncJobOptions } from './sync-queue';
export type { SyncQueueOptions } from './sync-queue';
