export { startKubeEmulator } from './start-kube-emulator';
export type { RunningKubeEmulator, StartKubeEmulatorOptions } from './start-kube-emulator';
export { KubeEmulator } from './kube-emulator';
export type { EmulatorLogger, KubeEmulatorOptions, ResetOptions } from './kube-emulator';
export type {
  CountersSnapshot,
  FaultSpec,
  LatencySpec,
  RequestCount,
  RequestLogEntry,
  RequestMatcher,
} from './emulator-hooks';
export { DRA_FEATURE_GATES, isDraFeatureGate } from './resource-types';
export type { DraFeatureGate, FeatureGates } from './resource-types';
export { DEFAULT_EVENT_TTL_MS } from './event-types';
export type { JsonObject, JsonValue } from './object-schema';
export { buildKubeconfig } from './kubeconfig';
export type { KubeconfigOptions } from './kubeconfig';
export { canonicalQuantity } from './quantity';
export {
  DEFAULT_KUBE_RELEASE,
  KUBE_RELEASES,
  isKubeRelease,
  releaseGateDefaults,
  releaseHasGate,
} from './kube-release';
export type { KubeRelease } from './kube-release';
