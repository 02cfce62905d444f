import { z } from 'zod';

/**
 * The domain model of a driver's inventory on one node: what the plugin-watcher stores as a
 * snapshot and what the slice planner consumes. Its shapes mirror resource.k8s.io/v1 (a device
 * here is a ResourceSlice device), so that planning is layout, not translation. The schemas check
 * structure only; the Kubernetes limits (name rules, counts, lengths, semver, quantities) are
 * checked by the slice validator in libs/slices, which reports every problem with its field path.
 */

/**
 * Exactly one of the values must be set (checked by the validator). The list forms (`ints`,
 * `bools`, `strings`, `versions`) are resource.k8s.io/v1's list-type attributes (1.36, gate
 * DRAListTypeAttributes).
 */
export const deviceAttributeSchema = z
  .object({
    int: z.number().int().optional(),
    bool: z.boolean().optional(),
    string: z.string().optional(),
    version: z.string().optional(),
    ints: z.array(z.number().int()).optional(),
    bools: z.array(z.boolean()).optional(),
    strings: z.array(z.string()).optional(),
    versions: z.array(z.string()).optional(),
  })
  .strict();
export type DeviceAttribute = z.infer<typeof deviceAttributeSchema>;

/** A Kubernetes quantity such as `80Gi`. */
export const quantityValueSchema = z.object({ value: z.string() }).strict();
export type Counter = z.infer<typeof quantityValueSchema>;

/**
 * resource.k8s.io/v1 CapacityRequestPolicyRange: the amounts a request may consume, `min` and
 * up in `step`s to `max` (quantities).
 */
export const capacityRequestPolicyRangeSchema = z
  .object({
    min: z.string(),
    max: z.string().optional(),
    step: z.string().optional(),
  })
  .strict();
export type CapacityRequestPolicyRange = z.infer<typeof capacityRequestPolicyRangeSchema>;

/**
 * resource.k8s.io/v1 CapacityRequestPolicy (consumable capacity, 1.34, gate
 * DRAConsumableCapacity): what one claim may consume of a device shared by several. Set at most
 * one of `validValues` and `validRange`.
 */
export const capacityRequestPolicySchema = z
  .object({
    default: z.string().optional(),
    validValues: z.array(z.string()).optional(),
    validRange: capacityRequestPolicyRangeSchema.optional(),
  })
  .strict();
export type CapacityRequestPolicy = z.infer<typeof capacityRequestPolicySchema>;

/** resource.k8s.io/v1 DeviceCapacity: a quantity, and how a request may consume it. */
export const deviceCapacitySchema = z
  .object({
    value: z.string(),
    requestPolicy: capacityRequestPolicySchema.optional(),
  })
  .strict();
export type DeviceCapacity = z.infer<typeof deviceCapacitySchema>;

/**
 * The escape hatch for fields of a newer Kubernetes release than slicekeeper knows: a JSON
 * object whose members are merged into the published object (a device, or a pool's slice
 * specs). It never overrides a typed field (the validator refuses a member that names one) and
 * is checked by the API server alone; the README states its contract.
 */
export const passThroughFieldsSchema = z.record(z.string(), z.unknown());
export type PassThroughFields = z.infer<typeof passThroughFieldsSchema>;

export const deviceTaintSchema = z
  .object({
    key: z.string(),
    value: z.string().optional(),
    effect: z.string(),
    /** RFC 3339 time the taint was added. */
    timeAdded: z.string().optional(),
  })
  .strict();
export type DeviceTaint = z.infer<typeof deviceTaintSchema>;

export const deviceCounterConsumptionSchema = z
  .object({
    counterSet: z.string(),
    counters: z.record(z.string(), quantityValueSchema),
  })
  .strict();
export type DeviceCounterConsumption = z.infer<typeof deviceCounterConsumptionSchema>;

export const nodeSelectorRequirementSchema = z
  .object({
    key: z.string(),
    operator: z.string(),
    values: z.array(z.string()).optional(),
  })
  .strict();

/** core/v1 NodeSelector, in its Kubernetes JSON shape. */
export const nodeSelectorSchema = z
  .object({
    nodeSelectorTerms: z.array(
      z
        .object({
          matchExpressions: z.array(nodeSelectorRequirementSchema).optional(),
          matchFields: z.array(nodeSelectorRequirementSchema).optional(),
        })
        .strict(),
    ),
  })
  .strict();
export type NodeSelector = z.infer<typeof nodeSelectorSchema>;

/** What a driver says of a device's health (KEP-4680's healthy / unhealthy / unknown). */
export const deviceHealthStatuses = ['healthy', 'unhealthy', 'unknown'] as const;
export type DeviceHealthStatus = (typeof deviceHealthStatuses)[number];

/**
 * The longest health timeout a driver may set, in seconds (a day): a driver that cannot report
 * more often than that does not report health.
 */
