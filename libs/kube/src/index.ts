export { classifyKubeError, parseRetryAfter } from './classify-kube-error';
export type { ClassifyKubeErrorOptions, KubeErrorCode } from './classify-kube-error';
export { KubeSliceClient } from './kube-slice-client';
export type { KubeSliceClientOptions } from './kube-slice-client';
export type { KubeconfigSource } from './kube-transport';
