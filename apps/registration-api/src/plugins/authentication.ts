import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { NODE_NAME_CLAIM, bearerTokenOf, mayAccessNode } from '@slicekeeper/admission';
import type {
  KubernetesAuthenticator,
  KubernetesAuthorizer,
  PluginVerb,
  Principal,
  TokenAuthority,
} from '@slicekeeper/admission';
import { HttpError } from '../http-error';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request acts as; set by the authentication hook of the /v1 routes. */
    principal: Principal | undefined;
  }
}

/** Kubernetes identities: ServiceAccount tokens checked by TokenReview, actions by SAR. */
export interface KubernetesIdentities {
  authenticator: KubernetesAuthenticator;
  authorizer: KubernetesAuthorizer;
}

/** At least one authenticator; with both, the token file is asked first (no API round trip). */
export interface AuthenticationOptions {
  tokens?: TokenAuthority | undefined;
  kubernetes?: KubernetesIdentities | undefined;
}

/** How long a client should wait before retrying a request that found reviews unavailable, s. */
const REVIEW_RETRY_AFTER_S = 1;

function unauthorized(reply: FastifyReply): HttpError {
  void reply.header('www-authenticate', 'Bearer realm="slicekeeper"');
  return new HttpError(401, 'unauthorized', 'a valid bearer token is required');
}

/**
 * Requires a bearer token on every route of the scope it is registered in (401 before the body
 * is even read) — a static token from the token file or a Kubernetes ServiceAccount token that
 * TokenReview accepts — and logs the principal's name, never the token, on the request's log
 * lines. When TokenReview cannot be asked the answer is 503 (`authentication-unavailable`),
 * never an accept.
 */
export const authentication = fp<AuthenticationOptions>(
  (app: FastifyInstance, options: AuthenticationOptions) => {
    const { tokens, kubernetes } = options;
    app.decorateRequest('principal', undefined);
    app.decorate('kubernetesAuthorizer', kubernetes?.authorizer);
    app.addHook('onRequest', async (request, reply) => {
      const token = bearerTokenOf(request.headers.authorization);
      if (token === undefined) throw unauthorized(reply);
      let principal = tokens?.principalOf(token);
      if (principal === undefined && kubernetes !== undefined) {
        const outcome = await kubernetes.authenticator.authenticate(token);
        switch (outcome.kind) {
          case 'authenticated':
            principal = outcome.principal;
            break;
          case 'unauthenticated':
            request.log.info({ reason: outcome.reason }, 'token refused');
            break;
          case 'unavailable':
            request.log.warn({ reason: outcome.reason }, 'token not reviewed');
            void reply.header('retry-after', String(REVIEW_RETRY_AFTER_S));
            throw new HttpError(
              503,
              'authentication-unavailable',
              'the token could not be checked with the Kubernetes API (TokenReview); retry later',
            );
        }
      }
      if (principal === undefined) throw unauthorized(reply);
      request.principal = principal;
      request.log = request.log.child({ principal: principal.name });
    });
    return Promise.resolve();
  },
  { name: 'authentication' },
);

declare module 'fastify' {
  interface FastifyInstance {
    /** The SubjectAccessReview authorizer of Kubernetes principals, when they are accepted. */
    kubernetesAuthorizer: KubernetesAuthorizer | undefined;
  }
}

/** The request's principal; throws 401 when the route is not behind {@link authentication}. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === undefined) {
    throw new HttpError(401, 'unauthorized', 'a valid bearer token is required');
  }
  return request.principal;
}

/** Why `principal` may not act on `node`, for the 403. */
function nodeRefusal(principal: Principal, node: string): string {
  const target = node === '' ? 'a cluster-scoped plugin (empty node)' : `node "${node}"`;
  switch (principal.scope.kind) {
    case 'admin':
      return '';
    case 'node':
      if (principal.user === undefined) {
        return node === ''
          ? `token "${principal.name}" may only act on its own node; a cluster-scoped plugin (empty node) needs an admin token`
          : `token "${principal.name}" may only act on its own node`;
      }
      return `the token of ${principal.name} is bound to node "${principal.scope.node}" by its ${NODE_NAME_CLAIM} claim; it may not act on ${target}`;
    case 'cluster':
      return `the token of ${principal.name} has no ${NODE_NAME_CLAIM} claim; it may act on cluster-scoped plugins (empty node) only, not on ${target}`;
  }
}

/** Throws 403 unless the request's principal may act on `node`. */
export function authorizeNode(request: FastifyRequest, node: string): Principal {
  const principal = principalOf(request);
  if (!mayAccessNode(principal, node)) {
    throw new HttpError(403, 'forbidden', nodeRefusal(principal, node));
  }
  return principal;
}

/**
 * Throws unless the request's principal may do `verb` on the plugin of `driver` (undefined:
 * every plugin): a Kubernetes principal is asked about with SubjectAccessReview (403 naming the
 * verb and the driver when denied, 503 `authorization-unavailable` when it cannot be asked); a
 * static token's node binding is all there is to it.
 */
export async function authorizeDriver(
  request: FastifyRequest,
  verb: PluginVerb,
  driver: string | undefined,
): Promise<void> {
  const principal = principalOf(request);
  if (principal.user === undefined) return;
  const authorizer = request.server.kubernetesAuthorizer;
  if (authorizer === undefined) {
    throw new HttpError(403, 'forbidden', 'Kubernetes identities are not accepted here');
  }
  const outcome = await authorizer.authorize(principal.user, verb, driver);
  switch (outcome.kind) {
    case 'allowed':
      return;
    case 'denied':
      throw new HttpError(403, 'forbidden', outcome.reason);
    case 'unavailable':
      request.log.warn({ reason: outcome.reason }, 'access not reviewed');
      throw new HttpError(
        503,
        'authorization-unavailable',
        `whether ${principal.name} may ${verb} ${driver === undefined ? 'plugins' : `plugin "${driver}"`} could not be checked with the Kubernetes API (SubjectAccessReview); retry later`,
      );
  }
}
