import { readFileSync } from 'node:fs';

/**
 * Static bearer-token authentication (kube-apiserver's `--token-auth-file` format) and the two
 * authorization outcomes the emulator models: members of `system:masters` may do anything, every
 * other authenticated user may only read (get, list, watch), as with the `view` role.
 */

export interface User {
  readonly name: string;
  readonly uid: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
  /**
   * Set for a ServiceAccount token's user and an impersonated one: their requests are decided by
   * the authorizer chain (privileged group, then RBAC), not by the two static-token roles.
   */
  readonly rbac?: boolean;
}

export const ANONYMOUS: User = {
  name: 'system:anonymous',
  uid: '',
  groups: ['system:unauthenticated'],
};
/** The identity of requests when no token file is configured: full access. */
export const UNAUTHENTICATED_ADMIN: User = {
  name: 'system:admin',
  uid: '',
  groups: ['system:masters'],
};

/** Splits one CSV line, honouring double quotes (the groups column is quoted). */
function splitCsv(line: string): string[] {
  const out: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] ?? '';
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        current += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else current += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(current);
      current = '';
    } else current += ch;
  }
  out.push(current);
  return out;
}

/** Parses a token file: `token,user,uid[,"group1,group2"]` per line; `#` starts a comment. */
export function parseTokenFile(text: string): Map<string, User> {
  const users = new Map<string, User>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const [token = '', name = '', uid = '', groups = ''] = splitCsv(line).map((s) => s.trim());
    if (token === '' || name === '') {
      throw new Error(`token file line ${index + 1}: needs at least a token and a user name`);
    }
    users.set(token, {
      name,
      uid,
      groups:
        groups === ''
          ? []
          : groups
              .split(',')
              .map((g) => g.trim())
              .filter((g) => g !== ''),
    });
  });
  return users;
}

export function readTokenFile(path: string): Map<string, User> {
  return parseTokenFile(readFileSync(path, 'utf8'));
}

export type Verb =
  | 'get'
  | 'list'
  | 'watch'
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'deletecollection';

const READ_VERBS: ReadonlySet<Verb> = new Set(['get', 'list', 'watch']);

/** Paths `system:public-info-viewer` grants to everyone. */
const PUBLIC_PATHS = new Set(['/version', '/version/', '/healthz', '/livez', '/readyz']);

export function isAdmin(user: User): boolean {
  return user.groups.includes('system:masters');
}

/**
 * Whether a static-token user may do `verb`. Every authenticated user may also create the self
 * reviews (`system:basic-user`): `selfReview` says the request is one.
 */
export function mayAccessResource(user: User, verb: Verb, selfReview = false): boolean {
  if (selfReview && user !== ANONYMOUS) return true;
  if (isAdmin(user)) return true;
  if (user === ANONYMOUS) return false;
  return READ_VERBS.has(verb);
}

export function mayAccessPath(user: User, path: string): boolean {
  if (PUBLIC_PATHS.has(path)) return true;
  return user !== ANONYMOUS;
}

/** The bearer token of an Authorization header, if it carries one. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
}

/** Resolves the user of a request; undefined means 401 (a token that is not in the file). */
export function authenticate(
  tokens: ReadonlyMap<string, User> | undefined,
  authorization: string | undefined,
): User | undefined {
  if (tokens === undefined) return UNAUTHENTICATED_ADMIN;
  if (authorization === undefined || authorization === '') return ANONYMOUS;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (match === null) return undefined;
  return tokens.get(match[1] ?? '');
}
