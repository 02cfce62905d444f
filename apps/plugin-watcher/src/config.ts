import { isAbsolute, normalize } from 'node:path';
import { z } from 'zod';
import {
  checkRedisEnv,
  endpointPolicyEnv,
  envDurationMs,
  envLogLevel,
  envMemoryReduceInterval,
  envPort,
  envUrl,
  parseConfig,
  redisEnv,
  telemetryEnv,
} from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';

export const pluginWatcherConfigSchema = z
  .object({
    ...redisEnv('registrations, snapshots and the sync queue'),
    ...telemetryEnv(),
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
    REGISTRATION_API_URL: envUrl(
      ['http:', 'https:'],
      'Node mode: turns on discovery — plugin sockets in PLUGIN_REGISTRATION_DIR are registered with this registration API (and deregistered when they go). Unset: no discovery.',
    ),
    PLUGIN_REGISTRATION_DIR: z
      .string()
      .default('/var/lib/slicekeeper/plugins_registry')
      .describe(
        'Discovery: the directory watched for plugin registration sockets, as kubelet watches plugins_registry (kubelet’s own: /var/lib/kubelet/plugins_registry). Must be inside PLUGIN_SOCKET_DIRS.',
      ),
    REGISTRATION_TOKEN_FILE: z
      .string()
      .optional()
      .describe(
        'Discovery: the bearer token presented to the registration API (a projected ServiceAccount token bound to the pod, or a node token), re-read at every request.',
      ),
    REGISTRATION_API_CA_FILE: z
      .string()
      .optional()
      .describe(
        'Discovery: PEM CA bundle the registration API’s https certificate must chain to; the system roots when unset.',
      ),
    DISCOVERY_RESCAN_INTERVAL: envDurationMs(
      '10s',
      'Discovery: the registration directory is read again this often, for a file-system event that was not delivered.',
    ),
    PROBE_PORT: envPort(9090, 'Port of /metrics, /healthz and /readyz.'),
    PROBE_HOST: z.string().default('0.0.0.0').describe('Address the probe server listens on.'),
    MEMORY_REDUCE_INTERVAL: envMemoryReduceInterval(),
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
  })
  .superRefine(checkDiscoveryEnv);

/**
 * Discovery registers what it finds on its own node, with its own token, and only sockets the
 * endpoint policy would let it dial.
 */
function checkDiscoveryEnv(
  config: {
    WATCHER_MODE: string;
    REGISTRATION_API_URL?: string | undefined;
    REGISTRATION_TOKEN_FILE?: string | undefined;
    PLUGIN_REGISTRATION_DIR: string;
    PLUGIN_SOCKET_DIRS: readonly string[];
  },
  ctx: z.RefinementCtx,
): void {
  if (config.REGISTRATION_API_URL === undefined) return;
  if (config.WATCHER_MODE !== 'node') {
    ctx.addIssue({
      code: 'custom',
      path: ['REGISTRATION_API_URL'],
      message: 'discovery runs in node mode only (WATCHER_MODE=node)',
    });
  }
  if ((config.REGISTRATION_TOKEN_FILE ?? '') === '') {
    ctx.addIssue({
      code: 'custom',
      path: ['REGISTRATION_TOKEN_FILE'],
      message: 'required when REGISTRATION_API_URL is set',
    });
  }
  const dir = config.PLUGIN_REGISTRATION_DIR.replace(/\/+$/, '');
  if (!isAbsolute(dir) || normalize(dir) !== dir || dir === '') {
    ctx.addIssue({
      code: 'custom',
      path: ['PLUGIN_REGISTRATION_DIR'],
      message: 'must be an absolute, normalized path',
    });
  } else if (!config.PLUGIN_SOCKET_DIRS.some((allowed) => isWithin(dir, allowed))) {
    ctx.addIssue({
      code: 'custom',
      path: ['PLUGIN_REGISTRATION_DIR'],
      message: `must be one of PLUGIN_SOCKET_DIRS or inside one (${config.PLUGIN_SOCKET_DIRS.join(', ') || 'none'}): its sockets are dialled through the endpoint policy`,
    });
  }
}

function isWithin(dir: string, allowed: string): boolean {
  const root = allowed.replace(/\/+$/, '');
  return root !== '' && (dir === root || dir.startsWith(`${root}/`));
}

export type PluginWatcherConfig = z.output<typeof pluginWatcherConfigSchema>;

/** Reads the plugin-watcher's configuration; throws naming every bad variable. */
export function loadConfig(env: Environment = process.env): PluginWatcherConfig {
  return parseConfig(pluginWatcherConfigSchema, env);
}
