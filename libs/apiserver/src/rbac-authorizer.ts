import { listAt, objAt, strAt } from './api-schemas';
import { isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';

/**
 * kube-apiserver's authorization chain for the identities the emulator evaluates: the privileged
 * group (`system:masters`, allowed before anything else) and the RBAC authorizer
 * (plugin/pkg/auth/authorizer/rbac/rbac.go `Authorize` and `RuleAllows`, with the rule
 * resolution of pkg/registry/rbac/validation/rule.go `VisitRulesFor` and the matchers of
 * pkg/apis/rbac/v1/evaluation_helpers.go). Decisions are allow or no opinion: RBAC never denies.
 */

/** The user a request (or a SubjectAccessReview) is about. */
export interface UserInfo {
  readonly name: string;
  readonly uid: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** authorizer.Attributes: what is asked, by whom. */
export interface AuthorizationAttributes {
  readonly user: UserInfo;
  readonly verb: string;
  /** False for a non-resource path (`/api`, `/healthz`). */
  readonly resourceRequest: boolean;
  readonly namespace: string;
  readonly apiGroup: string;
  readonly resource: string;
  readonly subresource: string;
  readonly name: string;
  /** The path of a non-resource request. */
  readonly path: string;
}

export interface AuthorizationDecision {
  readonly allowed: boolean;
  /** `RBAC: allowed by …` when allowed; the resolution errors (`RBAC: …`) or "" otherwise. */
  readonly reason: string;
}

/** Where the RBAC objects are read: the store, falling back to the bootstrap policy. */
export interface RbacObjects {
  clusterRoleBindings(): readonly JsonObject[];
  roleBindings(namespace: string): readonly JsonObject[];
  clusterRole(name: string): JsonObject | undefined;
  role(namespace: string, name: string): JsonObject | undefined;
}

/** `user.SystemPrivilegedGroup`, allowed everything by the privileged-group authorizer. */
export const PRIVILEGED_GROUP = 'system:masters';

const rule = (verbs: string[], fields: Record<string, string[]>): JsonObject => ({
  verbs,
  ...fields,
});

/**
 * The bootstrap ClusterRoles a 1.34 server reconciles at start that the emulator evaluates
 * (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go): enough for any authenticated
 * identity to do discovery and ask about itself, and `cluster-admin` to bind to. They are not
 * stored objects.
 */
export const BOOTSTRAP_CLUSTER_ROLES: ReadonlyMap<string, JsonObject> = new Map(
  (
    [
      [
        'cluster-admin',
        [
          rule(['*'], { apiGroups: ['*'], resources: ['*'] }),
          rule(['*'], { nonResourceURLs: ['*'] }),
        ],
      ],
      [
        'system:discovery',
        [
          rule(['get'], {
            nonResourceURLs: [
              '/api',
              '/api/*',
              '/apis',
              '/apis/*',
              '/healthz',
              '/livez',
              '/openapi',
              '/openapi/*',
              '/readyz',
              '/version',
              '/version/',
            ],
          }),
        ],
      ],
      [
        'system:basic-user',
        [
          rule(['create'], {
            apiGroups: ['authorization.k8s.io'],
            resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
          }),
          rule(['create'], {
            apiGroups: ['authentication.k8s.io'],
            resources: ['selfsubjectreviews'],
          }),
        ],
      ],
      [
        'system:public-info-viewer',
        [
          rule(['get'], {
            nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'],
          }),
        ],
      ],
    ] as const
  ).map(([name, rules]) => [
    name,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [...rules],
    },
  ]),
);

function groupBinding(name: string, groups: readonly string[]): JsonObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: groups.map((group) => ({
      kind: 'Group',
      apiGroup: 'rbac.authorization.k8s.io',
      name: group,
    })),
  };
}

