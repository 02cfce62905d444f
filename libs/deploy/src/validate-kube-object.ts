import * as clientNode from '@kubernetes/client-node';
import { Namespace, ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { DaemonSet, Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import type { KubeObject } from './kube-object';

interface Kind {
  /** Validates against the kind's OpenAPI schema (types, required fields, enums); throws. */
  validate(object: unknown): void;
  /** client-node's model of the kind: its attribute map names every field the API knows. */
  model: string;
}

function kind(Model: new (data: never) => { validate(): void }, model: string): Kind {
  return {
    validate: (object) => {
      new Model(object as never).validate();
    },
    model,
  };
}

/** Every kind slicekeeper's manifests may contain, by `apiVersion/kind`. */
const kinds: ReadonlyMap<string, Kind> = new Map([
  ['v1/Namespace', kind(Namespace, 'V1Namespace')],
  ['v1/ConfigMap', kind(ConfigMap, 'V1ConfigMap')],
  ['v1/Secret', kind(Secret, 'V1Secret')],
  ['v1/Service', kind(Service, 'V1Service')],
  ['v1/ServiceAccount', kind(ServiceAccount, 'V1ServiceAccount')],
  ['apps/v1/Deployment', kind(Deployment, 'V1Deployment')],
  ['apps/v1/DaemonSet', kind(DaemonSet, 'V1DaemonSet')],
  ['apps/v1/StatefulSet', kind(StatefulSet, 'V1StatefulSet')],
  [
    'autoscaling/v2/HorizontalPodAutoscaler',
    kind(HorizontalPodAutoscaler, 'V2HorizontalPodAutoscaler'),
  ],
  ['policy/v1/PodDisruptionBudget', kind(PodDisruptionBudget, 'V1PodDisruptionBudget')],
  ['rbac.authorization.k8s.io/v1/ClusterRole', kind(ClusterRole, 'V1ClusterRole')],
  [
    'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
    kind(ClusterRoleBinding, 'V1ClusterRoleBinding'),
  ],
  ['rbac.authorization.k8s.io/v1/Role', kind(Role, 'V1Role')],
  ['rbac.authorization.k8s.io/v1/RoleBinding', kind(RoleBinding, 'V1RoleBinding')],
  ['networking.k8s.io/v1/NetworkPolicy', kind(NetworkPolicy, 'V1NetworkPolicy')],
]);

interface AttributeType {
  baseName: string;
  type: string;
}

function attributesOf(model: string): readonly AttributeType[] | undefined {
  const candidate = (clientNode as Record<string, unknown>)[model];
  if (typeof candidate !== 'function') return undefined;
  const getter = (candidate as { getAttributeTypeMap?: unknown }).getAttributeTypeMap;
  if (typeof getter !== 'function') return undefined;
  return (getter as () => AttributeType[]).call(candidate);
}

/**
 * Paths of fields that the API does not know (a typo such as `readinesProbe` that the OpenAPI
 * schema lets through, and the API server drops or rejects), walking client-node's models.
 */
export function unknownFields(value: unknown, type: string, path = ''): string[] {
  if (value === null || value === undefined) return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array?.[1] !== undefined && Array.isArray(value)) {
    const element = array[1];
    return value.flatMap((item, index) => unknownFields(item, element, `${path}[${index}]`));
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map?.[1] !== undefined && typeof value === 'object') {
    const entry = map[1];
    return Object.entries(value).flatMap(([key, item]) =>
      unknownFields(item, entry, `${path}.${key}`),
    );
  }
  const attributes = attributesOf(type);
  if (attributes === undefined || typeof value !== 'object') return [];
  const byName = new Map(attributes.map((attribute) => [attribute.baseName, attribute.type]));
  return Object.entries(value).flatMap(([key, item]) => {
    const fieldType = byName.get(key);
    const fieldPath = path === '' ? key : `${path}.${key}`;
    return fieldType === undefined ? [fieldPath] : unknownFields(item, fieldType, fieldPath);
  });
}

/**
 * kustomize wraps long base64 Secret data over several lines; the API server (Go's base64
 * decoder) skips the line breaks, the schema's `byte` format does not.
 */
function withUnwrappedSecretData(object: KubeObject): KubeObject {
  const data = object['data'];
  if (object.kind !== 'Secret' || typeof data !== 'object' || data === null) return object;
  return {
    ...object,
    data: Object.fromEntries(
      Object.entries(data).map(([key, value]) => [
        key,
        typeof value === 'string' ? value.replace(/\s+/g, '') : value,
      ]),
    ),
  };
}

/**
 * Problems of one object against the Kubernetes API schemas: an unsupported kind, schema
 * violations, and unknown fields. Empty when the object is valid.
 */
export function validateKubeObject(object: KubeObject): string[] {
  const known = kinds.get(`${object.apiVersion}/${object.kind}`);
  if (known === undefined) return [`unsupported kind ${object.apiVersion} ${object.kind}`];
  const problems: string[] = [];
  try {
    known.validate(withUnwrappedSecretData(object));
  } catch (error) {
    problems.push(error instanceof Error ? error.message : String(error));
  }
  for (const field of unknownFields(object, known.model)) problems.push(`unknown field ${field}`);
  return problems;
}
