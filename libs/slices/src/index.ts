export { isEmptyPlan, planSync, tryPlanSync, validateSyncInput } from './plan-sync';
export type {
  PlanSyncInput,
  PlanSyncResult,
  PoolSummary,
  SliceDeletion,
  SliceDeletionReason,
  SyncPlan,
} from './plan-sync';
export { validateDriverResources } from './validate-driver-resources';
export type { ValidateDriverResourcesOptions } from './validate-driver-resources';
export { validateResourceSlice } from './validate-resource-slice';
export {
  describeFieldErrors,
  formatFieldError,
  InvalidDriverResourcesError,
  toTerminalError,
} from './field-error';
export type { FieldError, FieldErrorType, ToTerminalErrorOptions } from './field-error';
export {
  CURRENT_LAYOUT_RULES,
  layoutPool,
  layoutRulesFor,
  maxDevicesPerSlice,
  usesAdvancedFeatures,
} from './layout-pool';
export type { LayoutOptions, LayoutRules, SliceContent } from './layout-pool';
export {
  applyLifecycleTaints,
  lifecycleTaintKey,
  TAINT_CONDITIONS,
  taintEffects,
} from './lifecycle-taints';
export type {
  HealthTaintPolicy,
  LifecycleTaints,
  LifecycleTaintsInput,
  TaintEffect,
} from './lifecycle-taints';
export { publishedDevice, publishedDevices, TYPED_SLICE_SPEC_FIELDS } from './published-device';
export {
  counterSetsEqual,
  deviceEqual,
  devicesEqual,
  semanticEqual,
  sliceSpecsEqual,
  TAINT_TIME_TOLERANCE_MS,
  taintTimesEqual,
} from './semantic-equality';
export {
  compareQuantities,
  isQuantity,
  parseQuantity,
  QUANTITY_FORMAT_MESSAGE,
  quantitiesEqual,
  readQuantity,
} from './quantity';
export type { Quantity, QuantityFormat, QuantityReading } from './quantity';
export {
  decodeSliceIndex,
  encodeSliceIndex,
  SLICE_INDEX_MIN_LENGTH,
  sliceGenerateName,
  sliceIndexLength,
} from './slice-name';
export type { SliceGenerateNameOptions } from './slice-name';
export {
  isManagedSlice,
  storedSliceProblem,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MAX_ATTRIBUTE_DOMAIN_LENGTH,
  MAX_ATTRIBUTE_ID_LENGTH,
  MAX_ATTRIBUTE_VALUE_LENGTH,
  MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
  MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
  MAX_COUNTER_SETS_PER_SLICE,
  MAX_COUNTERS_PER_COUNTER_CONSUMPTION,
  MAX_COUNTERS_PER_COUNTER_SET,
  MAX_DEVICES_PER_SLICE,
  MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES,
  MAX_GENERATED_NAME_BASE_LENGTH,
  MAX_POOL_NAME_LENGTH,
  MAX_TAINTS_PER_DEVICE,
  RESOURCE_SLICE_API_VERSION,
  RESOURCE_SLICE_KIND,
} from './resource-slice';
export type {
  ObjectMeta,
  OwnerReference,
  ResourcePool,
  ResourceSlice,
  ResourceSliceSpec,
  StoredResourceSlice,
} from './resource-slice';
export { withoutFields } from './without-fields';
export type { FieldRef } from './without-fields';
export {
  DRA_FEATURE_GATES,
  droppedFields,
  GATED_SLICE_FIELDS,
  summarizeDroppedFields,
} from './dropped-fields';
export type { DraFeatureGateName, DroppedField } from './dropped-fields';
export {
  MAX_ATTRIBUTE_VALUES_PER_DEVICE,
  MAX_BINDING_CONDITIONS,
  MAX_BINDING_FAILURE_CONDITIONS,
  MAX_DEVICE_PASS_THROUGH_BYTES,
  MAX_POOL_PASS_THROUGH_BYTES,
  MAX_REQUEST_POLICY_VALID_VALUES,
} from './resource-slice';