/** The bootstrap ClusterRoleBindings of those roles (`cluster-admin` to `system:masters`). */
export const BOOTSTRAP_CLUSTER_ROLE_BINDINGS: readonly JsonObject[] = [
  groupBinding('cluster-admin', [PRIVILEGED_GROUP]),
  groupBinding('system:basic-user', ['system:authenticated']),
  groupBinding('system:discovery', ['system:authenticated']),
  groupBinding('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
];

function strings(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** `VerbMatches`. */
function verbMatches(r: JsonObject, verb: string): boolean {
  return strings(r.verbs).some((v) => v === '*' || v === verb);
}

/** `APIGroupMatches`. */
function apiGroupMatches(r: JsonObject, group: string): boolean {
  return strings(r.apiGroups).some((g) => g === '*' || g === group);
}

/** `ResourceMatches`: `*`, the combined `resource/subresource`, or `*​/subresource`. */
function resourceMatches(r: JsonObject, combined: string, subresource: string): boolean {
  return strings(r.resources).some(
    (res) =>
      res === '*' ||
      res === combined ||
      (subresource !== '' &&
        res.length === subresource.length + 2 &&
        res.startsWith('*/') &&
        res.endsWith(subresource)),
  );
}

/** `ResourceNameMatches`: no names means every name. */
function resourceNameMatches(r: JsonObject, name: string): boolean {
  const names = strings(r.resourceNames);
  return names.length === 0 || names.includes(name);
}

/** `NonResourceURLMatches`: exact, `*`, or a prefix ending in `*`. */
function nonResourceUrlMatches(r: JsonObject, path: string): boolean {
  return strings(r.nonResourceURLs).some(
    (url) =>
      url === '*' ||
      url === path ||
      (url.endsWith('*') && path.startsWith(url.replace(/\*+$/, ''))),
  );
}

/** `RuleAllows`. */
export function ruleAllows(attrs: AuthorizationAttributes, r: JsonObject): boolean {
  if (!attrs.resourceRequest)
    return verbMatches(r, attrs.verb) && nonResourceUrlMatches(r, attrs.path);
  const combined =
    attrs.subresource === '' ? attrs.resource : `${attrs.resource}/${attrs.subresource}`;
  return (
    verbMatches(r, attrs.verb) &&
    apiGroupMatches(r, attrs.apiGroup) &&
    resourceMatches(r, combined, attrs.subresource) &&
    resourceNameMatches(r, attrs.name)
  );
}

/** `serviceaccount.MakeUsername`. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** `appliesToUser`: a ServiceAccount subject without a namespace is the binding's. */
function appliesToUser(user: UserInfo, subject: JsonObject, namespace: string): boolean {
  const name = strAt(subject, 'name') ?? '';
  switch (strAt(subject, 'kind')) {
    case 'User':
      return user.name === name;
    case 'Group':
      return user.groups.includes(name);
    case 'ServiceAccount': {
      const saNamespace = strAt(subject, 'namespace') || namespace;
      return saNamespace !== '' && user.name === serviceAccountUsername(saNamespace, name);
    }
    default:
      return false;
  }
}

/** The subject of a binding that names the user, if any (`appliesTo`). */
function subjectFor(
  user: UserInfo,
  binding: JsonObject,
  namespace: string,
): JsonObject | undefined {
  return (listAt(binding, 'subjects') ?? []).find(
    (s): s is JsonObject => isJsonObject(s) && appliesToUser(user, s, namespace),
  );
}

/** `describeSubject`. */
function describeSubject(subject: JsonObject, bindingNamespace: string): string {
  const kind = strAt(subject, 'kind') ?? '';
  const name = strAt(subject, 'name') ?? '';
  if (kind === 'ServiceAccount')
    return `${kind} ${JSON.stringify(`${name}/${strAt(subject, 'namespace') || bindingNamespace}`)}`;
  return `${kind} ${JSON.stringify(name)}`;
}

function roleRefOf(binding: JsonObject): { kind: string; name: string } {
  const ref = objAt(binding, 'roleRef') ?? {};
  return { kind: strAt(ref, 'kind') ?? '', name: strAt(ref, 'name') ?? '' };
}

/**
 * `GetRoleReferenceRules`: the rules of the role a binding references, or the lister's
 * NotFound text (`clusterrole.rbac.authorization.k8s.io "x" not found`).
 */
function referencedRules(
  objects: RbacObjects,
  ref: { kind: string; name: string },
  namespace: string,
): JsonObject[] | string {
  let role: JsonObject | undefined;
  if (ref.kind === 'ClusterRole') role = objects.clusterRole(ref.name);
  else if (ref.kind === 'Role') role = objects.role(namespace, ref.name);
  else return `unsupported role reference kind: ${JSON.stringify(ref.kind)}`;
  if (role === undefined)
    return `${ref.kind.toLowerCase()}.rbac.authorization.k8s.io ${JSON.stringify(ref.name)} not found`;
  return (listAt(role, 'rules') ?? []).filter(isJsonObject);
}

/** apimachinery's aggregate error text: one message alone, several in brackets. */
function aggregate(errors: readonly string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? (unique[0] ?? '') : `[${unique.join(', ')}]`;
}

/**
 * The RBAC authorizer: ClusterRoleBindings first, then the RoleBindings of the request's
 * namespace; the first rule that allows ends the walk and names its binding in the reason.
 */
export function authorizeRbac(
  attrs: AuthorizationAttributes,
  objects: RbacObjects,
): AuthorizationDecision {
  const errors: string[] = [];
  for (const binding of objects.clusterRoleBindings()) {
    const subject = subjectFor(attrs.user, binding, '');
    if (subject === undefined) continue;
    const ref = roleRefOf(binding);
    const rules = referencedRules(objects, ref, '');
    if (typeof rules === 'string') {
      errors.push(rules);
      continue;
    }
    if (rules.some((r) => ruleAllows(attrs, r))) {
      const name = strAt(objAt(binding, 'metadata'), 'name') ?? '';
      return {
        allowed: true,
        reason: `RBAC: allowed by ClusterRoleBinding ${JSON.stringify(name)} of ${ref.kind} ${JSON.stringify(ref.name)} to ${describeSubject(subject, '')}`,
      };
    }
  }
  if (attrs.namespace !== '') {
    for (const binding of objects.roleBindings(attrs.namespace)) {
      const subject = subjectFor(attrs.user, binding, attrs.namespace);
      if (subject === undefined) continue;
      const ref = roleRefOf(binding);
      const rules = referencedRules(objects, ref, attrs.namespace);
      if (typeof rules === 'string') {
        errors.push(rules);
        continue;
      }
      if (rules.some((r) => ruleAllows(attrs, r))) {
        const name = strAt(objAt(binding, 'metadata'), 'name') ?? '';
        return {
          allowed: true,
          reason: `RBAC: allowed by RoleBinding ${JSON.stringify(`${name}/${attrs.namespace}`)} of ${ref.kind} ${JSON.stringify(ref.name)} to ${describeSubject(subject, attrs.namespace)}`,
        };
      }
    }
  }
  return { allowed: false, reason: errors.length === 0 ? '' : `RBAC: ${aggregate(errors)}` };
}

/** The chain: the privileged group (allowed, no reason), then RBAC. */
export function authorize(
  attrs: AuthorizationAttributes,
  objects: RbacObjects,
): AuthorizationDecision {
  if (attrs.user.groups.includes(PRIVILEGED_GROUP)) return { allowed: true, reason: '' };
  return authorizeRbac(attrs, objects);
}
