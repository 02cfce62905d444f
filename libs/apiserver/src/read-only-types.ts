import { objAt, opaqueObjectSchema, strAt } from './api-schemas';
import type { JsonObject } from './object-schema';
import { NAME_COLUMN, AGE_COLUMN, column } from './resource-types';
import type { ResourceType } from './resource-types';

/**
 * Resources the emulator serves only so that clients which read them along the way get a real
 * server's answers for a cluster that has none: `kubectl describe node` gets its Lease in
 * kube-node-lease (404 NotFound). Nothing stores them: get answers NotFound, list and watch are
 * empty, writes are refused with 405.
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
