import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { nodeNameProblem } from '@slicekeeper/contracts';
import { TerminalError } from '@slicekeeper/errors';

/** Shortest accepted token, characters: 32 random characters are beyond guessing. */
export const MIN_TOKEN_LENGTH = 32;

/** Characters of an RFC 6750 bearer token (`b64token`). */
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * A Kubernetes user as a TokenReview names it (authentication.k8s.io/v1 `UserInfo`); what a
 * SubjectAccessReview is asked about.
 */
export interface KubernetesUser {
  /** e.g. `system:serviceaccount:<namespace>:<name>`. */
  readonly username: string;
  readonly uid: string;
  readonly groups: readonly string[];
  /** e.g. `authentication.kubernetes.io/node-name` → [node]. */
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** Which keys a principal may act on. */
export type PrincipalScope =
  /** A static admin token: any node, and cluster-scoped plugins (empty node). */
  | { readonly kind: 'admin' }
  /** A node-bound static token, or a Kubernetes token with a node claim: its own node only. */
  | { readonly kind: 'node'; readonly node: string }
  /** A Kubernetes token without a node claim: cluster-scoped plugins (empty node) only. */
  | { readonly kind: 'cluster' };

/** Who a request acts as, after authentication. */
export interface Principal {
  /**
   * The token's name from the token file, or the Kubernetes username: logged and rate-limited
   * on, never the token.
   */
  readonly name: string;
  readonly scope: PrincipalScope;
  /**
   * Set for a Kubernetes identity, whose every action is also authorized by a
   * SubjectAccessReview; absent for a static token, whose scope is all there is.
   */
  readonly user?: KubernetesUser;
}

/**
 * The token of an `Authorization: Bearer <token>` header value, or undefined when the header is
 * missing, of another scheme, or not an RFC 6750 token.
 */
export function bearerTokenOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer ([^\s]+)$/i.exec(header);
  const token = match?.[1];
  return token === undefined || !TOKEN.test(token) ? undefined : token;
}

const tokenEntrySchema = z.discriminatedUnion('role', [
  z
    .object({
      name: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/, 'must be a DNS label'),
      token: z.string(),
      role: z.literal('admin'),
    })
    .strict(),
  z
    .object({
      name: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/, 'must be a DNS label'),
      token: z.string(),
      role: z.literal('node'),
      node: z.string().min(1),
    })
    .strict(),
]);

/**
 * The token file: JSON `{ "tokens": [ { "name", "token", "role": "admin" } |
 * { "name", "token", "role": "node", "node" } ] }`. A node-bound token is the equivalent of
 * upstream's node-bound service-account token: it can only manage its own node's plugins.
 */
export const tokenFileSchema = z.object({ tokens: z.array(tokenEntrySchema) }).strict();
export type TokenFile = z.infer<typeof tokenFileSchema>;

/**
 * Authenticates bearer tokens and decides what their holders may do. Tokens are kept only as
 * SHA-256 digests and looked up by the digest of the presented token, so neither the lookup's
 * timing nor a heap dump gives a token away.
 */
export class TokenAuthority {
  private readonly byDigest: ReadonlyMap<string, Principal>;

  constructor(file: TokenFile) {
    const problems: string[] = [];
    const byDigest = new Map<string, Principal>();
    const names = new Set<string>();
    file.tokens.forEach((entry, index) => {
      const where = `tokens[${index}] (${entry.name})`;
      if (entry.token.length < MIN_TOKEN_LENGTH) {
        problems.push(`${where}: token must be at least ${MIN_TOKEN_LENGTH} characters`);
      } else if (!TOKEN.test(entry.token)) {
        problems.push(`${where}: token must use only the characters of an RFC 6750 bearer token`);
      }
      if (entry.role === 'node') {
        const problem = nodeNameProblem(entry.node);
        if (problem !== undefined) problems.push(`${where}: node: ${problem}`);
      }
      if (names.has(entry.name)) problems.push(`${where}: duplicate name`);
      names.add(entry.name);
      const key = tokenDigest(entry.token);
      if (byDigest.has(key)) problems.push(`${where}: the same token is listed twice`);
      byDigest.set(key, {
        name: entry.name,
        scope: entry.role === 'admin' ? { kind: 'admin' } : { kind: 'node', node: entry.node },
      });
    });
    if (problems.length > 0) {
      throw new TerminalError(`invalid token file: ${problems.join('; ')}`, {
        code: 'invalid-config',
      });
    }
    this.byDigest = byDigest;
  }

  /** Parses a token file's text; throws a `TerminalError` naming every problem. */
  static parse(text: string): TokenAuthority {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new TerminalError('invalid token file: not JSON', {
        code: 'invalid-config',
        cause: error,
      });
    }
    const parsed = tokenFileSchema.safeParse(json);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
      throw new TerminalError(`invalid token file: ${problems.join('; ')}`, {
        code: 'invalid-config',
      });
    }
    return new TokenAuthority(parsed.data);
  }

  /** Reads and parses a token file. */
  static async load(path: string): Promise<TokenAuthority> {
    return TokenAuthority.parse(await readFile(path, 'utf8'));
  }

  /**
   * The principal of an `Authorization` header value, or undefined when it is missing, not a
   * bearer token, or unknown. The reason is deliberately not told apart.
   */
  authenticate(header: string | undefined): Principal | undefined {
    const token = bearerTokenOf(header);
    return token === undefined ? undefined : this.principalOf(token);
  }

  /** The principal of a bearer token, or undefined when it is not in the file. */
  principalOf(token: string): Principal | undefined {
    return this.byDigest.get(tokenDigest(token));
  }
}

/** Whether `principal` may add, remove or read plugins of `node` (empty: cluster-scoped). */
export function mayAccessNode(principal: Principal, node: string): boolean {
  switch (principal.scope.kind) {
    case 'admin':
      return true;
    case 'node':
      return principal.scope.node === node;
    case 'cluster':
      return node === '';
  }
}

/** SHA-256 of a token, hex: what tokens are kept and cached as, never the token itself. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
