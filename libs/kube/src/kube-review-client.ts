import { classifyKubeError } from './classify-kube-error';
import { callKube } from './kube-request';
import type { OnKubeRequest } from './kube-request';
import type { KubeTransport } from './kube-transport';
import { MalformedResponseError } from './resource-slice-json';

export interface KubeReviewClientOptions {
  /** The connection to the API server (not closed here). */
  transport: KubeTransport;
  /**
   * Called once per API request with the verb (`create`), the resource (`tokenreviews`,
   * `subjectaccessreviews`) and the HTTP status, or 'error' when no response came.
   */
  onRequest?: OnKubeRequest;
  /**
   * Per-request timeout, ms. A caller waits for the review before it answers its own client,
   * so this is short. @defaultValue 5000
   */
  requestTimeoutMs?: number;
}

/** `status.user` of a TokenReview (authentication.k8s.io/v1 UserInfo). */
export interface ReviewedUser {
  /** e.g. `system:serviceaccount:<namespace>:<name>`. */
  username: string;
  uid: string;
  groups: string[];
  /** e.g. `authentication.kubernetes.io/node-name` → [node]. */
  extra: Record<string, string[]>;
}

/** What a TokenReview answered. */
export type TokenReviewResult =
  | { authenticated: true; user: ReviewedUser; audiences: string[] }
  | { authenticated: false; error: string };

/** `spec.resourceAttributes` of a SubjectAccessReview. */
export interface ResourceAttributes {
  verb: string;
  group: string;
  resource: string;
  /** Empty or absent: every object of the resource. */
  name?: string;
  namespace?: string;
  subresource?: string;
}

/** What a SubjectAccessReview answered. */
export interface AccessReviewResult {
  allowed: boolean;
  /** The authorizer's reason, possibly empty. */
  reason: string;
}

const TOKEN_REVIEWS = '/apis/authentication.k8s.io/v1/tokenreviews';
const SUBJECT_ACCESS_REVIEWS = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

/**
 * Asks the API server who a bearer token belongs to (`TokenReview`) and whether a user may do
 * something (`SubjectAccessReview`), as kube-apiserver's webhook authenticator and authorizer
 * clients do. Needs RBAC `create` on `tokenreviews.authentication.k8s.io` and
 * `subjectaccessreviews.authorization.k8s.io`. Throws only classified errors (see
 * {@link classifyKubeError}); a review that could not be made is never an answer.
 */
export class KubeReviewClient {
  private readonly transport: KubeTransport;
  private readonly requestTimeoutMs: number;
  private readonly onRequest: OnKubeRequest | undefined;

  constructor(options: KubeReviewClientOptions) {
    this.transport = options.transport;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
    this.onRequest = options.onRequest;
  }

  /**
   * Reviews `token` for `audiences` (empty: the API server's own audiences). An unknown,
   * expired, revoked or wrong-audience token is `{ authenticated: false }`, not an error.
   */
  async reviewToken(token: string, audiences: readonly string[]): Promise<TokenReviewResult> {
    const context = 'create TokenReview';
    const json = await callKube({
      transport: this.transport,
      timeoutMs: this.requestTimeoutMs,
      onRequest: this.onRequest,
      verb: 'create',
      resource: 'tokenreviews',
      context,
      request: {
        method: 'POST',
        path: TOKEN_REVIEWS,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(audiences.length === 0 ? {} : { audiences: [...audiences] }) },
        },
      },
    });
    try {
      return tokenReviewResultOf(json);
    } catch (error) {
      throw classifyKubeError(error, context);
    }
  }

  /** Asks whether `user` may do `attributes`. */
  async reviewAccess(
    user: ReviewedUser,
    attributes: ResourceAttributes,
  ): Promise<AccessReviewResult> {
    const context = `create SubjectAccessReview (${attributes.verb} ${attributes.resource}.${attributes.group})`;
    const json = await callKube({
      transport: this.transport,
      timeoutMs: this.requestTimeoutMs,
      onRequest: this.onRequest,
      verb: 'create',
      resource: 'subjectaccessreviews',
      context,
      request: {
        method: 'POST',
        path: SUBJECT_ACCESS_REVIEWS,
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            resourceAttributes: attributes,
          },
        },
      },
    });
    try {
      return accessReviewResultOf(json);
    } catch (error) {
      throw classifyKubeError(error, context);
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringsOf(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new MalformedResponseError(`${field} is not a list of strings`);
  }
  return value;
}

function tokenReviewResultOf(json: unknown): TokenReviewResult {
  const status = isRecord(json) ? json['status'] : undefined;
  if (!isRecord(status)) throw new MalformedResponseError('a TokenReview without status');
  if (status['authenticated'] !== true) {
    const error = status['error'];
    return { authenticated: false, error: typeof error === 'string' ? error : '' };
  }
  const user = status['user'];
  if (!isRecord(user) || typeof user['username'] !== 'string' || user['username'] === '') {
    throw new MalformedResponseError('an authenticated TokenReview without status.user.username');
  }
  const extra: Record<string, string[]> = {};
  const rawExtra = user['extra'];
  if (rawExtra !== undefined && rawExtra !== null) {
    if (!isRecord(rawExtra)) throw new MalformedResponseError('status.user.extra is not a map');
    for (const [key, values] of Object.entries(rawExtra)) {
      extra[key] = stringsOf(values, `status.user.extra[${key}]`);
    }
  }
  return {
    authenticated: true,
    user: {
      username: user['username'],
      uid: typeof user['uid'] === 'string' ? user['uid'] : '',
      groups: stringsOf(user['groups'], 'status.user.groups'),
      extra,
    },
    audiences: stringsOf(status['audiences'], 'status.audiences'),
  };
}

function accessReviewResultOf(json: unknown): AccessReviewResult {
  const status = isRecord(json) ? json['status'] : undefined;
  if (!isRecord(status)) throw new MalformedResponseError('a SubjectAccessReview without status');
  const reason = typeof status['reason'] === 'string' ? status['reason'] : '';
  // `denied` without `allowed` is an explicit no; neither is "no opinion", which is also a no.
  return { allowed: status['allowed'] === true && status['denied'] !== true, reason };
}
