export {
  classifyKubeError,
  kubeErrorCode,
  kubeErrorCodes,
  kubeFieldCauses,
  parseRetryAfter,
} from './classify-kube-error';
export type { ClassifyKubeErrorOptions, KubeErrorCode } from './classify-kube-error';
export { ClusterCache } from './cluster-cache';
export type { ClusterCacheOptions, NodeChange, RelistResult } from './cluster-cache';
export { KubeSliceClient } from './kube-slice-client';
export type { KubeSliceClientOptions } from './kube-slice-client';
export { EventRecorder, microTime } from './event-recorder';
export type { EventOccurrence, EventRecordOutcome, EventRecorderOptions } from './event-recorder';
export { KubeEventClient } from './kube-event-client';
export type {
  EventRegarding,
  EventSeriesWrite,
  EventWrite,
  KubeEventClientOptions,
} from './kube-event-client';
export { KubeNodeStatusClient } from './kube-node-status-client';
export type { KubeNodeStatusClientOptions, PatchedNode } from './kube-node-status-client';
export { PUBLISHED_CONDITION_TYPE, conditionStatuses } from './node-condition-json';
export type { ConditionStatus, NodeConditionWrite, ObservedCondition } from './node-condition-json';
export { KubeApiError, KubeTransport } from './kube-transport';
export type { KubeconfigSource } from './kubeconfig';
export type { WatchEventType } from './reflector';
export { sliceKeyOf } from './slice-store';
export {
  awaitResourceApi,
  describeResourceApi,
  discoverResourceApi,
  RESOURCE_GROUP,
  resourceApiVersions,
  resourceGroupVersion,
  sliceFromWire,
  sliceToWire,
  slicesCollection,
} from './resource-api';
export type {
  DiscoverOptions,
  ResourceApi,
  ResourceApiVersion,
  ServerRelease,
} from './resource-api';
export { KubeReviewClient } from './kube-review-client';
export type {
  AccessReviewResult,
  KubeReviewClientOptions,
  ResourceAttributes,
  ReviewedUser,
  TokenReviewResult,
} from './kube-review-client';
