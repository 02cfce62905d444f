import type { Clock } from '@slicekeeper/time';
import { ExpiringCache } from './expiring-cache';
import { tokenDigest } from './token-authority';
import type { KubernetesUser, Principal } from './token-authority';

/** The `extra` key of a ServiceAccount token's node claim (kube-apiserver ≥ 1.30). */
export const NODE_NAME_CLAIM = 'authentication.kubernetes.io/node-name';

/** slicekeeper's own API group, whose `plugins` resource RBAC grants registrations on. */
export const PLUGINS_GROUP = 'slicekeeper.dev';
export const PLUGINS_RESOURCE = 'plugins';

/**
 * What a TokenReview answers, as libs/kube's `KubeReviewClient` gives it. A port: admission
 * holds no Kubernetes connection, main.ts plugs the client in and tests a double.
 */
export interface TokenReviewer {
  reviewToken(
    token: string,
    audiences: readonly string[],
  ): Promise<
    | { authenticated: true; user: KubernetesUser; audiences: readonly string[] }
    | { authenticated: false; error: string }
  >;
}

/** What a SubjectAccessReview answers (the `KubeReviewClient` port). */
export interface AccessReviewer {
  reviewAccess(
    user: KubernetesUser,
    attributes: { verb: string; group: string; resource: string; name?: string },
  ): Promise<{ allowed: boolean; reason: string }>;
}

/** The outcome of authenticating a token with the API server. */
export type KubeAuthentication =
  | { kind: 'authenticated'; principal: Principal }
  /** The API server says no (unknown, expired, revoked, wrong audience): 401. */
  | { kind: 'unauthenticated'; reason: string }
  /** No answer (API server down, 5xx, timeout): 503, never an accept. */
  | { kind: 'unavailable'; reason: string };

export interface KubernetesAuthenticatorOptions {
  reviewer: TokenReviewer;
  /** Audiences a token must have been issued for; one is enough. @defaultValue ['slicekeeper'] */
  audiences?: readonly string[];
  /**
   * How long an answer is reused, ms; never beyond the token's own `exp`. A revoked token (its
   * ServiceAccount, Pod or Node deleted) keeps working at most this long. @defaultValue 30000
   */
  ttlMs?: number;
  /**
   * How long a refusal is reused, ms, so that a flood of bad tokens does not become a flood of
   * TokenReviews. @defaultValue 5000
   */
  refusalTtlMs?: number;
  /** Most tokens remembered (least recently used forgotten first). @defaultValue 10000 */
  maxEntries?: number;
  clock: Pick<Clock, 'now'>;
}

type CachedReview =
  | { kind: 'authenticated'; principal: Principal }
  | { kind: 'unauthenticated'; reason: string };

/**
 * Authenticates bearer tokens with TokenReview, as kube-apiserver's webhook token authenticator
 * does: answers are cached by the token's SHA-256 (never the token), bounded in number and in
 * time by min(ttl, the token's `exp`). A review that could not be made fails closed and is not
 * cached. The node a principal may act on comes from the token's node claim.
 */
export class KubernetesAuthenticator {
  private readonly reviewer: TokenReviewer;
  private readonly audiences: readonly string[];
  private readonly ttlMs: number;
  private readonly refusalTtlMs: number;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly cache: ExpiringCache<CachedReview>;

  constructor(options: KubernetesAuthenticatorOptions) {
    this.reviewer = options.reviewer;
    this.audiences = options.audiences ?? ['slicekeeper'];
    this.ttlMs = options.ttlMs ?? 30_000;
    this.refusalTtlMs = options.refusalTtlMs ?? 5_000;
    this.clock = options.clock;
    this.cache = new ExpiringCache({ maxEntries: options.maxEntries ?? 10_000, clock: this.clock });
  }

  /** Tokens whose answer is held (expired ones not yet dropped included). */
  get cachedTokens(): number {
    return this.cache.size;
  }

