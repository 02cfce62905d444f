import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { mayAccessNode } from '@slicekeeper/admission';
import type { Principal, TokenAuthority } from '@slicekeeper/admission';
import { HttpError } from '../http-error';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request acts as; set by the authentication hook of the /v1 routes. */
    principal: Principal | undefined;
  }
}

export interface AuthenticationOptions {
  tokens: TokenAuthority;
}

/**
 * Requires a known bearer token on every route of the scope it is registered in (401 before the
 * body is even read) and logs the token's name, never the token, on the request's log lines.
 */
export const authentication = fp<AuthenticationOptions>(
  (app: FastifyInstance, options: AuthenticationOptions) => {
    app.decorateRequest('principal', undefined);
    app.addHook('onRequest', (request, reply, done) => {
      const principal = options.tokens.authenticate(request.headers.authorization);
      if (principal === undefined) {
        void reply.header('www-authenticate', 'Bearer realm="slicekeeper"');
        done(new HttpError(401, 'unauthorized', 'a valid bearer token is required'));
        return;
      }
      request.principal = principal;
      request.log = request.log.child({ principal: principal.name });
      done();
    });
    return Promise.resolve();
  },
  { name: 'authentication' },
);

/** The request's principal; throws 401 when the route is not behind {@link authentication}. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === undefined) {
    throw new HttpError(401, 'unauthorized', 'a valid bearer token is required');
  }
  return request.principal;
}

/** Throws 403 unless the request's principal may act on `node`. */
export function authorizeNode(request: FastifyRequest, node: string): Principal {
  const principal = principalOf(request);
  if (!mayAccessNode(principal, node)) {
    throw new HttpError(
      403,
      'forbidden',
      node === ''
        ? `token "${principal.name}" may only act on its own node; a cluster-scoped plugin (empty node) needs an admin token`
        : `token "${principal.name}" may only act on its own node`,
    );
  }
  return principal;
}
