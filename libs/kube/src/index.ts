export {
  classifyKubeError,
  kubeErrorCode,
  kubeErrorCodes,
  parseRetryAfter,
} from './classify-kube-error';
export type { ClassifyKubeErrorOptions, KubeErrorCode } from './classify-kube-error';
export { ClusterCache } from './cluster-cache';
export type { ClusterCacheOptions, NodeChange, RelistResult } from './cluster-cache';
export { KubeSliceClient } from './kube-slice-client';
export type { KubeSliceClientOptions } from './kube-slice-client';
export { KubeTransport } from './kube-transport';
export type { KubeconfigSource } from './kube-transport';
export type { WatchEventType } from './reflector';
export { sliceKeyOf } from './slice-store';
