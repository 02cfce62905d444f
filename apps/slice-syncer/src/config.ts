import { z } from 'zod';
import {
  checkRedisEnv,
  envDurationMs,
  envInt,
  envList,
  envLogLevel,
  envMemoryReduceInterval,
  envPort,
  parseConfig,
  redisEnv,
  telemetryEnv,
} from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';
import { driverNameProblem } from '@slicekeeper/contracts';
import { taintEffects } from '@slicekeeper/slices';
import type { HealthTaintPolicy } from '@slicekeeper/slices';

const HEALTH_TAINT_POLICIES = [...taintEffects, 'off'] as const;
const HEALTH_TAINT_EFFECTS_DESCRIPTION =
  'Per-driver exceptions to HEALTH_TAINT_EFFECT, comma-separated <driver>=<effect>, e.g. gpu.example.com=NoExecute,nic.example.com=off.';

export const sliceSyncerConfigSchema = z
  .object({
    ...redisEnv('snapshots, statuses and the queue'),
    ...telemetryEnv(),
    KUBECONFIG: z
      .string()
      .optional()
      .describe(
        'Kubeconfig file of the cluster. Unset: in-cluster service account (KUBERNETES_SERVICE_HOST).',
      ),
    KUBERNETES_SERVICE_HOST: z
      .string()
      .optional()
      .describe(
        'Set by Kubernetes inside a pod; selects the in-cluster configuration when KUBECONFIG is unset.',
      ),
    SYNC_CONCURRENCY: envInt(8, 'Keys synced at once by one replica.', { min: 1, max: 256 }),
    SYNC_WRITE_RATE: envInt(200, 'ResourceSlice writes per second, shared by all replicas.', {
      min: 1,
    }),
    SYNC_WRITE_BURST: envInt(
      400,
      'Writes allowed at once after a quiet period, shared by all replicas.',
      { min: 1 },
    ),
    SYNC_LOCK_DURATION: envDurationMs(
      '5s',
      "How long a dead replica's job stays locked before another replica takes it over.",
    ),
    SYNC_STALLED_INTERVAL: envDurationMs(
      '2s',
      'How often replicas look for jobs of dead replicas.',
    ),
    RESYNC_INTERVAL: envDurationMs(
      '10m',
      'Every known key is synced again once per interval (spread over it).',
    ),
    JANITOR_INTERVAL: envDurationMs(
      '1m',
      'How often slices of removed or unknown keys are looked for.',
    ),
    ORPHAN_GRACE: envDurationMs(
      '10m',
      'How long slices of keys slicekeeper has no record of survive (drivers re-registering after Redis lost its data).',
    ),
    RELIST_INTERVAL: envDurationMs(
      '1h',
      'Each replica lists every managed slice and Node again once per interval (±10%) and repairs what its watches missed.',
    ),
    DISCOVERY_INTERVAL: envDurationMs(
      '1m',
      'How often the API server is asked which resource.k8s.io versions it serves and its release: an upgrade is followed without a restart.',
    ),
    HEALTH_TAINT_EFFECT: z
      .enum(HEALTH_TAINT_POLICIES)
      .default('NoSchedule')
      .describe(
        'Effect of the taint on a device its driver reports unhealthy (<driver>/unhealthy) or of unknown health (<driver>/health-unknown): None, NoSchedule, NoExecute, or off (health is not published).',
      ),
    HEALTH_TAINT_EFFECTS: envList('', HEALTH_TAINT_EFFECTS_DESCRIPTION)
      .transform((entries, ctx) => {
        const byDriver = new Map<string, HealthTaintPolicy>();
        for (const entry of entries) {
          const [driver = '', effect = ''] = entry.split('=', 2);
          const problem = driverNameProblem(driver);
          if (!entry.includes('=') || problem !== undefined) {
            ctx.addIssue({
              code: 'custom',
              message: `"${entry}": expected <driver>=<effect> with a driver name${problem === undefined ? '' : ` (${problem})`}`,
            });
          } else if (!(HEALTH_TAINT_POLICIES as readonly string[]).includes(effect)) {
            ctx.addIssue({
              code: 'custom',
              message: `"${entry}": effect must be one of ${HEALTH_TAINT_POLICIES.join(', ')}`,
            });
          } else {
            byDriver.set(driver, effect as HealthTaintPolicy);
          }
        }
        return byDriver;
      })
      .describe(HEALTH_TAINT_EFFECTS_DESCRIPTION),
    PROBE_HOST: z
      .string()
      .default('0.0.0.0')
      .describe('Address of the /metrics, /healthz and /readyz server.'),
    PROBE_PORT: envPort(9464, 'Port of the /metrics, /healthz and /readyz server.'),
    MEMORY_REDUCE_INTERVAL: envMemoryReduceInterval(),
    SHUTDOWN_TIMEOUT: envDurationMs(
      '30s',
      'How long in-flight syncs may take to finish on SIGTERM.',
    ),
    LOG_LEVEL: envLogLevel(),
  })
  .superRefine(checkRedisEnv)
  .superRefine((config, ctx) => {
    if (config.KUBECONFIG === undefined && config.KUBERNETES_SERVICE_HOST === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['KUBECONFIG'],
        message: 'required outside a pod (no KUBERNETES_SERVICE_HOST)',
      });
    }
  });

export type SliceSyncerConfig = z.output<typeof sliceSyncerConfigSchema>;

export function loadConfig(env: Environment): SliceSyncerConfig {
  return parseConfig(sliceSyncerConfigSchema, env);
}

/** What `driver`'s unhealthy and unknown devices get. */
export function healthTaintPolicy(config: SliceSyncerConfig, driver: string): HealthTaintPolicy {
  return config.HEALTH_TAINT_EFFECTS.get(driver) ?? config.HEALTH_TAINT_EFFECT;
}

/** Where the cluster's API server is: a kubeconfig file, or the pod's service account. */
export function kubeconfigSource(config: SliceSyncerConfig) {
  return config.KUBECONFIG !== undefined
    ? ({ kind: 'file', path: config.KUBECONFIG } as const)
    : ({ kind: 'in-cluster' } as const);
}
