export { ConfigError, parseConfig } from './parse-config';
export type { Environment } from './parse-config';
export { envBoolean, envDurationMs, envInt, envLogLevel, envPort, envUrl, logLevels } from './env';
