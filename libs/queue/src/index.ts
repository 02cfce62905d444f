export { LuaScript, execPipeline, replyOf } from './lua-script';
export type { PipelineReply } from './lua-script';
export { oldestReadyJobTimestamp } from './oldest-ready-job';
export { createRedisConnection } from './redis-connection';
export type { RedisClient, RedisConnectionOptions } from './redis-connection';
export { redisHealth } from './redis-health';
export { SYNC_ATTEMPTS, SYNC_BACKOFF_TYPE, SyncQueue, syncJobOptions } from './sync-queue';
export type { SyncQueueOptions } from './sync-queue';