export const MAX_HEALTH_TIMEOUT_SECONDS = 86_400;

/** The longest health message a driver may send (KEP-4680's limit), in characters. */
export const MAX_HEALTH_MESSAGE_LENGTH = 1024;

/**
 * A device's health as its driver last reported it. Not published as such: the syncer turns
 * `unhealthy` and `unknown` into device taints (`<driver>/unhealthy`, `<driver>/health-unknown`).
 */
export const deviceHealthSchema = z
  .object({
    status: z.enum(deviceHealthStatuses),
    /** Why, in the driver's words; at most {@link MAX_HEALTH_MESSAGE_LENGTH} characters. */
    message: z.string().max(MAX_HEALTH_MESSAGE_LENGTH).optional(),
    /**
     * Without a new message from the driver for this long, the device's health becomes
     * `unknown` (the watcher rewrites the snapshot). Unset: the health holds until the next one.
     */
    timeoutSeconds: z.number().int().positive().max(MAX_HEALTH_TIMEOUT_SECONDS).optional(),
  })
  .strict();
export type DeviceHealth = z.infer<typeof deviceHealthSchema>;

export const deviceSchema = z
  .object({
    name: z.string(),
    /** The device's health, when its driver reports health; unset means it does not. */
    health: deviceHealthSchema.optional(),
    attributes: z.record(z.string(), deviceAttributeSchema).optional(),
    capacity: z.record(z.string(), deviceCapacitySchema).optional(),
    taints: z.array(deviceTaintSchema).optional(),
    consumesCounters: z.array(deviceCounterConsumptionSchema).optional(),
    /**
     * Per-device node selection (1.33, gate DRAPartitionableDevices): exactly one of these is
     * set on every device of a pool whose scope is `per-device`, and none elsewhere.
     */
    nodeName: z.string().optional(),
    nodeSelector: nodeSelectorSchema.optional(),
    allNodes: z.boolean().optional(),
    /** Consumable capacity (1.34, gate DRAConsumableCapacity): several claims may share it. */
    allowMultipleAllocations: z.boolean().optional(),
    /** Binding conditions (1.34, gate DRADeviceBindingConditions). */
    bindsToNode: z.boolean().optional(),
    bindingConditions: z.array(z.string()).optional(),
    bindingFailureConditions: z.array(z.string()).optional(),
    /** Fields slicekeeper has no typed field for, merged into the published device. */
    passThrough: passThroughFieldsSchema.optional(),
  })
  .strict();
export type Device = z.infer<typeof deviceSchema>;

export const counterSetSchema = z
  .object({
    name: z.string(),
    counters: z.record(z.string(), quantityValueSchema),
  })
  .strict();
export type CounterSet = z.infer<typeof counterSetSchema>;

/** Which nodes can reach a pool's devices. */
export const poolScopeSchema = z.discriminatedUnion('kind', [
  /** Only the plugin's node: spec.nodeName, with the Node as owner. */
  z.object({ kind: z.literal('node') }).strict(),
  /** Every node: spec.allNodes. */
  z.object({ kind: z.literal('all-nodes') }).strict(),
  /** The nodes the selector matches: spec.nodeSelector. */
  z.object({ kind: z.literal('node-selector'), nodeSelector: nodeSelectorSchema }).strict(),
  /**
   * Each device names its own nodes (spec.perDeviceNodeSelection, gate
   * DRAPartitionableDevices): a cluster-level pool, never owned by a Node.
   */
  z.object({ kind: z.literal('per-device') }).strict(),
]);
export type PoolScope = z.infer<typeof poolScopeSchema>;

/** One slice of an explicitly laid-out pool. */
export const explicitSliceSchema = z
  .object({
    devices: z.array(deviceSchema),
    sharedCounters: z.array(counterSetSchema).optional(),
  })
  .strict();
export type ExplicitSlice = z.infer<typeof explicitSliceSchema>;

export const poolSchema = z
  .object({
    name: z.string(),
    /** Driver-chosen generation; a higher one than published wins. */
    generation: z.number().int().optional(),
    scope: poolScopeSchema,
    /** Devices for slicekeeper to lay out in slices. */
    devices: z.array(deviceSchema),
    /** An explicit layout, published as given (set devices or slices, not both). */
    slices: z.array(explicitSliceSchema).optional(),
    sharedCounters: z.array(counterSetSchema).optional(),
    /** Fields slicekeeper has no typed field for, merged into every slice spec of the pool. */
    passThrough: passThroughFieldsSchema.optional(),
  })
  .strict();
export type Pool = z.infer<typeof poolSchema>;

/** A driver's complete inventory on one node; every new one replaces the previous. */
export const driverInventorySchema = z.object({ pools: z.array(poolSchema) }).strict();
export type DriverInventory = z.infer<typeof driverInventorySchema>;
