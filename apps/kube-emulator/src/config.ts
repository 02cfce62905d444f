import { z } from 'zod';
import { envDurationMs, envInt, envLogLevel, envPort, parseConfig } from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';

export const schema = z.object({
  PORT: envPort(
    8001,
    'Port of the plain-HTTP API (8001, as `kubectl proxy`, which also serves the API without TLS); 0 picks a free one.',
  ),
  HOST: z
    .string()
    .default('127.0.0.1')
    .describe(
      'Interface to bind. The emulator has no TLS and no real security: keep it on loopback.',
    ),
  TOKEN_FILE: z
    .string()
    .optional()
    .describe(
      'kube-apiserver static token file (token,user,uid,"groups"); when unset, every request is allowed.',
    ),
  KUBECONFIG_OUT: z
    .string()
    .default('.kube-emulator/kubeconfig')
    .describe('Where to write a kubeconfig for kubectl and @kubernetes/client-node.'),
  HISTORY_SIZE: envInt(10_000, 'Change events kept for resuming watches and exact-version lists.', {
    min: 1,
  }),
  GC_DELAY: envDurationMs('0ms', 'Delay before a Node deletion takes its ResourceSlices with it.'),
  LOG_LEVEL: envLogLevel(),
});

export type KubeEmulatorConfig = z.output<typeof schema>;

/** Parses the kube emulator's environment, naming every bad variable at once. */
export function loadConfig(env: Environment): KubeEmulatorConfig {
  return parseConfig(schema, env);
}
