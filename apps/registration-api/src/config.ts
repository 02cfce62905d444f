import { z } from 'zod';
import {
  endpointPolicyEnv,
  envBoolean,
  envDurationMs,
  envInt,
  envLogLevel,
  envPort,
  parseConfig,
  checkRedisEnv,
  redisEnv,
} from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';

export const registrationApiConfigSchema = z
  .object({
    HOST: z.string().default('0.0.0.0').describe('Address the API listens on.'),
    PORT: envPort(
      8080,
      'Port of the API, its OpenAPI document (/docs) and /metrics, /healthz, /readyz.',
    ),
    ...redisEnv('registrations, statuses, the sync queue and the rate-limit counters'),
    TOKEN_FILE: z
      .string()
      .min(1)
      .describe(
        'JSON file of bearer tokens: {"tokens":[{"name","token","role":"admin"} or {"name","token","role":"node","node"}]}.',
      ),
    // The same variables as the plugin-watcher's, which checks its dials with them.
    ...endpointPolicyEnv,
    PLUGIN_DIAL_TIMEOUT: envDurationMs(
      '10s',
      'How long to wait for a plugin connection (kubelet: 10s).',
    ),
    PLUGIN_CALL_TIMEOUT: envDurationMs(
      '1s',
      'Deadline of GetInfo and NotifyRegistrationStatus (kubelet: 1s).',
    ),
    MAX_ENDPOINTS_PER_PLUGIN: envInt(
      4,
      'Endpoints one driver may have registered on one node at once (rolling updates need 2).',
      { min: 1, max: 64 },
    ),
    MAX_DRIVERS_PER_NODE: envInt(
      16,
      'Driver names one node may have registered at once, so that one node token cannot register without bound.',
      { min: 1, max: 1024 },
    ),
    REMOVAL_GRACE: envDurationMs(
      '30s',
      "How long a removed plugin's slices stay unless it registers again (a driver restarting deregisters and registers). Keep it equal to the watcher's WIPE_DELAY.",
    ),
    RATE_LIMIT_MAX: envInt(
      600,
      'Requests per token per rate-limit window, shared by all replicas.',
      {
        min: 1,
      },
    ),
    RATE_LIMIT_WINDOW: envDurationMs('1m', 'The rate-limit window.'),
    BODY_LIMIT_BYTES: envInt(16_384, 'Largest request body accepted; larger ones get 413.', {
      min: 1024,
      max: 1_048_576,
    }),
    TRUST_PROXY: envBoolean(
      false,
      'Take the client address from X-Forwarded-For (only behind a trusted proxy).',
    ),
    SHUTDOWN_TIMEOUT: envDurationMs(
      '30s',
      'How long in-flight requests may take to finish on SIGTERM.',
    ),
    LOG_LEVEL: envLogLevel(),
  })
  .superRefine(checkRedisEnv);

export type RegistrationApiConfig = z.output<typeof registrationApiConfigSchema>;

export function loadConfig(env: Environment): RegistrationApiConfig {
  return parseConfig(registrationApiConfigSchema, env);
}
