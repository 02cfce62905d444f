import { objAt, opaqueObjectSchema, strAt } from './api-schemas';
import type { JsonObject } from './object-schema';
import { AGE_COLUMN, NAME_COLUMN, column } from './resource-types';
import type { ResourceType } from './resource-types';

/**
 * Resources the emulator serves only so that clients which read them along the way get a real
 * server's answers for a cluster that has none: `kubectl describe node` lists the node's Pods
 * (an empty PodList) and gets its Lease in kube-node-lease (404 NotFound). Nothing stores them:
 * get answers NotFound, list and watch are empty, writes are refused with 405.
 */

function metadataFields(obj: JsonObject): Record<string, string> {
  const meta = objAt(obj, 'metadata');
  return {
    'metadata.name': strAt(meta, 'name') ?? '',
    'metadata.namespace': strAt(meta, 'namespace') ?? '',
  };
}

const NOTHING_STORED = {
  namespaced: true,
  readOnly: true,
  hasGeneration: false,
  returnDeletedObject: false,
  resetFields: [],
  applyDefaults() {
    // Never called: nothing is written.
  },
  prepareForCreate() {
    // Never called: nothing is written.
  },
  prepareForUpdate() {
    // Never called: nothing is written.
  },
  admitCreate() {
    // Never called: nothing is written.
  },
  validate: () => [],
  validateUpdate: () => [],
  cells: () => [],
} as const;

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

/** core/v1 Pods: always none. */
export const podType: ResourceType = {
  ...NOTHING_STORED,
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  resource: 'pods',
  kind: 'Pod',
  listKind: 'PodList',
  schema: opaqueObjectSchema('Pod'),
  indexing: {
    kind: 'Pod',
    apiVersion: 'v1',
    fieldsOf: metadataFields,
    indexedFields: [],
  },
  fieldLabels: POD_FIELD_LABELS,
  // Old v1 clients send spec.host.
  fieldLabelAliases: { 'spec.host': 'spec.nodeName' },
  fieldLabelError: (label) => `field label not supported: ${label}`,
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

/** coordination.k8s.io/v1 Leases: always none (no kubelet heartbeats here). */
export const leaseType: ResourceType = {
  ...NOTHING_STORED,
  group: 'coordination.k8s.io',
  version: 'v1',
  apiVersion: 'coordination.k8s.io/v1',
  resource: 'leases',
  kind: 'Lease',
  listKind: 'LeaseList',
  schema: opaqueObjectSchema('Lease'),
  indexing: {
    kind: 'Lease',
    apiVersion: 'coordination.k8s.io/v1',
    fieldsOf: metadataFields,
    indexedFields: [],
  },
  fieldLabels: ['metadata.name', 'metadata.namespace'],
  // No conversion function is registered for Leases: the scheme's default answers.
  fieldLabelError: (label) =>
    `"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
  columns: [
    NAME_COLUMN,
    column(
      'Holder',
      'holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.',
    ),
    AGE_COLUMN,
  ],
};
