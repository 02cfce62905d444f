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

/** Reads the local stack's configuration; throws naming every bad variable. */
export function loadConfig(env: Environment): LocalStackConfig {
  return parseConfig(localStackConfigSchema, env);
}
