export { LocalStack } from './local-stack';
export type { LocalStackInfo, LocalStackOptions } from './local-stack';
export { LogPrefixer } from './log-prefixer';
export type { LogPrefixerOptions } from './log-prefixer';
export {
  SupervisedProcess,
  appCommand,
  inheritedEnv,
  repoRoot,
  tsxCommand,
} from './supervised-process';
export type { LogEntry, SupervisedProcessOptions } from './supervised-process';
export { RedisNotInstalledError, RedisServer, freePort } from './redis-server';
export type { RedisAddress, RedisServerOptions } from './redis-server';
export { RedisSentinelGroup, RedisSentinelNotInstalledError } from './redis-sentinel-group';
export type { RedisSentinelGroupOptions } from './redis-sentinel-group';
export { RedisClusterGroup, RedisCliNotInstalledError } from './redis-cluster';
export type { RedisClusterGroupOptions } from './redis-cluster';
export { generateStackTokens, tokenFileJson, writeStackTokens } from './stack-tokens';
export type { StackTokens } from './stack-tokens';
export { createEmulatorNodes } from './emulator-nodes';
export {
  CONFIG_END,
  CONFIG_START,
  configSectionOf,
  describeConfig,
  renderConfigSection,
  renderConfigTable,
  replaceConfigSection,
} from './describe-config';
export type { ConfigField, ServiceConfig } from './describe-config';
export { stackSummary } from './stack-summary';
export {
  DRIVER_PROFILES_DIR,
  featureGatesUsed,
  isClusterScoped,
  listDriverProfiles,
  loadDriverProfile,
} from './driver-profiles';
