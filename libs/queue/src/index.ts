export { LuaScript, batchedMget, execPipeline, execWrites, replyOf } from './lua-script';
export type { PipelineReply } from './lua-script';
export { oldestReadyJobTimestamp } from './oldest-ready-job';
export { createRedisConnection } from './redis-connection';
export type { RedisClient, RedisConnectionOptions } from './redis-connection';
export { RedisConnections } from './redis-connections';
export type { RedisConnectionsOptions, RedisFactory } from './redis-connections';
export { redisHealth } from './redis-health';
export {
  MAINTENANCE_JOB_OPTIONS,
  NODE_CONDITION_BACKOFF_TYPE,
  NODE_CONDITION_JOB_NAME,
  createMaintenanceQueue,
  createNodeConditionQueue,
  createQueueWorker,
  createSyncQueue,
  nodeConditionJobOptions,
  nodeConditionJobSchema,
} from './queues';
export type {
  NodeConditionJob,
  QueueConnectionOptions,
  QueueName,
  QueueWorkerOptions,
} from './queues';
export { SYNC_ATTEMPTS, SYNC_BACKOFF_TYPE, SyncQueue, syncJobOptions } from './sync-queue';
export type { SyncQueueOptions } from './sync-queue';
export { PUBLISH_SYNC_SPAN, startPublishSyncSpan, syncQueueAttributes } from './sync-queue-spans';
