export { RedisServer, freePort, repoRoot } from '@slicekeeper/local-stack';
export type { LogEntry, RedisServerOptions } from '@slicekeeper/local-stack';
export { uniquePrefix } from './unique-prefix';
export { waitFor } from './wait-for';
export type { WaitForOptions } from './wait-for';
export { ServiceProcess, readMetric } from './service-process';
export type { ServiceProcessOptions } from './service-process';
export { useRedisServer } from './use-redis-server';
export type { TestRedis } from './use-redis-server';
export { requestJson } from './request-json';
export { OtlpReceiver } from './otlp-receiver';
export type {
  AttributeValue,
  OtlpReceiverOptions,
  ReceivedLink,
  ReceivedSpan,
  SpanKindName,
  StatusCodeName,
} from './otlp-receiver';
