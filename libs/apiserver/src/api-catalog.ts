import { createHash } from 'node:crypto';
import { releaseInfo } from './kube-release';
import type { KubeRelease } from './kube-release';
import type { JsonObject } from './object-schema';

/**
 * What kube-apiserver advertises in discovery: its API groups and the resources of the group
 * versions this server implements; resource.k8s.io's versions depend on the release
 * (kube-release.ts). Discovery is static data on the real server too; the
 * documents are built from this table, and storage version hashes are computed as the server
 * computes them.
 */

const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS = ['get', 'patch', 'update'];

export interface CatalogResource {
  readonly name: string;
  readonly singularName: string;
  readonly namespaced: boolean;
  readonly kind: string;
  readonly verbs: readonly string[];
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  /** group/version/kind of the storage version; a storageVersionHash is derived from it. */
  readonly storage?: string;
  readonly group?: string;
  readonly version?: string;
}

function r(
  name: string,
  kind: string,
  namespaced: boolean,
  verbs: readonly string[],
  extra: Partial<CatalogResource> = {},
): CatalogResource {
  const sub = name.includes('/');
  return { name, singularName: sub ? '' : singular(name), namespaced, kind, verbs, ...extra };
}

function singular(name: string): string {
  if (name === 'endpoints') return 'endpoints';
  if (name.endsWith('ses')) return name.slice(0, -2);
  if (name.endsWith('ies')) return `${name.slice(0, -3)}y`;
  return name.endsWith('s') ? name.slice(0, -1) : name;
}

const core = (kind: string) => `/v1/${kind}`;

export const CORE_V1_RESOURCES: readonly CatalogResource[] = [
  r('bindings', 'Binding', true, ['create']),
  r('componentstatuses', 'ComponentStatus', false, ['get', 'list'], { shortNames: ['cs'] }),
  r('configmaps', 'ConfigMap', true, ALL, { shortNames: ['cm'], storage: core('ConfigMap') }),
  r('endpoints', 'Endpoints', true, ALL, { shortNames: ['ep'], storage: core('Endpoints') }),
  r('events', 'Event', true, ALL, { shortNames: ['ev'], storage: core('Event') }),
  r('limitranges', 'LimitRange', true, ALL, {
    shortNames: ['limits'],
    storage: core('LimitRange'),
  }),
  r(
    'namespaces',
    'Namespace',
    false,
    ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    {
      shortNames: ['ns'],
      storage: core('Namespace'),
    },
  ),
  r('namespaces/finalize', 'Namespace', false, ['update']),
  r('namespaces/status', 'Namespace', false, STATUS),
  r('nodes', 'Node', false, ALL, { shortNames: ['no'], storage: core('Node') }),
  r('nodes/proxy', 'NodeProxyOptions', false, ['create', 'delete', 'get', 'patch', 'update']),
  r('nodes/status', 'Node', false, STATUS),
  r('persistentvolumeclaims', 'PersistentVolumeClaim', true, ALL, {
    shortNames: ['pvc'],
    storage: core('PersistentVolumeClaim'),
  }),
  r('persistentvolumeclaims/status', 'PersistentVolumeClaim', true, STATUS),
  r('persistentvolumes', 'PersistentVolume', false, ALL, {
    shortNames: ['pv'],
    storage: core('PersistentVolume'),
  }),
  r('persistentvolumes/status', 'PersistentVolume', false, STATUS),
  r('pods', 'Pod', true, ALL, { shortNames: ['po'], categories: ['all'], storage: core('Pod') }),
  r('pods/attach', 'PodAttachOptions', true, ['create', 'get']),
  r('pods/binding', 'Binding', true, ['create']),
  r('pods/ephemeralcontainers', 'Pod', true, STATUS),
  r('pods/eviction', 'Eviction', true, ['create'], { group: 'policy', version: 'v1' }),
  r('pods/exec', 'PodExecOptions', true, ['create', 'get']),
  r('pods/log', 'Pod', true, ['get']),
  r('pods/portforward', 'PodPortForwardOptions', true, ['create', 'get']),
  r('pods/proxy', 'PodProxyOptions', true, ['create', 'delete', 'get', 'patch', 'update']),
  r('pods/resize', 'Pod', true, STATUS),
  r('pods/status', 'Pod', true, STATUS),
  r('podtemplates', 'PodTemplate', true, ALL, { storage: core('PodTemplate') }),
  r('replicationcontrollers', 'ReplicationController', true, ALL, {
    shortNames: ['rc'],
    categories: ['all'],
    storage: core('ReplicationController'),
  }),
  r('replicationcontrollers/scale', 'Scale', true, STATUS, { group: 'autoscaling', version: 'v1' }),
  r('replicationcontrollers/status', 'ReplicationController', true, STATUS),
  r('resourcequotas', 'ResourceQuota', true, ALL, {
    shortNames: ['quota'],
    storage: core('ResourceQuota'),
  }),
  r('resourcequotas/status', 'ResourceQuota', true, STATUS),
  r('secrets', 'Secret', true, ALL, { storage: core('Secret') }),
  r('serviceaccounts', 'ServiceAccount', true, ALL, {
    shortNames: ['sa'],
    storage: core('ServiceAccount'),
  }),
  r('serviceaccounts/token', 'TokenRequest', true, ['create'], {
    group: 'authentication.k8s.io',
    version: 'v1',
  }),
  r('services', 'Service', true, ALL, {
    shortNames: ['svc'],
    categories: ['all'],
    storage: core('Service'),
  }),
  r('services/proxy', 'ServiceProxyOptions', true, ['create', 'delete', 'get', 'patch', 'update']),
  r('services/status', 'Service', true, STATUS),
];

