export { ConfigError, parseConfig } from './parse-config';
export type { Environment } from './parse-config';
export {
  DURATION_RULE,
  envBoolean,
  envDurationMs,
  envInt,
  envList,
  envLogLevel,
  envMemoryReduceInterval,
  envPort,
  envUrl,
  logLevels,
  parseDurationMs,
} from './env';
export { endpointPolicyEnv } from './endpoint-policy-env';
export {
  DEFAULT_REDIS_URL,
  checkRedisEnv,
  describeRedisTarget,
  envRedisPrefix,
  redisEnv,
  redisTarget,
} from './redis-env';
export type { HostPort, RedisEnv, RedisTarget } from './redis-env';
export { TRACE_SAMPLERS, TRACING_OFF, telemetryEnv, traceExportSettings } from './telemetry-env';
export type { TelemetryEnv, TraceExportSettings, TraceSampler } from './telemetry-env';
