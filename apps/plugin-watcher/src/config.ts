import { z } from 'zod';
import {
  endpointPolicyEnv,
  envDurationMs,
  envLogLevel,
  envPort,
  parseConfig,
  checkRedisEnv,
  redisEnv,
} from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';

export const pluginWatcherConfigSchema = z
  .object({
    ...redisEnv('registrations, snapshots and the sync queue'),
    WATCHER_MODE: z
      .enum(['node', 'shared'], { message: 'must be node or shared' })
      .default('node')
      .describe(
        'node: a DaemonSet pod watching only NODE_NAME’s plugins. shared: replicas that split all registrations through Redis leases.',
      ),
    NODE_NAME: z
      .string()
      .optional()
      .describe('The node whose plugins to watch (node mode; from the downward API).'),
    REPLICA_ID: z
      .string()
      .optional()
      .describe(
        'This replica’s unique id in shared mode. Default: the host name plus a random suffix.',
      ),
    LEASE_DURATION: envDurationMs(
      '10s',
      'Shared mode: a dead replica’s plugins are taken over within about 4/3 of this.',
    ),
    WIPE_DELAY: envDurationMs(
      '30s',
      'A plugin with no live stream for this long has its slices withdrawn.',
    ),
    RECONNECT_INITIAL_DELAY: envDurationMs(
      '5s',
      'First reconnect delay after a stream failed; doubles per failure.',
    ),
    RECONNECT_MAX_DELAY: envDurationMs('180s', 'Longest reconnect delay.'),
    // The registration API's variables: every dial is checked with the policy registrations
    // passed, so a deployment sets both services alike.
    ...endpointPolicyEnv,
    PROBE_PORT: envPort(9090, 'Port of /metrics, /healthz and /readyz.'),
    PROBE_HOST: z.string().default('0.0.0.0').describe('Address the probe server listens on.'),
    SHUTDOWN_TIMEOUT: envDurationMs(
      '30s',
      'How long closing the streams and releasing the leases may take on SIGTERM.',
    ),
    LOG_LEVEL: envLogLevel(),
  })
  .superRefine(checkRedisEnv)
  .superRefine((config, ctx) => {
    if (config.WATCHER_MODE === 'node' && (config.NODE_NAME ?? '') === '') {
      ctx.addIssue({ code: 'custom', path: ['NODE_NAME'], message: 'required in node mode' });
    }
  });

export type PluginWatcherConfig = z.output<typeof pluginWatcherConfigSchema>;

/** Reads the plugin-watcher's configuration; throws naming every bad variable. */
export function loadConfig(env: Environment = process.env): PluginWatcherConfig {
  return parseConfig(pluginWatcherConfigSchema, env);
}