function resourceGroupResources(release: KubeRelease): readonly CatalogResource[] {
  const storage = releaseInfo(release).storageVersion;
  const dra = (kind: string) => `resource.k8s.io/${storage}/${kind}`;
  return [
    r('deviceclasses', 'DeviceClass', false, ALL, { storage: dra('DeviceClass') }),
    r('resourceclaims', 'ResourceClaim', true, ALL, { storage: dra('ResourceClaim') }),
    r('resourceclaims/status', 'ResourceClaim', true, STATUS),
    r('resourceclaimtemplates', 'ResourceClaimTemplate', true, ALL, {
      storage: dra('ResourceClaimTemplate'),
    }),
    r('resourceslices', 'ResourceSlice', false, ALL, { storage: dra('ResourceSlice') }),
  ];
}

/** events.k8s.io/v1: the core Events, stored as core/v1 (hence the same storage hash). */
const EVENTS_V1_RESOURCES: readonly CatalogResource[] = [
  r('events', 'Event', true, ALL, { shortNames: ['ev'], storage: core('Event') }),
];

/** coordination.k8s.io/v1 (the emulator serves its Leases for reads: there are none). */
const COORDINATION_V1_RESOURCES: readonly CatalogResource[] = [
  r('leases', 'Lease', true, ALL, { storage: 'coordination.k8s.io/v1/Lease' }),
];

