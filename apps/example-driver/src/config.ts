import { z } from 'zod';
import { envDurationMs, envLogLevel, envUrl, parseConfig, telemetryEnv } from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';
import { DRIVER_PROFILES } from './profiles';

export const faults = ['none', 'unimplemented', 'end-stream', 'exit'] as const;

export const exampleDriverConfigSchema = z.object({
  DRIVER_NAME: z
    .string()
    .min(1)
    .default('gpu.example.com')
    .describe('The DRA driver name GetInfo reports.'),
  NODE_NAME: z
    .string()
    .default('')
    .describe(
      'The node the driver runs on (registered with the API; empty for a cluster-scoped pool).',
    ),
  ENDPOINT: z
    .string()
    .default('unix:///tmp/slicekeeper/gpu.example.com.sock')
    .describe(
      'Where to serve Registration and ResourcePublisher: unix:///path.sock or host:port (port 0: any).',
    ),
  ADVERTISE_ENDPOINT: z
    .string()
    .optional()
    .describe(
      'The endpoint to register, when the watcher reaches the driver by another address. Default: the served one.',
    ),
  PROFILE: z
    .enum(DRIVER_PROFILES, { message: `must be one of ${DRIVER_PROFILES.join(', ')}` })
    .default('gpu')
    .describe(
      'The devices to publish, from inventory/profiles/<profile>.json of the app: gpu (8 GPUs), partitionable-gpu (shared counters and MIG-like partitions), nic (bandwidth as consumable capacity), fabric (a cluster-level pool with per-device node selection and binding conditions; NODE_NAME empty). Ignored when INVENTORY_FILE is set.',
    ),
  INVENTORY_FILE: z
    .string()
    .optional()
    .describe(
      "YAML/JSON inventory to publish instead of the PROFILE's; re-read when it changes or on SIGHUP.",
    ),
  REGISTRATION_API_URL: envUrl(
    ['http:', 'https:'],
    'Registration API to register with at start and deregister from on SIGTERM; unset: no registration.',
  ),
  REGISTRATION_TIMEOUT: envDurationMs(
    '30s',
    'How long to keep trying to register while the registration API is not reachable yet.',
  ),
  REGISTRATION_TOKEN_FILE: z
    .string()
    .optional()
    .describe(
      'File holding the bearer token sent to REGISTRATION_API_URL (a token bound to NODE_NAME, or an admin token).',
    ),
  REGISTRATION_API_CA_FILE: z
    .string()
    .optional()
    .describe(
      'PEM CA bundle an https REGISTRATION_API_URL’s certificate must chain to, re-read at every request; the system roots when unset.',
    ),
  FAULT: z
    .enum(faults, { message: `must be one of ${faults.join(', ')}` })
    .default('none')
    .describe(
      'For tests: unimplemented (answer Unimplemented), end-stream (send once, then EOF), exit (exit abruptly after FAULT_DELAY).',
    ),
  FAULT_DELAY: envDurationMs('0', 'When FAULT=exit: how long to serve before exiting.'),
  LOG_LEVEL: envLogLevel(),
  ...telemetryEnv(),
});

export type ExampleDriverConfig = z.output<typeof exampleDriverConfigSchema>;

/** Reads the example driver's configuration; throws naming every bad variable. */
export function loadConfig(env: Environment = process.env): ExampleDriverConfig {
  return parseConfig(exampleDriverConfigSchema, env);
}
