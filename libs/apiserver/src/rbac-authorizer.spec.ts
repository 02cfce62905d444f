import { authorize, ruleAllows } from './rbac-authorizer';
import type { AuthorizationAttributes, RbacObjects } from './rbac-authorizer';
import type { JsonObject } from './object-schema';

/**
 * The RBAC authorizer's matching and resolution, table-driven after upstream's
 * plugin/pkg/auth/authorizer/rbac/rbac_test.go (`TestRuleMatches`, `TestAuthorizer`) and
 * pkg/registry/rbac/validation/rule.go (`appliesToUser`, the describers).
 */

const sa: AuthorizationAttributes['user'] = {
  name: 'system:serviceaccount:ns1:driver',
  uid: 'u1',
  groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'],
};

function attrs(over: Partial<AuthorizationAttributes>): AuthorizationAttributes {
  return {
    user: sa,
    verb: 'get',
    resourceRequest: true,
    namespace: 'ns1',
    apiGroup: '',
    resource: 'nodes',
    subresource: '',
    name: '',
    path: '',
    ...over,
  };
}

describe('ruleAllows (RuleAllows and the evaluation helpers)', () => {
  it.each<[string, JsonObject, Partial<AuthorizationAttributes>, boolean]>([
    ['VerbMatches: exact', { verbs: ['get'], apiGroups: [''], resources: ['nodes'] }, {}, true],
    [
      'VerbMatches: other verb',
      { verbs: ['list'], apiGroups: [''], resources: ['nodes'] },
      {},
      false,
    ],
    ['VerbMatches: *', { verbs: ['*'], apiGroups: [''], resources: ['nodes'] }, {}, true],
    [
      'APIGroupMatches: other group',
      { verbs: ['get'], apiGroups: ['apps'], resources: ['nodes'] },
      {},
      false,
    ],
    ['APIGroupMatches: *', { verbs: ['get'], apiGroups: ['*'], resources: ['nodes'] }, {}, true],
    ['ResourceMatches: *', { verbs: ['get'], apiGroups: [''], resources: ['*'] }, {}, true],
    [
      'ResourceMatches: the parent does not grant a subresource',
      { verbs: ['patch'], apiGroups: [''], resources: ['nodes'] },
      { verb: 'patch', subresource: 'status' },
      false,
    ],
    [
      'ResourceMatches: resource/subresource',
      { verbs: ['patch'], apiGroups: [''], resources: ['nodes/status'] },
      { verb: 'patch', subresource: 'status' },
      true,
    ],
    [
      'ResourceMatches: */subresource',
      { verbs: ['patch'], apiGroups: [''], resources: ['*/status'] },
      { verb: 'patch', subresource: 'status' },
      true,
    ],
    [
      'ResourceMatches: */subresource is not the resource',
      { verbs: ['get'], apiGroups: [''], resources: ['*/status'] },
      {},
      false,
    ],
    [
      'ResourceNameMatches: listed name',
      {
        verbs: ['create'],
        apiGroups: ['slicekeeper.dev'],
        resources: ['plugins'],
        resourceNames: ['drv'],
      },
      { verb: 'create', apiGroup: 'slicekeeper.dev', resource: 'plugins', name: 'drv' },
      true,
    ],
    [
      'ResourceNameMatches: another name',
      {
        verbs: ['create'],
        apiGroups: ['slicekeeper.dev'],
        resources: ['plugins'],
        resourceNames: ['drv'],
      },
      { verb: 'create', apiGroup: 'slicekeeper.dev', resource: 'plugins', name: 'other' },
      false,
    ],
    [
      'ResourceNameMatches: names do not grant a list (no name)',
      { verbs: ['list'], apiGroups: [''], resources: ['nodes'], resourceNames: ['a'] },
      { verb: 'list' },
      false,
    ],
    [
      'NonResourceURLMatches: exact',
      { verbs: ['get'], nonResourceURLs: ['/healthz'] },
      { resourceRequest: false, path: '/healthz' },
      true,
    ],
    [
      'NonResourceURLMatches: prefix*',
      { verbs: ['get'], nonResourceURLs: ['/apis/*'] },
      { resourceRequest: false, path: '/apis/resource.k8s.io/v1' },
      true,
    ],
    [
      'NonResourceURLMatches: a resource rule never grants a path',
      { verbs: ['get'], apiGroups: ['*'], resources: ['*'] },
      { resourceRequest: false, path: '/healthz' },
      false,
    ],
  ])('%s', (_name, rule, over, allowed) => {
    expect(ruleAllows(attrs(over), rule)).toBe(allowed);
  });
});

