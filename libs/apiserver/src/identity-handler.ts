import { apiErrors } from './api-error';
import { objAt, strAt } from './api-schemas';
import { FieldPath, fieldError } from './field-errors';
import type { FieldError } from './field-errors';
import { formatTime, isJsonObject } from './object-schema';
import type { JsonObject, JsonValue } from './object-schema';
import { objectKey } from './object-store';
import type { ObjectStore, StoredObject } from './object-store';
import { nodeType } from './resource-types';
import { parseBody } from './request-decoding';
import { podType } from './pod-type';
import {
  authorize,
  BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
  BOOTSTRAP_CLUSTER_ROLES,
} from './rbac-authorizer';
import type { AuthorizationAttributes, RbacObjects, UserInfo } from './rbac-authorizer';
import {
  clusterRoleBindingType,
  clusterRoleType,
  rbacRoleType,
  roleBindingType,
  serviceAccountType,
} from './identity-types';
import type { ServiceAccountTokens, StoredRef, TokenObjectLookup } from './service-account-tokens';

/**
 * The REST endpoints of identities that are not stored objects: `serviceaccounts/token`
 * (TokenRequest, pkg/registry/core/serviceaccount/storage/token.go), TokenReview
 * (pkg/registry/authentication/tokenreview), SelfSubjectReview, and the access reviews
 * (pkg/registry/authorization/*subjectaccessreview) answered by the RBAC authorizer. Each is a
 * create that stores nothing and answers 201 with the request object and its status.
 */

/** An identity endpoint a POST reached, with what the authorizer is asked about it. */
export interface IdentityRoute {
  readonly kind:
    | 'token'
    | 'tokenreview'
    | 'selfsubjectreview'
    | 'subjectaccessreview'
    | 'selfsubjectaccessreview'
    | 'localsubjectaccessreview';
  readonly namespace: string;
  readonly name: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource: string;
}

/** Matches the POST paths of the identity endpoints. */
export function identityRoute(method: string, path: string): IdentityRoute | undefined {
  if (method !== 'POST') return undefined;
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const [a, b, c, d, e, f, g] = parts;
  if (
    parts.length === 7 &&
    a === 'api' &&
    b === 'v1' &&
    c === 'namespaces' &&
    e === 'serviceaccounts' &&
    g === 'token'
  )
    return {
      kind: 'token',
      namespace: d ?? '',
      name: f ?? '',
      group: '',
      resource: 'serviceaccounts',
      subresource: 'token',
    };
  if (a !== 'apis' || c !== 'v1') return undefined;
  const review = (kind: IdentityRoute['kind'], namespace = ''): IdentityRoute => ({
    kind,
    namespace,
    name: '',
    group: b ?? '',
    resource: `${kind}s`,
    subresource: '',
  });
  if (parts.length === 4 && b === 'authentication.k8s.io') {
    if (d === 'tokenreviews') return review('tokenreview');
    if (d === 'selfsubjectreviews') return review('selfsubjectreview');
  }
  if (b !== 'authorization.k8s.io') return undefined;
  if (parts.length === 4 && d === 'subjectaccessreviews') return review('subjectaccessreview');
  if (parts.length === 4 && d === 'selfsubjectaccessreviews')
    return review('selfsubjectaccessreview');
  if (parts.length === 6 && d === 'namespaces' && f === 'localsubjectaccessreviews')
    return review('localsubjectaccessreview', e ?? '');
  return undefined;
}

/** An identity endpoint's answer. */
export interface IdentityResult {
  readonly code: number;
  readonly body: JsonObject;
}

export interface IdentityHandlerOptions {
  readonly store: ObjectStore;
  readonly tokens: ServiceAccountTokens;
  readonly now: () => number;
  /**
   * The user of a static token (the token file), which TokenReview authenticates too: an
   * audience-agnostic authenticator, good for the API audiences only.
   */
  readonly staticUser?: (token: string) => UserInfo | undefined;
}