  async authenticate(token: string): Promise<KubeAuthentication> {
    const key = tokenDigest(token);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    let review;
    try {
      review = await this.reviewer.reviewToken(token, this.audiences);
    } catch (error) {
      return {
        kind: 'unavailable',
        reason: `TokenReview failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    const now = this.clock.now();
    const outcome = outcomeOf(review, this.audiences);
    if (outcome.kind === 'authenticated') {
      const expiry = expiryOf(token);
      this.cache.set(key, outcome, Math.min(now + this.ttlMs, expiry ?? Infinity));
    } else {
      this.cache.set(key, outcome, now + this.refusalTtlMs);
    }
    return outcome;
  }
}

function outcomeOf(
  review: Awaited<ReturnType<TokenReviewer['reviewToken']>>,
  audiences: readonly string[],
): CachedReview {
  if (!review.authenticated) {
    return {
      kind: 'unauthenticated',
      reason: review.error === '' ? 'the token was not accepted' : review.error,
    };
  }
  // The API server answers the requested audiences the token has; none is a token for
  // someone else (kube-apiserver's webhook authenticator checks the same).
  if (audiences.length > 0 && !review.audiences.some((a) => audiences.includes(a))) {
    return {
      kind: 'unauthenticated',
      reason: `the token is not for audience ${audiences.map((a) => `"${a}"`).join(' or ')}`,
    };
  }
  const { user } = review;
  const nodes = user.extra[NODE_NAME_CLAIM] ?? [];
  // Never widen: a claim naming several nodes is no node at all, not every node or the cluster.
  if (nodes.length > 1) {
    return {
      kind: 'unauthenticated',
      reason: `the token's ${NODE_NAME_CLAIM} claim names ${nodes.length} nodes`,
    };
  }
  const node = nodes[0];
  return {
    kind: 'authenticated',
    principal: {
      name: user.username,
      scope: node === undefined || node === '' ? { kind: 'cluster' } : { kind: 'node', node },
      user,
    },
  };
}

/**
 * The `exp` claim of a JWT, epoch ms, or undefined for a token that is no JWT or has none. Read
 * unverified, only to bound how long a verified answer is reused: the TokenReview is what
 * verifies the signature.
 */
export function expiryOf(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (typeof claims !== 'object' || claims === null || !('exp' in claims)) return undefined;
    return typeof claims.exp === 'number' && Number.isFinite(claims.exp)
      ? claims.exp * 1000
      : undefined;
  } catch {
    return undefined;
  }
}

/** The verbs slicekeeper asks about: create on POST, delete on DELETE, get on reads. */
export type PluginVerb = 'create' | 'delete' | 'get';

/** The outcome of authorizing a Kubernetes identity. */
export type KubeAuthorization =
  | { kind: 'allowed' }
  /** RBAC (or another authorizer) says no: 403. */
  | { kind: 'denied'; reason: string }
  /** No answer: 503, never an accept. */
  | { kind: 'unavailable'; reason: string };

export interface KubernetesAuthorizerOptions {
  reviewer: AccessReviewer;
  /**
   * How long an answer is reused, ms: a revoked grant keeps working, and a new grant stays
   * unseen, at most this long. @defaultValue 5000
   */
  ttlMs?: number;
  /** Most answers remembered. @defaultValue 10000 */
  maxEntries?: number;
  clock: Pick<Clock, 'now'>;
}

/**
 * Asks SubjectAccessReview whether a Kubernetes identity may do `verb` on the `plugins` of
 * `slicekeeper.dev` named after a driver, so that cluster RBAC — a ClusterRole with
 * `resourceNames` — says who may register which driver. Answers are cached briefly; a review
 * that could not be made fails closed and is not cached.
 */
export class KubernetesAuthorizer {
  private readonly reviewer: AccessReviewer;
  private readonly ttlMs: number;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly cache: ExpiringCache<KubeAuthorization>;

  constructor(options: KubernetesAuthorizerOptions) {
    this.reviewer = options.reviewer;
    this.ttlMs = options.ttlMs ?? 5_000;
    this.clock = options.clock;
    this.cache = new ExpiringCache({ maxEntries: options.maxEntries ?? 10_000, clock: this.clock });
  }

  /** Whether `user` may do `verb` on the plugin of `driver` (undefined: on every plugin). */
  async authorize(
    user: KubernetesUser,
    verb: PluginVerb,
    driver: string | undefined,
  ): Promise<KubeAuthorization> {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, driver]);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const target = driver === undefined ? 'every plugin' : `plugin "${driver}"`;
    let review;
    try {
      review = await this.reviewer.reviewAccess(user, {
        verb,
        group: PLUGINS_GROUP,
        resource: PLUGINS_RESOURCE,
        ...(driver === undefined ? {} : { name: driver }),
      });
    } catch (error) {
      return {
        kind: 'unavailable',
        reason: `SubjectAccessReview for ${verb} on ${target} failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    const outcome: KubeAuthorization = review.allowed
      ? { kind: 'allowed' }
      : {
          kind: 'denied',
          reason:
            `${user.username} may not ${verb} ${PLUGINS_RESOURCE}.${PLUGINS_GROUP} ${driver === undefined ? '(all)' : `"${driver}"`}` +
            (review.reason === '' ? '' : `: ${review.reason}`),
        };
    this.cache.set(key, outcome, this.clock.now() + this.ttlMs);
    return outcome;
  }
}