function objects(
  clusterRoleBindings: JsonObject[],
  roleBindings: JsonObject[],
  clusterRoles: Record<string, JsonObject>,
  roles: Record<string, JsonObject>,
): RbacObjects {
  return {
    clusterRoleBindings: () => clusterRoleBindings,
    roleBindings: (ns) =>
      roleBindings.filter((b) => (b.metadata as { namespace: string }).namespace === ns),
    clusterRole: (name) => clusterRoles[name],
    role: (ns, name) => roles[`${ns}/${name}`],
  };
}

const nodeReader = { rules: [{ verbs: ['get'], apiGroups: [''], resources: ['nodes'] }] };
const binding = (
  name: string,
  namespace: string | undefined,
  roleRef: { kind: string; name: string },
  subject: JsonObject,
): JsonObject => ({
  metadata: namespace === undefined ? { name } : { name, namespace },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef },
  subjects: [subject],
});

describe('authorize (privileged group, then RBAC)', () => {
  it.each<
    [string, RbacObjects, Partial<AuthorizationAttributes>, { allowed: boolean; reason: string }]
  >([
    [
      'system:masters is allowed with no reason',
      objects([], [], {}, {}),
      { user: { name: 'admin', uid: '', groups: ['system:masters'] } },
      { allowed: true, reason: '' },
    ],
    [
      'no binding: no opinion, no reason',
      objects([], [], {}, {}),
      {},
      { allowed: false, reason: '' },
    ],
    [
      'ClusterRoleBinding to a ServiceAccount subject',
      objects(
        [
          binding(
            'b',
            undefined,
            { kind: 'ClusterRole', name: 'reader' },
            { kind: 'ServiceAccount', name: 'driver', namespace: 'ns1' },
          ),
        ],
        [],
        { reader: nodeReader },
        {},
      ),
      {},
      {
        allowed: true,
        reason:
          'RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "reader" to ServiceAccount "driver/ns1"',
      },
    ],
    [
      'ClusterRoleBinding to a Group subject',
      objects(
        [
          binding(
            'b',
            undefined,
            { kind: 'ClusterRole', name: 'reader' },
            {
              kind: 'Group',
              apiGroup: 'rbac.authorization.k8s.io',
              name: 'system:serviceaccounts:ns1',
            },
          ),
        ],
        [],
        { reader: nodeReader },
        {},
      ),
      {},
      {
        allowed: true,
        reason:
          'RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "reader" to Group "system:serviceaccounts:ns1"',
      },
    ],
    [
      'RoleBinding: a ServiceAccount subject without namespace is the binding’s (appliesToUser)',
      objects(
        [],
        [
          binding(
            'rb',
            'ns1',
            { kind: 'Role', name: 'r' },
            { kind: 'ServiceAccount', name: 'driver' },
          ),
        ],
        {},
        { 'ns1/r': nodeReader },
      ),
      {},
      {
        allowed: true,
        reason: 'RBAC: allowed by RoleBinding "rb/ns1" of Role "r" to ServiceAccount "driver/ns1"',
      },
    ],
    [
      'RoleBinding to a ClusterRole grants only in its namespace',
      objects(
        [],
        [
          binding(
            'rb',
            'ns1',
            { kind: 'ClusterRole', name: 'reader' },
            { kind: 'ServiceAccount', name: 'driver' },
          ),
        ],
        { reader: nodeReader },
        {},
      ),
      { namespace: 'ns2' },
      { allowed: false, reason: '' },
    ],
    [
      'a binding to a missing ClusterRole is a resolution error in the reason',
      objects(
        [
          binding(
            'b',
            undefined,
            { kind: 'ClusterRole', name: 'nope' },
            { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: sa.name },
          ),
        ],
        [],
        {},
        {},
      ),
      {},
      { allowed: false, reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found' },
    ],
    [
      'two resolution errors are aggregated in brackets',
      objects(
        [
          binding(
            'b',
            undefined,
            { kind: 'ClusterRole', name: 'nope' },
            { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: sa.name },
          ),
        ],
        [
          binding(
            'rb',
            'ns1',
            { kind: 'Role', name: 'gone' },
            { kind: 'ServiceAccount', name: 'driver' },
          ),
        ],
        {},
        {},
      ),
      {},
      {
        allowed: false,
        reason:
          'RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, role.rbac.authorization.k8s.io "gone" not found]',
      },
    ],
  ])('%s', (_name, rbac, over, decision) => {
    expect(authorize(attrs(over), rbac)).toEqual(decision);
  });
});