const TOKEN_REQUEST_MIN_SECONDS = 10 * 60;
const TOKEN_REQUEST_MAX_SECONDS = 2 ** 32;
const DEFAULT_TOKEN_SECONDS = 60 * 60;
const ACCEPTED = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];

function stringList(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function storedRef(stored: StoredObject | undefined): StoredRef | undefined {
  if (stored === undefined) return undefined;
  const deletion = strAt(objAt(stored.object, 'metadata'), 'deletionTimestamp');
  return deletion === undefined
    ? { uid: stored.uid }
    : { uid: stored.uid, deletionMs: Date.parse(deletion) };
}

/** The identity endpoints over the emulator's store. */
export class IdentityHandler {
  private readonly store: ObjectStore;
  private readonly tokens: ServiceAccountTokens;
  private readonly now: () => number;
  private readonly staticUser: (token: string) => UserInfo | undefined;
  /** RBAC objects as the authorizer reads them: stored first, the bootstrap policy after. */
  readonly rbac: RbacObjects;
  /** What token verification looks up. */
  readonly lookup: TokenObjectLookup;

  constructor(options: IdentityHandlerOptions) {
    this.store = options.store;
    this.tokens = options.tokens;
    this.now = options.now;
    this.staticUser = options.staticUser ?? (() => undefined);
    const store = this.store;
    const objects = (resource: string, namespace?: string) =>
      store.list(resource, namespace === undefined ? {} : { namespace }).items.map((s) => s.object);
    this.rbac = {
      clusterRoleBindings: () => {
        const stored = objects(clusterRoleBindingType.resource);
        const names = new Set(stored.map((b) => strAt(objAt(b, 'metadata'), 'name')));
        return [
          ...stored,
          ...BOOTSTRAP_CLUSTER_ROLE_BINDINGS.filter(
            (b) => !names.has(strAt(objAt(b, 'metadata'), 'name')),
          ),
        ];
      },
      roleBindings: (namespace) => objects(roleBindingType.resource, namespace),
      clusterRole: (name) =>
        store.get(clusterRoleType.resource, name)?.object ?? BOOTSTRAP_CLUSTER_ROLES.get(name),
      role: (namespace, name) =>
        store.get(rbacRoleType.resource, objectKey(namespace, name))?.object,
    };
    this.lookup = {
      serviceAccount: (namespace, name) =>
        storedRef(store.get(serviceAccountType.resource, objectKey(namespace, name))),
      pod: (namespace, name) => storedRef(store.get(podType.resource, objectKey(namespace, name))),
      node: (name) => storedRef(store.get(nodeType.resource, name)),
    };
  }

  /** Decides a request's (or a review's) attributes with the privileged group and RBAC. */
  authorize(attrs: AuthorizationAttributes): { allowed: boolean; reason: string } {
    return authorize(attrs, this.rbac);
  }

  handle(route: IdentityRoute, user: UserInfo, body: Buffer, contentType: string): IdentityResult {
    if (
      contentType !== '' &&
      contentType !== 'application/json' &&
      contentType !== 'application/yaml'
    )
      throw apiErrors.unsupportedMediaType(ACCEPTED);
    const kind = {
      token: 'TokenRequest',
      tokenreview: 'TokenReview',
      selfsubjectreview: 'SelfSubjectReview',
      subjectaccessreview: 'SubjectAccessReview',
      selfsubjectaccessreview: 'SelfSubjectAccessReview',
      localsubjectaccessreview: 'LocalSubjectAccessReview',
    }[route.kind];
    const parsed = parseBody(body, contentType, kind);
    if (!isJsonObject(parsed))
      throw apiErrors.badRequest(`the object provided is unrecognized (must be of type ${kind})`);
    const apiVersion = route.kind === 'token' ? 'authentication.k8s.io/v1' : `${route.group}/v1`;
    const spec = objAt(parsed, 'spec') ?? {};
    const meta = objAt(parsed, 'metadata') ?? {};
    const head = (metadata: JsonObject): JsonObject => ({
      kind,
      apiVersion,
      metadata: { ...metadata, creationTimestamp: metadata.creationTimestamp ?? null },
    });
    switch (route.kind) {
      case 'token':
        return { code: 201, body: { ...head(meta), ...this.tokenRequest(route, spec, meta) } };
      case 'tokenreview':
        return { code: 201, body: { ...head(meta), ...this.tokenReview(spec) } };
      case 'selfsubjectreview':
        // selfsubjectreview/rest.go: a new object stamped now, whatever was sent.
        return {
          code: 201,
          body: {
            ...head({ creationTimestamp: formatTime(this.now()) }),
            status: { userInfo: userInfoJson(user) },
          },
        };
      default:
        return { code: 201, body: { ...head(meta), ...this.accessReview(route, spec, user) } };
    }
  }

  private tokenRequest(route: IdentityRoute, spec: JsonObject, meta: JsonObject): JsonObject {
    const expirationSeconds =
      typeof spec.expirationSeconds === 'number' ? spec.expirationSeconds : DEFAULT_TOKEN_SECONDS;
    // `ValidateTokenRequest`, before anything is looked up.
    const errs: FieldError[] = [];
    const path = FieldPath.root('spec').child('expirationSeconds');
    if (expirationSeconds < TOKEN_REQUEST_MIN_SECONDS)
      errs.push(
        fieldError.invalid(
          path,
          expirationSeconds,
          'may not specify a duration less than 10 minutes',
        ),
      );
    if (expirationSeconds > TOKEN_REQUEST_MAX_SECONDS)
      errs.push(
        fieldError.invalid(
          path,
          expirationSeconds,
          'may not specify a duration larger than 2^32 seconds',
        ),
      );
    if (errs.length > 0)
      throw apiErrors.invalid({ group: 'authentication.k8s.io', name: 'TokenRequest' }, '', errs);
    const sa = this.store.get(serviceAccountType.resource, objectKey(route.namespace, route.name));
    if (sa === undefined)
      throw apiErrors.notFound({ group: '', name: 'serviceaccounts' }, route.name);
    const audiences = stringList(spec.audiences);
    const effectiveAudiences = audiences.length === 0 ? [...this.tokens.apiAudiences] : audiences;
    const ref = objAt(spec, 'boundObjectRef');
    let pod: { name: string; uid: string } | undefined;
    let node: { name: string; uid: string } | undefined;
    if (ref !== undefined) {
      const refKind = strAt(ref, 'kind') ?? '';
      const refApiVersion = strAt(ref, 'apiVersion') ?? '';
      const refName = strAt(ref, 'name') ?? '';
      const refUid = strAt(ref, 'uid') ?? '';
      const refGroup = refApiVersion.includes('/') ? (refApiVersion.split('/')[0] ?? '') : '';
      let uid: string;
      if (refGroup === '' && refKind === 'Pod') {
        const stored = this.store.get(podType.resource, objectKey(route.namespace, refName));
        if (stored === undefined) throw apiErrors.notFound({ group: '', name: 'pods' }, refName);
        const podSa = strAt(objAt(stored.object, 'spec'), 'serviceAccountName') ?? '';
        if (podSa !== route.name)
          throw apiErrors.badRequest(
            `cannot bind token for serviceaccount ${JSON.stringify(route.name)} to pod running with different serviceaccount name.`,
          );
        uid = stored.uid;
        pod = { name: refName, uid };
        const nodeName = strAt(objAt(stored.object, 'spec'), 'nodeName') ?? '';
        const storedNode =
          nodeName === '' ? undefined : this.store.get(nodeType.resource, nodeName);
        if (storedNode !== undefined) node = { name: nodeName, uid: storedNode.uid };
      } else if (refGroup === '' && refKind === 'Node') {
        const stored = this.store.get(nodeType.resource, refName);
        if (stored === undefined) throw apiErrors.notFound({ group: '', name: 'nodes' }, refName);
        uid = stored.uid;
        node = { name: refName, uid };
      } else {
        const version = refApiVersion.includes('/') ? refApiVersion.split('/')[1] : refApiVersion;
        throw apiErrors.badRequest(
          `cannot bind token to object of type ${refGroup}/${version ?? ''}, Kind=${refKind}`,
        );
      }
      if (refUid !== '' && refUid !== uid)
        throw apiErrors.conflict(
          { group: refGroup, name: refKind },
          refName,
          `the UID in the bound object reference (${refUid}) does not match the UID in record. The object might have been deleted and then recreated`,
        );
    }
    const nowMs = this.now();
    const nowSeconds = Math.floor(nowMs / 1000);
    const token = this.tokens.issue({
      namespace: route.namespace,
      serviceAccount: { name: route.name, uid: sa.uid },
      audiences: effectiveAudiences,
      expirationSeconds,
      nowSeconds,
      ...(pod === undefined ? {} : { pod }),
      ...(node === undefined ? {} : { node }),
    });
    const outSpec: JsonObject = { audiences: effectiveAudiences, expirationSeconds };
    if (ref !== undefined) outSpec.boundObjectRef = ref;
    return {
      metadata: {
        name: strAt(meta, 'name') ?? route.name,
        namespace: strAt(meta, 'namespace') ?? route.namespace,
        creationTimestamp: formatTime(nowSeconds * 1000),
      },
      spec: outSpec,
      status: {
        token,
        expirationTimestamp: formatTime((nowSeconds + expirationSeconds) * 1000),
      },
    };
  }

  private tokenReview(spec: JsonObject): JsonObject {
    const token = strAt(spec, 'token') ?? '';
    if (token === '')
      throw apiErrors.badRequest('token is required for TokenReview in authentication');
    const audiences = stringList(spec.audiences);
    const outSpec: JsonObject = { token };
    if (audiences.length > 0) outSpec.audiences = audiences;
    const result = this.tokens.verify(token, audiences, this.now(), this.lookup);
    const staticUser = result.ok || result.error !== undefined ? undefined : this.staticUser(token);
    if (staticUser !== undefined) {
      // `WrapAudienceAgnosticToken`: the requested audiences (the API's when none) met by the API's.
      const target = audiences.length === 0 ? this.tokens.apiAudiences : audiences;
      const granted = this.tokens.apiAudiences.filter((a) => target.includes(a));
      if (granted.length > 0)
        return {
          spec: outSpec,
          status: {
            authenticated: true,
            user: userInfoJson({
              ...staticUser,
              groups: [...staticUser.groups, 'system:authenticated'],
            }),
            audiences: granted,
          },
        };
    }
    if (!result.ok)
      return { spec: outSpec, status: { user: {}, error: result.error ?? 'invalid bearer token' } };
    return {
      spec: outSpec,
      status: {
        authenticated: true,
        user: userInfoJson(result.user),
        audiences: [...result.audiences],
      },
    };
  }

  private accessReview(route: IdentityRoute, spec: JsonObject, requester: UserInfo): JsonObject {
    const resourceAttributes = objAt(spec, 'resourceAttributes');
    const nonResourceAttributes = objAt(spec, 'nonResourceAttributes');
    const self = route.kind === 'selfsubjectaccessreview';
    const errs: FieldError[] = [];
    const specPath = FieldPath.root('spec');
    if (resourceAttributes !== undefined && nonResourceAttributes !== undefined)
      errs.push(
        fieldError.invalid(
          specPath.child('nonResourceAttributes'),
          internalNonResourceAttributes(nonResourceAttributes),
          'cannot be specified in combination with resourceAttributes',
        ),
      );
    if (resourceAttributes === undefined && nonResourceAttributes === undefined)
      errs.push(
        fieldError.invalid(
          specPath.child('resourceAttributes'),
          // field.Invalid prints a nil pointer as the string "null".
          'null',
          'exactly one of nonResourceAttributes or resourceAttributes must be specified',
        ),
      );
    const user: UserInfo = self
      ? requester
      : {
          name: strAt(spec, 'user') ?? '',
          uid: strAt(spec, 'uid') ?? '',
          groups: stringList(spec.groups),
          extra: extraOf(spec.extra),
        };
    if (!self && user.name === '' && user.groups.length === 0)
      errs.push(
        fieldError.invalid(
          specPath.child('user'),
          '',
          'at least one of user or group must be specified',
        ),
      );
    if (
      route.kind === 'localsubjectaccessreview' &&
      resourceAttributes !== undefined &&
      (strAt(resourceAttributes, 'namespace') ?? '') !== route.namespace
    )
      errs.push(
        fieldError.invalid(
          specPath.child('resourceAttributes', 'namespace'),
          strAt(resourceAttributes, 'namespace') ?? '',
          'must match metadata.namespace',
        ),
      );
    if (route.kind === 'localsubjectaccessreview' && nonResourceAttributes !== undefined)
      errs.push(
        fieldError.invalid(
          specPath.child('nonResourceAttributes'),
          internalNonResourceAttributes(nonResourceAttributes),
          'disallowed on this kind of request',
        ),
      );
    if (errs.length > 0)
      throw apiErrors.invalid(
        {
          group: 'authorization.k8s.io',
          name: {
            subjectaccessreview: 'SubjectAccessReview',
            selfsubjectaccessreview: 'SelfSubjectAccessReview',
            localsubjectaccessreview: 'LocalSubjectAccessReview',
          }[route.kind as 'subjectaccessreview'],
        },
        '',
        errs,
      );
    const attrs: AuthorizationAttributes =
      resourceAttributes !== undefined
        ? {
            user,
            verb: strAt(resourceAttributes, 'verb') ?? '',
            resourceRequest: true,
            namespace: strAt(resourceAttributes, 'namespace') ?? '',
            apiGroup: strAt(resourceAttributes, 'group') ?? '',
            resource: strAt(resourceAttributes, 'resource') ?? '',
            subresource: strAt(resourceAttributes, 'subresource') ?? '',
            name: strAt(resourceAttributes, 'name') ?? '',
            path: '',
          }
        : {
            user,
            verb: strAt(nonResourceAttributes, 'verb') ?? '',
            resourceRequest: false,
            namespace: '',
            apiGroup: '',
            resource: '',
            subresource: '',
            name: '',
            path: strAt(nonResourceAttributes, 'path') ?? '',
          };
    const decision = this.authorize(attrs);
    const status: JsonObject = { allowed: decision.allowed };
    if (decision.reason !== '') status.reason = decision.reason;
    return { spec, status };
  }
}

/**
 * How `field.Invalid` prints the internal `NonResourceAttributes`: `json.Marshal` of a struct
 * without json tags, so with Go's field names, in struct order.
 */
function internalNonResourceAttributes(attrs: JsonObject): JsonObject {
  return { Path: strAt(attrs, 'path') ?? '', Verb: strAt(attrs, 'verb') ?? '' };
}

function extraOf(value: JsonValue | undefined): Record<string, string[]> | undefined {
  if (!isJsonObject(value ?? null)) return undefined;
  const out: Record<string, string[]> = {};
  for (const [key, values] of Object.entries(value as JsonObject)) out[key] = stringList(values);
  return out;
}

/** authentication/v1 `UserInfo` (every field omitempty; extra keys sorted as Go's map). */
export function userInfoJson(user: UserInfo): JsonObject {
  const out: JsonObject = {};
  if (user.name !== '') out.username = user.name;
  if (user.uid !== '') out.uid = user.uid;
  if (user.groups.length > 0) out.groups = [...user.groups];
  const extra = user.extra ?? {};
  const keys = Object.keys(extra).sort();
  if (keys.length > 0) out.extra = Object.fromEntries(keys.map((k) => [k, [...(extra[k] ?? [])]]));
  return out;
}
