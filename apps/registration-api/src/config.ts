import { z } from 'zod';
import {
  checkRedisEnv,
  endpointPolicyEnv,
  envBoolean,
  envDurationMs,
  envInt,
  envList,
  envLogLevel,
  envMemoryReduceInterval,
  envPort,
  envUrl,
  parseConfig,
  redisEnv,
  telemetryEnv,
} from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';

/** What TRACE_URL_TEMPLATE's trace id stands in for. */
export const TRACE_ID_PLACEHOLDER = '{traceId}';

/** Which authenticators the API runs. */
export const AUTH_MODES = ['static', 'kubernetes', 'both'] as const;

export const registrationApiConfigSchema = z
  .object({
    HOST: z.string().default('0.0.0.0').describe('Address the API listens on.'),
    PORT: envPort(
      8080,
      'Port of the API, its OpenAPI document (/docs) and /metrics, /healthz, /readyz.',
    ),
    ...redisEnv('registrations, statuses, the sync queue and the rate-limit counters'),
    ...telemetryEnv(),
    AUTH_MODE: z
      .enum(AUTH_MODES, { message: `must be one of ${AUTH_MODES.join(', ')}` })
      .default('static')
      .describe(
        'Who may call: static (the TOKEN_FILE), kubernetes (ServiceAccount tokens verified by TokenReview, authorized by SubjectAccessReview), or both (the token file first).',
      ),
    TOKEN_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'JSON file of static bearer tokens: {"tokens":[{"name","token","role":"admin"} or {"name","token","role":"node","node"}]}. Required unless AUTH_MODE=kubernetes.',
      ),
    TOKEN_AUDIENCE: envList(
      'slicekeeper',
      'Audiences a ServiceAccount token must be issued for (one is enough), comma-separated; the audience of the projected token.',
    ),
    TOKEN_REVIEW_CACHE_TTL: envDurationMs(
      '30s',
      "How long a TokenReview answer is reused, never past the token's exp: a deleted ServiceAccount, Pod or Node stops working at most this much later.",
    ),
    ACCESS_REVIEW_CACHE_TTL: envDurationMs(
      '5s',
      'How long a SubjectAccessReview answer is reused: a new or revoked RBAC grant takes effect at most this much later.',
    ),
    REVIEW_CACHE_SIZE: envInt(
      10_000,
      'Most TokenReview (and, separately, SubjectAccessReview) answers held; the least recently used go first.',
      { min: 0, max: 1_000_000 },
    ),
    REVIEW_TIMEOUT: envDurationMs(
      '5s',
      'Deadline of one TokenReview or SubjectAccessReview; past it the request is answered 503.',
    ),
    KUBECONFIG: z
      .string()
      .optional()
      .describe(
        'Kubeconfig of the cluster whose TokenReview and SubjectAccessReview are asked (AUTH_MODE kubernetes or both). Unset: in-cluster service account (KUBERNETES_SERVICE_HOST).',
      ),
    KUBERNETES_SERVICE_HOST: z
      .string()
      .optional()
      .describe(
        'Set by Kubernetes inside a pod; selects the in-cluster configuration when KUBECONFIG is unset.',
      ),
    TLS_CERT_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'PEM certificate (chain) to serve HTTPS with; reloaded when the file changes. Unset: plain HTTP (npm start, compose only).',
      ),
    TLS_KEY_FILE: z
      .string()
      .min(1)
      .optional()
      .describe('PEM private key of TLS_CERT_FILE; reloaded with it.'),
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
    MEMORY_REDUCE_INTERVAL: envMemoryReduceInterval(),
    SHUTDOWN_TIMEOUT: envDurationMs(
      '30s',
      'How long in-flight requests may take to finish on SIGTERM.',
    ),
    TRACE_URL_TEMPLATE: envUrl(['http:', 'https:'], '')
      .refine((value) => value === undefined || value.includes(TRACE_ID_PLACEHOLDER), {
        message: `must contain ${TRACE_ID_PLACEHOLDER}`,
      })
      .describe(
        `Tracing: a link to a trace in your tracing UI, ${TRACE_ID_PLACEHOLDER} standing for its id (e.g. http://localhost:16686/trace/${TRACE_ID_PLACEHOLDER} for Jaeger); the status page links each key's last sync trace with it. Unset: the trace id is shown as text.`,
      ),
    LOG_LEVEL: envLogLevel(),
  })
  .superRefine(checkRedisEnv)
  .superRefine((config, ctx) => {
    if (config.AUTH_MODE !== 'kubernetes' && config.TOKEN_FILE === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['TOKEN_FILE'],
        message: `required with AUTH_MODE=${config.AUTH_MODE}`,
      });
    }
    if (
      config.AUTH_MODE !== 'static' &&
      config.KUBECONFIG === undefined &&
      config.KUBERNETES_SERVICE_HOST === undefined
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['KUBECONFIG'],
        message: `required with AUTH_MODE=${config.AUTH_MODE} outside a pod (no KUBERNETES_SERVICE_HOST)`,
      });
    }
    if ((config.TLS_CERT_FILE === undefined) !== (config.TLS_KEY_FILE === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [config.TLS_CERT_FILE === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE'],
        message: 'TLS_CERT_FILE and TLS_KEY_FILE go together',
      });
    }
  });

export type RegistrationApiConfig = z.output<typeof registrationApiConfigSchema>;

export function loadConfig(env: Environment): RegistrationApiConfig {
  return parseConfig(registrationApiConfigSchema, env);
}

/** Where the cluster asked for reviews is: a kubeconfig file, or the pod's service account. */
export function kubeconfigSource(config: RegistrationApiConfig) {
  return config.KUBECONFIG !== undefined
    ? ({ kind: 'file', path: config.KUBECONFIG } as const)
    : ({ kind: 'in-cluster' } as const);
}
