import { z } from 'zod';
import {
  DEFAULT_KUBE_RELEASE,
  DRA_FEATURE_GATES,
  KUBE_RELEASES,
  isDraFeatureGate,
  releaseHasGate,
} from '@slicekeeper/apiserver';
import type { DraFeatureGate, FeatureGates, KubeRelease } from '@slicekeeper/apiserver';
import { envDurationMs, envInt, envLogLevel, envPort, parseConfig } from '@slicekeeper/config';
import type { Environment } from '@slicekeeper/config';

/** Go's `strconv.ParseBool`, which kube-apiserver parses gate values with. */
const GO_BOOLS: Readonly<Record<string, boolean>> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/**
 * `Gate=true,Other=false` as kube-apiserver's `--feature-gates` reads it (component-base
 * `featureGate.Set`), with its messages; every bad entry is named, not just the first.
 */
function envFeatureGates(description: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx): FeatureGates => {
      const gates: Partial<Record<DraFeatureGate, boolean>> = {};
      for (const entry of (value ?? '').split(',')) {
        if (entry.trim() === '') continue;
        const [rawName = '', rawValue] = entry.split(/=(.*)/s);
        const name = rawName.trim();
        if (rawValue === undefined) {
          ctx.addIssue({ code: 'custom', message: `missing bool value for ${name}` });
          continue;
        }
        const enabled = GO_BOOLS[rawValue.trim()];
        if (enabled === undefined) {
          ctx.addIssue({
            code: 'custom',
            message: `invalid value of ${name}=${rawValue.trim()}: must be true or false`,
          });
        } else if (!isDraFeatureGate(name)) {
          ctx.addIssue({
            code: 'custom',
            message: `unrecognized feature gate: ${name} (the emulator knows ${DRA_FEATURE_GATES.join(', ')})`,
          });
        } else {
          gates[name] = enabled;
        }
      }
      return gates;
    })
    .describe(description);
}

/** A release kube-apiserver version the emulator can pass for, `1.34` style. */
function envKubeRelease(description: string) {
  return z
    .string()
    .default(DEFAULT_KUBE_RELEASE)
    .refine((value): value is KubeRelease => (KUBE_RELEASES as readonly string[]).includes(value), {
      message: `must be one of ${KUBE_RELEASES.join(', ')}`,
    })
    .transform((value) => value as KubeRelease)
    .describe(description);
}

export const schema = z
  .object({
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
    DATA_FILE: z
      .string()
      .optional()
      .describe(
        'File the stored objects persist in: written on a clean shutdown (SIGTERM), loaded on start, so a restart (also as another KUBE_RELEASE) keeps names, UIDs and resourceVersions. Watch history starts empty (older resourceVersions get 410). Unset: nothing persists.',
      ),
    SERVICE_ACCOUNT_ISSUER: z
      .string()
      .min(1)
      .default('https://kubernetes.default.svc.cluster.local')
      .describe(
        "kube-apiserver's --service-account-issuer: the `iss` of the ServiceAccount tokens it signs (TokenRequest) and the audience a token is for when it names none.",
      ),
    SERVICE_ACCOUNT_SIGNING_KEY_FILE: z
      .string()
      .optional()
      .describe(
        'PEM RSA private key the ServiceAccount tokens are signed with (--service-account-signing-key-file); created when missing, so tokens survive a restart. Unset: a new key per process, and tokens of an earlier process are refused.',
      ),
    HISTORY_SIZE: envInt(
      10_000,
      'Change events kept for resuming watches and exact-version lists.',
      {
        min: 1,
      },
    ),
    GC_DELAY: envDurationMs(
      '0ms',
      'Delay before a Node deletion takes its ResourceSlices with it.',
    ),
    KUBE_RELEASE: envKubeRelease(
      `The Kubernetes release to pass for (${KUBE_RELEASES.join(', ')}): what /version answers, which resource.k8s.io versions are served (1.32: v1beta1; 1.33: v1beta2, v1beta1; 1.34 on: v1, v1beta2, v1beta1), which ResourceSlice fields exist (1.36: list-type attributes and nodeAllocatableResourceMappings; 1.37, kubernetes master after 1.36: that field renamed nodeAllocatableResources) and the feature gates' defaults.`,
    ),
    FEATURE_GATES: envFeatureGates(
      "DRA gates as kube-apiserver's `--feature-gates` takes them, e.g. `DRADeviceTaints=true,DRAConsumableCapacity=false`. A gate left out has KUBE_RELEASE's default (up to 1.35 the alpha ones are off and DRAResourceClaimDeviceStatus on from 1.33; from 1.36 all are on but DRAListTypeAttributes and DRANodeAllocatableResources, alpha in 1.36 and 1.37); a written ResourceSlice loses the fields of a disabled gate unless the stored one uses them. Gate names the release does not have are refused.",
    ),
    LOG_LEVEL: envLogLevel(),
  })
  .superRefine((config, ctx) => {
    // kube-apiserver refuses a gate its release does not have.
    for (const gate of Object.keys(config.FEATURE_GATES) as DraFeatureGate[]) {
      if (!releaseHasGate(config.KUBE_RELEASE, gate)) {
        ctx.addIssue({
          code: 'custom',
          path: ['FEATURE_GATES'],
          message: `unrecognized feature gate: ${gate} (kube-apiserver ${config.KUBE_RELEASE} has no such gate)`,
        });
      }
    }
  });

export type KubeEmulatorConfig = z.output<typeof schema>;

/** Parses the kube emulator's environment, naming every bad variable at once. */
export function loadConfig(env: Environment): KubeEmulatorConfig {
  return parseConfig(schema, env);
}