/** authorization.k8s.io/v1: the review APIs, which only take a create. */
const AUTHORIZATION_V1_RESOURCES: readonly CatalogResource[] = [
  r('localsubjectaccessreviews', 'LocalSubjectAccessReview', true, ['create']),
  r('selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, ['create']),
  r('selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, ['create']),
  r('subjectaccessreviews', 'SubjectAccessReview', false, ['create']),
];

/** authentication.k8s.io/v1: the review APIs, create only. */
const AUTHENTICATION_V1_RESOURCES: readonly CatalogResource[] = [
  r('selfsubjectreviews', 'SelfSubjectReview', false, ['create']),
  r('tokenreviews', 'TokenReview', false, ['create']),
];

const rbac = (kind: string) => `rbac.authorization.k8s.io/v1/${kind}`;

/** rbac.authorization.k8s.io/v1: the four RBAC kinds (no short names, as upstream). */
const RBAC_V1_RESOURCES: readonly CatalogResource[] = [
  r('clusterrolebindings', 'ClusterRoleBinding', false, ALL, {
    storage: rbac('ClusterRoleBinding'),
  }),
  r('clusterroles', 'ClusterRole', false, ALL, { storage: rbac('ClusterRole') }),
  r('rolebindings', 'RoleBinding', true, ALL, { storage: rbac('RoleBinding') }),
  r('roles', 'Role', true, ALL, { storage: rbac('Role') }),
];

interface ApiGroupVersions {
  readonly name: string;
  readonly versions: readonly string[];
}

/** API groups in the order /apis lists them, each with its versions, preferred first. */
function apiGroups(release: KubeRelease): readonly ApiGroupVersions[] {
  return API_GROUPS.map((g) =>
    g.name === 'resource.k8s.io'
      ? { name: g.name, versions: releaseInfo(release).resourceVersions }
      : g,
  );
}

const API_GROUPS: readonly ApiGroupVersions[] = [
  { name: 'apiregistration.k8s.io', versions: ['v1'] },
  { name: 'apps', versions: ['v1'] },
  { name: 'events.k8s.io', versions: ['v1'] },
  { name: 'authentication.k8s.io', versions: ['v1'] },
  { name: 'authorization.k8s.io', versions: ['v1'] },
  { name: 'autoscaling', versions: ['v2', 'v1'] },
  { name: 'batch', versions: ['v1'] },
  { name: 'certificates.k8s.io', versions: ['v1'] },
  { name: 'networking.k8s.io', versions: ['v1'] },
  { name: 'policy', versions: ['v1'] },
  { name: 'rbac.authorization.k8s.io', versions: ['v1'] },
  { name: 'storage.k8s.io', versions: ['v1'] },
  { name: 'admissionregistration.k8s.io', versions: ['v1'] },
  { name: 'apiextensions.k8s.io', versions: ['v1'] },
  { name: 'scheduling.k8s.io', versions: ['v1'] },
  { name: 'coordination.k8s.io', versions: ['v1'] },
  { name: 'node.k8s.io', versions: ['v1'] },
  { name: 'discovery.k8s.io', versions: ['v1'] },
  { name: 'resource.k8s.io', versions: [] },
  { name: 'flowcontrol.apiserver.k8s.io', versions: ['v1'] },
];

/** The group versions whose resources this server knows (and serves in part). */
function servedGroupVersions(
  release: KubeRelease,
): ReadonlyMap<string, readonly CatalogResource[]> {
  const served = new Map<string, readonly CatalogResource[]>([
    ['v1', CORE_V1_RESOURCES],
    ['events.k8s.io/v1', EVENTS_V1_RESOURCES],
    ['coordination.k8s.io/v1', COORDINATION_V1_RESOURCES],
    ['authentication.k8s.io/v1', AUTHENTICATION_V1_RESOURCES],
    ['authorization.k8s.io/v1', AUTHORIZATION_V1_RESOURCES],
    ['rbac.authorization.k8s.io/v1', RBAC_V1_RESOURCES],
  ]);
  // Every served resource.k8s.io version has the same resources.
  const resources = resourceGroupResources(release);
  for (const version of releaseInfo(release).resourceVersions)
    served.set(`resource.k8s.io/${version}`, resources);
  return served;
}

/**
 * The ETag of an aggregated discovery document (`endpoints/discovery/aggregated/etag.go`
 * `calculateETag`): the upper-case hex SHA-512 of its JSON, quoted as `strconv.Quote` does.
 */
export function discoveryETag(json: string): string {
  return `"${createHash('sha512').update(json).digest('hex').toUpperCase()}"`;
}

/** apiserver's `StorageVersionHash`: the first 8 bytes of sha256("group/version/kind"), base64. */
export function storageVersionHash(groupVersionKind: string): string {
  return createHash('sha256').update(groupVersionKind).digest().subarray(0, 8).toString('base64');
}

/** GET /version as kube-apiserver of `release` answers it. */
export function versionInfo(release: KubeRelease): JsonObject {
  const minor = releaseInfo(release).minor;
  return {
    major: '1',
    minor: String(minor),
    emulationMajor: '1',
    emulationMinor: String(minor),
    minCompatibilityMajor: '1',
    minCompatibilityMinor: String(minor - 1),
    gitVersion: `v1.${minor}.0-kube-emulator`,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '1970-01-01T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'gc',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}

function resourceEntry(resource: CatalogResource): JsonObject {
  const out: JsonObject = {
    name: resource.name,
    singularName: resource.singularName,
    namespaced: resource.namespaced,
  };
  if (resource.group !== undefined) out.group = resource.group;
  if (resource.version !== undefined) out.version = resource.version;
  out.kind = resource.kind;
  out.verbs = [...resource.verbs];
  if (resource.shortNames !== undefined) out.shortNames = [...resource.shortNames];
  if (resource.categories !== undefined) out.categories = [...resource.categories];
  if (resource.storage !== undefined) out.storageVersionHash = storageVersionHash(resource.storage);
  return out;
}

/** A resource (or `resource/subresource`) as discovery lists it in a group version. */
export function catalogResource(
  groupVersion: string,
  name: string,
  release: KubeRelease,
): CatalogResource | undefined {
  return servedGroupVersions(release)
    .get(groupVersion)
    ?.find((resource) => resource.name === name);
}

/** GET /api/v1 or /apis/<group>/<version>: an APIResourceList. */
export function apiResourceList(
  groupVersion: string,
  release: KubeRelease,
): JsonObject | undefined {
  const resources = servedGroupVersions(release).get(groupVersion);
  if (resources === undefined) return undefined;
  const list: JsonObject = { kind: 'APIResourceList' };
  if (groupVersion !== 'v1') list.apiVersion = 'v1';
  list.groupVersion = groupVersion;
  list.resources = resources.map(resourceEntry);
  return list;
}

/** GET /api: the legacy APIVersions. */
export function apiVersions(serverAddress: string): JsonObject {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupEntry(
  group: { name: string; versions: readonly string[] },
  withKind: boolean,
): JsonObject {
  const versions = group.versions.map((v) => ({ groupVersion: `${group.name}/${v}`, version: v }));
  const out: JsonObject = withKind ? { kind: 'APIGroup', apiVersion: 'v1' } : {};
  out.name = group.name;
  out.versions = versions;
  out.preferredVersion = versions[0] ?? null;
  return out;
}

/** GET /apis: the APIGroupList. */
export function apiGroupList(release: KubeRelease): JsonObject {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: apiGroups(release).map((g) => groupEntry(g, false)),
  };
}

/** GET /apis/<group>: the APIGroup. */
export function apiGroup(name: string, release: KubeRelease): JsonObject | undefined {
  const group = apiGroups(release).find((g) => g.name === name);
  return group === undefined ? undefined : groupEntry(group, true);
}

/**
 * The aggregated discovery document (apidiscovery.k8s.io/v2) for /api or /apis, listing the group
 * versions whose resources this server knows. Clients such as kubectl read it in one request
 * instead of walking every group version.
 */
export function aggregatedDiscovery(legacy: boolean, release: KubeRelease): JsonObject {
  const items: JsonObject[] = [];
  const served = servedGroupVersions(release);
  const groups = legacy ? [{ name: '', versions: ['v1'] }] : apiGroups(release);
  for (const group of groups) {
    const versions: JsonObject[] = [];
    for (const version of group.versions) {
      const gv = group.name === '' ? version : `${group.name}/${version}`;
      const resources = served.get(gv);
      if (resources === undefined) continue;
      const top = resources.filter((res) => !res.name.includes('/'));
      versions.push({
        version,
        resources: top.map((res) => {
          const subresources = resources
            .filter((s) => s.name.startsWith(`${res.name}/`))
            .map((s) => ({
              subresource: s.name.slice(res.name.length + 1),
              responseKind: {
                group: s.group ?? group.name,
                version: s.version ?? version,
                kind: s.kind,
              },
              verbs: [...s.verbs],
            }));
          const entry: JsonObject = {
            resource: res.name,
            responseKind: { group: group.name, version, kind: res.kind },
            scope: res.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: res.singularName,
            verbs: [...res.verbs],
          };
          if (res.shortNames !== undefined) entry.shortNames = [...res.shortNames];
          if (res.categories !== undefined) entry.categories = [...res.categories];
          if (subresources.length > 0) entry.subresources = subresources;
          return entry;
        }),
        freshness: 'Current',
      });
    }
    if (versions.length === 0) continue;
    items.push({
      metadata:
        group.name === ''
          ? { creationTimestamp: null }
          : { name: group.name, creationTimestamp: null },
      versions,
    });
  }
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items,
  };
}
