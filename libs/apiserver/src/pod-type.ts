import { listAt, objAt, opaqueObjectSchema, strAt } from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { AGE_COLUMN, NAME_COLUMN, age, column } from './resource-types';
import type { ResourceType } from './resource-types';
import { nameIsDnsSubdomain, validateObjectMeta, validateObjectMetaUpdate } from './validation';

/**
 * core/v1 Pods, stored so that a ServiceAccount token can be bound to one (TokenRequest's
 * `boundObjectRef` of kind Pod, which projected tokens use) and so that `kubectl describe node`
 * lists a node's Pods. The emulator runs no kubelet and no scheduler: a Pod is an object, never a
 * workload. Of pkg/registry/core/pod's strategy and the default admission chain it keeps what
 * identity needs: the ServiceAccount admission plugin's `spec.serviceAccountName` default
 * (`default`), `status.phase` Pending on create, the metadata rules and a required container
 * list; the spec is kept as sent otherwise (no defaulting, no other validation).
 */

/** `PodFieldLabelConversion` of pkg/apis/core/v1. */
const POD_FIELD_LABELS = [
  'metadata.name',
  'metadata.namespace',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.schedulerName',
  'spec.serviceAccountName',
  'spec.hostNetwork',
  'status.phase',
  'status.podIP',
  'status.podIPs',
  'status.nominatedNodeName',
  'spec.host',
];

/** `PodToSelectableFields` (pkg/registry/core/pod/strategy.go). */
function podFields(obj: JsonObject): Record<string, string> {
  const meta = objAt(obj, 'metadata');
  const spec = objAt(obj, 'spec');
  const status = objAt(obj, 'status');
  return {
    'metadata.name': strAt(meta, 'name') ?? '',
    'metadata.namespace': strAt(meta, 'namespace') ?? '',
    'spec.nodeName': strAt(spec, 'nodeName') ?? '',
    'spec.restartPolicy': strAt(spec, 'restartPolicy') ?? '',
    'spec.schedulerName': strAt(spec, 'schedulerName') ?? '',
    'spec.serviceAccountName': strAt(spec, 'serviceAccountName') ?? '',
    'spec.hostNetwork': spec?.hostNetwork === true ? 'true' : 'false',
    'status.phase': strAt(status, 'phase') ?? '',
    'status.podIP': strAt(status, 'podIP') ?? '',
    'status.nominatedNodeName': strAt(status, 'nominatedNodeName') ?? '',
  };
}

const meta = (obj: JsonObject): JsonObject => objAt(obj, 'metadata') ?? {};

function containers(obj: JsonObject): JsonValue[] {
  return listAt(objAt(obj, 'spec'), 'containers') ?? [];
}

/** The metadata rules, and `spec.containers` required (`validateContainers`). */
function validatePod(obj: JsonObject): FieldError[] {
  const errs = validateObjectMeta(meta(obj), nameIsDnsSubdomain, true);
  if (containers(obj).length === 0)
    errs.push(fieldError.required(FieldPath.root('spec').child('containers'), ''));
  return errs;
}

/** `printPod`'s cells for a Pod no kubelet reports on: no container is ready or restarted. */
function podCells(obj: JsonObject, nowMs: number): JsonValue[] {
  const status = objAt(obj, 'status');
  const spec = objAt(obj, 'spec');
  const total = containers(obj).filter(isJsonObject).length;
  const gates = listAt(spec, 'readinessGates') ?? [];
  return [
    strAt(meta(obj), 'name') ?? '',
    `0/${total}`,
    strAt(status, 'reason') ?? strAt(status, 'phase') ?? '',
    '0',
    age(obj, nowMs),
    strAt(status, 'podIP') ?? '<none>',
    strAt(spec, 'nodeName') ?? '<none>',
    strAt(status, 'nominatedNodeName') ?? '<none>',
    gates.length === 0 ? '<none>' : `0/${gates.length}`,
  ];
}

/** core/v1 Pods. */
export const podType: ResourceType = {
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  resource: 'pods',
  kind: 'Pod',
  listKind: 'PodList',
  schema: opaqueObjectSchema('Pod'),
  namespaced: true,
  indexing: {
    kind: 'Pod',
    apiVersion: 'v1',
    fieldsOf: podFields,
    indexedFields: ['spec.nodeName'],
  },
  fieldLabels: POD_FIELD_LABELS,
  // Old v1 clients send spec.host.
  fieldLabelAliases: { 'spec.host': 'spec.nodeName' },
  fieldLabelError: (label) => `field label not supported: ${label}`,
  hasGeneration: false,
  returnDeletedObject: true,
  resetFields: ['status'],
  applyDefaults() {
    // SetDefaults_Pod is not modelled: the spec is kept as sent.
  },
  prepareForCreate(obj) {
    // podStrategy.PrepareForCreate: the status is the server's, and a new Pod is Pending.
    obj.status = { phase: 'Pending' };
  },
  prepareForUpdate(obj, old) {
    // The main resource does not change the status.
    if (old.status === undefined) Reflect.deleteProperty(obj, 'status');
    else obj.status = old.status;
  },
  admitCreate(obj) {
    // The ServiceAccount admission plugin: a Pod without one runs as `default`.
    const spec = objAt(obj, 'spec');
    if (spec !== undefined && (strAt(spec, 'serviceAccountName') ?? '') === '')
      spec.serviceAccountName = 'default';
  },
  validate: (obj) => validatePod(obj),
  validateUpdate: (obj, old) => [
    ...validatePod(obj),
    ...validateObjectMetaUpdate(meta(obj), meta(old)),
  ],
  cells: podCells,
  columns: [
    NAME_COLUMN,
    column('Ready', 'The aggregate readiness state of this pod for accepting traffic.'),
    column('Status', 'The aggregate status of the containers in this pod.'),
    column(
      'Restarts',
      'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    ),
    AGE_COLUMN,
    column(
      'IP',
      'podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.',
      1,
    ),
    column(
      'Node',
      'NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename',
      1,
    ),
    column(
      'Nominated Node',
      'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.',
      1,
    ),
    column(
      'Readiness Gates',
      'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
      1,
    ),
  ],
};
