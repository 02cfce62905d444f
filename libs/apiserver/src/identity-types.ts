import {
  jsonEqual,
  listAt,
  objAt,
  objectMetaSchema,
  objectReferenceSchema,
  strAt,
} from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { BOOL, STRING, atomicList, isJsonObject, struct } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { AGE_COLUMN, NAME_COLUMN, age, column } from './resource-types';
import type { ResourceType, TableColumn } from './resource-types';
import {
  nameIsDnsSubdomain,
  pathSegmentProblems,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './validation';

/**
 * The identity kinds kube-apiserver stores for authentication and RBAC: core/v1 ServiceAccounts
 * (pkg/registry/core/serviceaccount) and rbac.authorization.k8s.io/v1 Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings (pkg/registry/rbac/*). Their strategies have no
 * generation, no status and answer a delete with the deleted object; validation is
 * pkg/apis/core/validation `ValidateServiceAccount` and pkg/apis/rbac/validation.
 */

/** The API group of RBAC, which `roleRef.apiGroup` and User and Group subjects name. */
export const RBAC_GROUP = 'rbac.authorization.k8s.io';

const STRINGS = atomicList(STRING);

const serviceAccountSchema = struct('ServiceAccount', [
  ['metadata', objectMetaSchema, 'omitempty'],
  ['secrets', atomicList(objectReferenceSchema), 'omitempty'],
  [
    'imagePullSecrets',
    atomicList(struct('LocalObjectReference', [['name', STRING, 'omitempty']], true)),
    'omitempty',
  ],
  ['automountServiceAccountToken', BOOL, 'omitempty,ptr'],
]);

const policyRuleSchema = struct('PolicyRule', [
  ['verbs', STRINGS],
  ['apiGroups', STRINGS, 'omitempty'],
  ['resources', STRINGS, 'omitempty'],
  ['resourceNames', STRINGS, 'omitempty'],
  ['nonResourceURLs', STRINGS, 'omitempty'],
]);

const labelSelectorSchema = struct('LabelSelector', [
  ['matchLabels', { t: 'raw' }, 'omitempty'],
  ['matchExpressions', { t: 'raw' }, 'omitempty'],
]);

const roleSchema = struct('Role', [
  ['metadata', objectMetaSchema, 'omitempty'],
  ['rules', atomicList(policyRuleSchema)],
]);

const clusterRoleSchema = struct('ClusterRole', [
  ['metadata', objectMetaSchema, 'omitempty'],
  ['rules', atomicList(policyRuleSchema)],
  [
    'aggregationRule',
    struct('AggregationRule', [
      ['clusterRoleSelectors', atomicList(labelSelectorSchema), 'omitempty'],
    ]),
    'omitempty,ptr',
  ],
]);

const subjectSchema = struct(
  'Subject',
  [
    ['kind', STRING],
    ['apiGroup', STRING, 'omitempty'],
    ['name', STRING],
    ['namespace', STRING, 'omitempty'],
  ],
  true,
);

const roleRefSchema = struct(
  'RoleRef',
  [
    ['apiGroup', STRING],
    ['kind', STRING],
    ['name', STRING],
  ],
  true,
);

const roleBindingSchema = (goName: string) =>
  struct(goName, [
    ['metadata', objectMetaSchema, 'omitempty'],
    ['subjects', atomicList(subjectSchema), 'omitempty'],
    ['roleRef', roleRefSchema],
  ]);

function metadataFields(obj: JsonObject): Record<string, string> {
  const meta = objAt(obj, 'metadata');
  return {
    'metadata.name': strAt(meta, 'name') ?? '',
    'metadata.namespace': strAt(meta, 'namespace') ?? '',
  };
}

/** What the five strategies share: no generation, no status, no defaulting beyond the API's. */
const PLAIN_STRATEGY = {
  hasGeneration: false,
  returnDeletedObject: true,
  resetFields: [],
  fieldLabels: ['metadata.name', 'metadata.namespace'],
  fieldLabelError: (label: string) =>
    `"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
  prepareForCreate() {
    // The strategies' PrepareForCreate only clears status, which these kinds do not have.
  },
  prepareForUpdate() {
    // Nor does their PrepareForUpdate change anything.
  },
  admitCreate() {
    // No mutating admission plugin of a default kube-apiserver changes these kinds.
  },
} as const;

function indexing(kind: string, apiVersion: string): ResourceType['indexing'] {
  return { kind, apiVersion, fieldsOf: metadataFields, indexedFields: [] };
}

const meta = (obj: JsonObject): JsonObject => objAt(obj, 'metadata') ?? {};

function nameOf(obj: JsonObject): string {
  return strAt(meta(obj), 'name') ?? '';
}

function createdAt(obj: JsonObject): string {
  return strAt(meta(obj), 'creationTimestamp') ?? '';
}

/** core/v1 ServiceAccounts (`ValidateServiceAccount`: a DNS-subdomain name, namespaced). */
export const serviceAccountType: ResourceType = {
  ...PLAIN_STRATEGY,
  group: '',
  version: 'v1',
  apiVersion: 'v1',
  resource: 'serviceaccounts',
  kind: 'ServiceAccount',
  listKind: 'ServiceAccountList',
  schema: serviceAccountSchema,
  namespaced: true,
  indexing: indexing('ServiceAccount', 'v1'),
  applyDefaults() {
    // ServiceAccounts have no defaulting.
  },
  validate: (obj) => validateObjectMeta(meta(obj), nameIsDnsSubdomain, true),
  validateUpdate: (obj, old) => validateObjectMetaUpdate(meta(obj), meta(old)),
  columns: [
    NAME_COLUMN,
    column(
      'Secrets',
      'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.',
    ),
    AGE_COLUMN,
  ],
  cells: (obj, nowMs) => [nameOf(obj), (listAt(obj, 'secrets') ?? []).length, age(obj, nowMs)],
};

// ---------------------------------------------------------------------------------------------
// RBAC validation (pkg/apis/rbac/validation/validation.go)

/** `ValidateRBACName`: RBAC names are path segments, nothing more. */
function rbacName(name: string, prefix: boolean): readonly string[] {
  return pathSegmentProblems(name, prefix);
}

function strings(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** `ValidatePolicyRule`. */
function validatePolicyRule(rule: JsonObject, namespaced: boolean, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (strings(rule.verbs).length === 0)
    errs.push(fieldError.required(path.child('verbs'), 'verbs must contain at least one value'));
  if (strings(rule.nonResourceURLs).length > 0) {
    if (namespaced)
      errs.push(
        fieldError.invalid(
          path.child('nonResourceURLs'),
          strings(rule.nonResourceURLs),
          'namespaced rules cannot apply to non-resource URLs',
        ),
      );
    if (strings(rule.apiGroups).length > 0 || strings(rule.resources).length > 0)
      errs.push(
        fieldError.invalid(
          path.child('nonResourceURLs'),
          strings(rule.nonResourceURLs),
          'rules cannot apply to both regular resources and non-resource URLs',
        ),
      );
    return errs;
  }
  if (strings(rule.apiGroups).length === 0)
    errs.push(
      fieldError.required(
        path.child('apiGroups'),
        'resource rules must supply at least one api group',
      ),
    );
  if (strings(rule.resources).length === 0)
    errs.push(
      fieldError.required(
        path.child('resources'),
        'resource rules must supply at least one resource',
      ),
    );
  return errs;
}

function validateRules(obj: JsonObject, namespaced: boolean): FieldError[] {
  const rules = listAt(obj, 'rules') ?? [];
  return rules.flatMap((rule, i) =>
    isJsonObject(rule)
      ? validatePolicyRule(rule, namespaced, FieldPath.root('rules').index(i))
      : [],
  );
}

/** `ValidateRoleBindingSubject`. */
function validateSubject(subject: JsonObject, namespaced: boolean, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = strAt(subject, 'name') ?? '';
  const kind = strAt(subject, 'kind') ?? '';
  const apiGroup = strAt(subject, 'apiGroup') ?? '';
  if (name === '') errs.push(fieldError.required(path.child('name'), ''));
  switch (kind) {
    case 'ServiceAccount':
      if (name !== '')
        for (const msg of nameIsDnsSubdomain(name, false))
          errs.push(fieldError.invalid(path.child('name'), name, msg));
      if (apiGroup !== '')
        errs.push(fieldError.notSupported(path.child('apiGroup'), apiGroup, ['']));
      if (!namespaced && (strAt(subject, 'namespace') ?? '') === '')
        errs.push(fieldError.required(path.child('namespace'), ''));
      break;
    case 'User':
    case 'Group':
      if (apiGroup !== RBAC_GROUP)
        errs.push(fieldError.notSupported(path.child('apiGroup'), apiGroup, [RBAC_GROUP]));
      break;
    default:
      errs.push(
        fieldError.notSupported(path.child('kind'), kind, ['ServiceAccount', 'User', 'Group']),
      );
  }
  return errs;
}

/** `ValidateRoleBinding` / `ValidateClusterRoleBinding`. */
function validateBinding(obj: JsonObject, namespaced: boolean): FieldError[] {
  const errs = validateObjectMeta(meta(obj), rbacName, namespaced);
  const roleRef = objAt(obj, 'roleRef') ?? {};
  const refPath = FieldPath.root('roleRef');
  const apiGroup = strAt(roleRef, 'apiGroup') ?? '';
  if (apiGroup !== RBAC_GROUP)
    errs.push(fieldError.notSupported(refPath.child('apiGroup'), apiGroup, [RBAC_GROUP]));
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
  const kind = strAt(roleRef, 'kind') ?? '';
  if (!kinds.includes(kind)) errs.push(fieldError.notSupported(refPath.child('kind'), kind, kinds));
  const name = strAt(roleRef, 'name') ?? '';
  if (name === '') errs.push(fieldError.required(refPath.child('name'), ''));
  else
    for (const msg of rbacName(name, false))
      errs.push(fieldError.invalid(refPath.child('name'), name, msg));
  (listAt(obj, 'subjects') ?? []).forEach((subject, i) => {
    if (isJsonObject(subject))
      errs.push(...validateSubject(subject, namespaced, FieldPath.root('subjects').index(i)));
  });
  return errs;
}

function validateBindingUpdate(
  obj: JsonObject,
  old: JsonObject,
  namespaced: boolean,
): FieldError[] {
  const errs = validateBinding(obj, namespaced);
  errs.push(...validateObjectMetaUpdate(meta(obj), meta(old)));
  if (!jsonEqual(obj.roleRef, old.roleRef)) {
    // field.Invalid prints the internal RoleRef: json.Marshal without json tags, Go's names.
    const ref = objAt(obj, 'roleRef') ?? {};
    const shown = {
      APIGroup: strAt(ref, 'apiGroup') ?? '',
      Kind: strAt(ref, 'kind') ?? '',
      Name: strAt(ref, 'name') ?? '',
    };
    errs.push(fieldError.invalid(FieldPath.root('roleRef'), shown, 'cannot change roleRef'));
  }
  return errs;
}

/** `SetDefaults_Subject` and `SetDefaults_RoleBinding`: the RBAC group where it goes unsaid. */
function defaultBinding(obj: JsonObject): void {
  const roleRef = objAt(obj, 'roleRef');
  if (roleRef !== undefined && (strAt(roleRef, 'apiGroup') ?? '') === '')
    roleRef.apiGroup = RBAC_GROUP;
  for (const subject of listAt(obj, 'subjects') ?? []) {
    if (!isJsonObject(subject) || (strAt(subject, 'apiGroup') ?? '') !== '') continue;
    if (subject.kind === 'User' || subject.kind === 'Group') subject.apiGroup = RBAC_GROUP;
  }
}

const CREATED_AT: TableColumn = {
  name: 'Created At',
  type: 'date',
  format: '',
  description:
    'CreationTimestamp is a timestamp representing the server time when this object was created.',
  priority: 0,
};

function roleType(
  resource: string,
  kind: string,
  namespaced: boolean,
  schema: ResourceType['schema'],
): ResourceType {
  return {
    ...PLAIN_STRATEGY,
    group: RBAC_GROUP,
    version: 'v1',
    apiVersion: `${RBAC_GROUP}/v1`,
    resource,
    kind,
    listKind: `${kind}List`,
    schema,
    namespaced,
    indexing: indexing(kind, `${RBAC_GROUP}/v1`),
    applyDefaults() {
      // Roles have no defaulting.
    },
    validate: (obj) => [
      ...validateObjectMeta(meta(obj), rbacName, namespaced),
      ...validateRules(obj, namespaced),
    ],
    validateUpdate: (obj, old) => [
      ...validateObjectMeta(meta(obj), rbacName, namespaced),
      ...validateRules(obj, namespaced),
      ...validateObjectMetaUpdate(meta(obj), meta(old)),
    ],
    columns: [NAME_COLUMN, CREATED_AT],
    cells: (obj) => [nameOf(obj), createdAt(obj)],
  };
}

function subjectsOf(obj: JsonObject, kind: string): string {
  return (listAt(obj, 'subjects') ?? [])
    .filter((s): s is JsonObject => isJsonObject(s) && s.kind === kind)
    .map((s) =>
      kind === 'ServiceAccount'
        ? `${strAt(s, 'namespace') ?? ''}/${strAt(s, 'name') ?? ''}`
        : (strAt(s, 'name') ?? ''),
    )
    .join(', ');
}

function bindingType(resource: string, kind: string, namespaced: boolean): ResourceType {
  return {
    ...PLAIN_STRATEGY,
    group: RBAC_GROUP,
    version: 'v1',
    apiVersion: `${RBAC_GROUP}/v1`,
    resource,
    kind,
    listKind: `${kind}List`,
    schema: roleBindingSchema(kind),
    namespaced,
    indexing: indexing(kind, `${RBAC_GROUP}/v1`),
    applyDefaults: defaultBinding,
    validate: (obj) => validateBinding(obj, namespaced),
    validateUpdate: (obj, old) => validateBindingUpdate(obj, old, namespaced),
    columns: [
      NAME_COLUMN,
      column('Role', 'RoleRef references a role.'),
      AGE_COLUMN,
      column('Users', 'Users in the binding.', 1),
      column('Groups', 'Groups in the binding.', 1),
      column('ServiceAccounts', 'ServiceAccounts in the binding.', 1),
    ],
    cells: (obj, nowMs) => {
      const ref = objAt(obj, 'roleRef') ?? {};
      return [
        nameOf(obj),
        `${strAt(ref, 'kind') ?? ''}/${strAt(ref, 'name') ?? ''}`,
        age(obj, nowMs),
        subjectsOf(obj, 'User'),
        subjectsOf(obj, 'Group'),
        subjectsOf(obj, 'ServiceAccount'),
      ];
    },
  };
}

/** rbac.authorization.k8s.io/v1 Roles. */
export const rbacRoleType: ResourceType = roleType('roles', 'Role', true, roleSchema);
/** rbac.authorization.k8s.io/v1 ClusterRoles (aggregation rules are stored, not evaluated). */
export const clusterRoleType: ResourceType = roleType(
  'clusterroles',
  'ClusterRole',
  false,
  clusterRoleSchema,
);
/** rbac.authorization.k8s.io/v1 RoleBindings. */
export const roleBindingType: ResourceType = bindingType('rolebindings', 'RoleBinding', true);
/** rbac.authorization.k8s.io/v1 ClusterRoleBindings. */
export const clusterRoleBindingType: ResourceType = bindingType(
  'clusterrolebindings',
  'ClusterRoleBinding',
  false,
);

/** Every identity type, in the order the emulator registers them. */
export const IDENTITY_TYPES: readonly ResourceType[] = [
  serviceAccountType,
  rbacRoleType,
  clusterRoleType,
  roleBindingType,
  clusterRoleBindingType,
];
