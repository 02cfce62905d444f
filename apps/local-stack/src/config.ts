import { z } from 'zod';
import {
  envDurationMs,
  envInt,
  envLogLevel,
  envPort,
  envRedisPrefix,
  envUrl,
  parseConfig,
} from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';
import { isDns1123Label } from '@slicekeeper/contracts';
import { listDriverProfiles } from '@slicekeeper/local-stack';

const PROFILES = listDriverProfiles();

/**
 * The gates that make every profile publish fully on a 1.34 emulator: all four are alpha there,
 * so off unless turned on. Releases before 1.34 lack some of them, and the emulator refuses a
 * gate its release does not have, so they are the default from 1.34 on only.
 */
export const PROFILE_FEATURE_GATES =
  'DRADeviceTaints=true,DRAPartitionableDevices=true,DRADeviceBindingConditions=true,DRAConsumableCapacity=true';

/** The first release that has all of {@link PROFILE_FEATURE_GATES}, as [major, minor]. */
const PROFILE_GATES_SINCE = [1, 34] as const;

export const localStackConfigSchema = z.object({
  REDIS_URL: envUrl(
    ['redis:', 'rediss:'],
    'An existing Redis to use. Unset: a private redis-server on a free loopback port that keeps nothing on disk.',
  ),
  REDIS_PREFIX: envRedisPrefix('Prefix of every Redis key the services use.'),
  KUBECONFIG: z
    .string()
    .optional()
    .describe(
      'A real cluster to publish ResourceSlices to; its NODES must exist. Unset: the kube emulator, with NODES created in it.',
    ),
  STATE_DIR: z
    .string()
    .min(1)
    .default('.slicekeeper')
    .describe('Directory of the kubeconfig, the token file and the plugin sockets.'),
  NODES: z
    .string()
    .default('node-a,node-b')
    .transform((value) =>
      value
        .split(',')
        .map((node) => node.trim())
        .filter((node) => node !== ''),
    )
    .refine((nodes) => nodes.length > 0 && nodes.every(isDns1123Label), {
      message: 'must be a comma-separated list of node names (lowercase RFC 1123 labels)',
    })
    .describe('Comma-separated nodes to run one example driver on each.'),
  DRIVER_NAME: z
    .string()
    .min(1)
    .default('gpu.example.com')
    .describe("The example drivers' DRA driver name."),
  PROFILE: z
    .string()
    .default('gpu')
    .refine((profile) => PROFILES.includes(profile), {
      message: `must be one of ${PROFILES.join(', ')}`,
    })
    .describe(
      `The example drivers' device profile (their PROFILE; apps/example-driver/inventory/profiles): ${PROFILES.join(', ')}. fabric runs one driver for the cluster-scoped key instead of one per node. The startup summary says which feature gates the profile needs and whether the emulator has them on.`,
    ),
  KUBE_RELEASE: z
    .string()
    .optional()
    .describe(
      "The kube emulator's KUBE_RELEASE (the Kubernetes release it passes for); unset: its default.",
    ),
  FEATURE_GATES: z
    .string()
    .optional()
    .describe(
      `The kube emulator's FEATURE_GATES (\`Gate=true,Other=false\`). Unset: ${PROFILE_FEATURE_GATES}, the alpha DRA gates the profiles' fields need, when KUBE_RELEASE is unset or 1.34 and later; the release's defaults before 1.34.`,
    ),
  SYNCER_REPLICAS: envInt(2, 'slice-syncer replicas to run.', { min: 1, max: 16 }),
  API_PORT: envPort(0, 'Port of the registration API; 0 picks a free one.'),
  EMULATOR_PORT: envPort(0, 'Port of the kube emulator; 0 picks a free one.'),
  START_TIMEOUT: envDurationMs(
    '60s',
    "How long the services may take to start and publish the drivers' slices.",
  ),
  STOP_TIMEOUT: envDurationMs(
    '10s',
    'How long each process may take to stop on Ctrl-C before it is killed.',
  ),
  NO_COLOR: z.string().optional().describe('Set to anything: no colours in the output.'),
  LOG_LEVEL: envLogLevel(),
});

export type LocalStackConfig = z.output<typeof localStackConfigSchema>;

/**
 * Reads the local stack's configuration; throws naming every bad variable. FEATURE_GATES, when
 * unset, becomes what the release can take (see {@link PROFILE_FEATURE_GATES}).
 */
export function loadConfig(env: Environment): LocalStackConfig {
  const config = parseConfig(localStackConfigSchema, env);
  if (config.FEATURE_GATES !== undefined || !hasProfileGates(config.KUBE_RELEASE)) return config;
  return { ...config, FEATURE_GATES: PROFILE_FEATURE_GATES };
}

/** Whether the release (unset: the emulator's default, 1.34 or later) has the profiles' gates. */
function hasProfileGates(release: string | undefined): boolean {
  if (release === undefined) return true;
  const [major = 0, minor = 0] = release.split('.').map(Number);
  const [sinceMajor, sinceMinor] = PROFILE_GATES_SINCE;
  return major > sinceMajor || (major === sinceMajor && minor >= sinceMinor);
}
