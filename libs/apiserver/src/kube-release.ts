import type { DraFeatureGate } from './resource-types';

/**
 * The Kubernetes releases the emulator can pass for, and what changes between them for
 * ResourceSlices: the resource.k8s.io versions served, the storage version, and the defaults of
 * the DRA feature gates.
 *
 * Gate defaults and the release a gate appeared in follow the versioned feature specs of
 * pkg/features/kube_features.go. Served versions assume a cluster set up for DRA: no beta
 * group version is on by default in kube-apiserver (pkg/controlplane/apiserver/options,
 * `betaAPIGroupVersionsDisabledByDefault`, checked by `TestNoBetaVersionsEnabledByDefault`), so
 * a 1.32 or 1.33 cluster serves resource.k8s.io only with
 * `--runtime-config=resource.k8s.io/v1beta1=true,…` and the DynamicResourceAllocation gate, as
 * the DRA documentation sets it up; the emulator serves every version the release has.
 *
 * 1.37 is what kubernetes' master branch had after 1.36 (the release was not out when it was
 * modelled): KEP-5517's device field renamed to `nodeAllocatableResources` with a new shape, the
 * gates as pkg/features/kube_features.go declares them for 1.37.
 */
export type KubeRelease = '1.32' | '1.33' | '1.34' | '1.35' | '1.36' | '1.37';

export const KUBE_RELEASES: readonly KubeRelease[] = [
  '1.32',
  '1.33',
  '1.34',
  '1.35',
  '1.36',
  '1.37',
];

/** What the emulator passed for before releases could be chosen. */
export const DEFAULT_KUBE_RELEASE: KubeRelease = '1.34';

export function isKubeRelease(value: string): value is KubeRelease {
  return (KUBE_RELEASES as readonly string[]).includes(value);
}

export interface ReleaseInfo {
  readonly minor: number;
  /** resource.k8s.io versions served, preferred first. */
  readonly resourceVersions: readonly string[];
  /**
   * The version ResourceSlices are stored in (a version the previous release can read), which
   * discovery's storageVersionHash is computed from.
   */
  readonly storageVersion: string;
}

const RELEASES: Readonly<Record<KubeRelease, ReleaseInfo>> = {
  '1.32': { minor: 32, resourceVersions: ['v1beta1'], storageVersion: 'v1beta1' },
  '1.33': { minor: 33, resourceVersions: ['v1beta2', 'v1beta1'], storageVersion: 'v1beta1' },
  '1.34': { minor: 34, resourceVersions: ['v1', 'v1beta2', 'v1beta1'], storageVersion: 'v1beta2' },
  '1.35': { minor: 35, resourceVersions: ['v1', 'v1beta2', 'v1beta1'], storageVersion: 'v1' },
  '1.36': { minor: 36, resourceVersions: ['v1', 'v1beta2', 'v1beta1'], storageVersion: 'v1' },
  '1.37': { minor: 37, resourceVersions: ['v1', 'v1beta2', 'v1beta1'], storageVersion: 'v1' },
};

export function releaseInfo(release: KubeRelease): ReleaseInfo {
  return RELEASES[release];
}

/**
 * Per gate, the minor release it appeared in and the minor release it became on by default
 * (kube_features.go: DRADeviceTaints, DRAPartitionableDevices 1.33 alpha → 1.36 beta;
 * DRADeviceBindingConditions, DRAConsumableCapacity 1.34 alpha → 1.36 beta;
 * DRAResourceClaimDeviceStatus 1.32 alpha → 1.33 beta; DRAListTypeAttributes and
 * DRANodeAllocatableResources 1.36 alpha, still alpha in 1.37). A gate that went GA stays on
 * here; the locks of GA gates (`LockToDefault`) are not modelled.
 */
const GATE_HISTORY: Readonly<Record<DraFeatureGate, { since: number; onSince: number }>> = {
  DRADeviceTaints: { since: 33, onSince: 36 },
  DRAPartitionableDevices: { since: 33, onSince: 36 },
  DRADeviceBindingConditions: { since: 34, onSince: 36 },
  DRAConsumableCapacity: { since: 34, onSince: 36 },
  DRAResourceClaimDeviceStatus: { since: 32, onSince: 33 },
  DRAListTypeAttributes: { since: 36, onSince: Number.POSITIVE_INFINITY },
  DRANodeAllocatableResources: { since: 36, onSince: Number.POSITIVE_INFINITY },
};

/** Whether kube-apiserver of `release` knows the gate (`--feature-gates` refuses others). */
export function releaseHasGate(release: KubeRelease, gate: DraFeatureGate): boolean {
  return RELEASES[release].minor >= GATE_HISTORY[gate].since;
}

/** The release's gate defaults; a gate the release does not know is off. */
export function releaseGateDefaults(release: KubeRelease): Record<DraFeatureGate, boolean> {
  const minor = RELEASES[release].minor;
  const out = {} as Record<DraFeatureGate, boolean>;
  for (const [gate, history] of Object.entries(GATE_HISTORY) as [
    DraFeatureGate,
    { since: number; onSince: number },
  ][]) {
    out[gate] = minor >= history.onSince;
  }
  return out;
}
