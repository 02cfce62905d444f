import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign,
  verify,
} from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { isJsonObject } from './object-schema';
import type { JsonObject } from './object-schema';
import type { UserInfo } from './rbac-authorizer';
import { serviceAccountUsername } from './rbac-authorizer';

/**
 * Bound ServiceAccount tokens as kube-apiserver issues and verifies them: RS256 JWTs signed with
 * a key made when the first token is requested (`--service-account-signing-key-file` on a real
 * server), with the claims of pkg/serviceaccount/claims.go `Claims` and the checks of its
 * validator and of pkg/serviceaccount/jwt.go `AuthenticateToken`.
 */

/** kubeadm's `--service-account-issuer`, also the API audience (`--api-audiences` defaults to it). */
export const DEFAULT_SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** go-jose's `DefaultLeeway`: expiry, not-before and deletion are judged with a minute's slack. */
const LEEWAY_SECONDS = 60;

/** `authenticationtokenjwt`/serviceaccount extra keys (staging/.../serviceaccount/util.go). */
export const EXTRA_KEYS = {
  credentialId: 'authentication.kubernetes.io/credential-id',
  nodeName: 'authentication.kubernetes.io/node-name',
  nodeUid: 'authentication.kubernetes.io/node-uid',
  podName: 'authentication.kubernetes.io/pod-name',
  podUid: 'authentication.kubernetes.io/pod-uid',
} as const;

export interface ObjectRef {
  readonly name: string;
  readonly uid: string;
}

/** What a token is issued for. */
export interface TokenClaimsInput {
  readonly namespace: string;
  readonly serviceAccount: ObjectRef;
  readonly audiences: readonly string[];
  readonly expirationSeconds: number;
  readonly pod?: ObjectRef;
  readonly node?: ObjectRef;
  /** Seconds since the epoch. */
  readonly nowSeconds: number;
}

/** What a verifier needs to know about the objects a token names, at verification time. */
export interface TokenObjectLookup {
  /** The ServiceAccount's uid and deletion time (ms), or undefined when it does not exist. */
  serviceAccount(namespace: string, name: string): StoredRef | undefined;
  pod(namespace: string, name: string): StoredRef | undefined;
  node(name: string): StoredRef | undefined;
}

export interface StoredRef {
  readonly uid: string;
  readonly deletionMs?: number;
}

/** A token's verification outcome: the user and the audiences it is good for, or the error text. */
export type TokenVerification =
  | { readonly ok: true; readonly user: UserInfo; readonly audiences: readonly string[] }
  | { readonly ok: false; readonly error: string }
  /** Not a token of this issuer: another authenticator may know it. */
  | { readonly ok: false; readonly error: undefined };

interface KubernetesClaims {
  namespace?: string;
  serviceaccount?: { name?: string; uid?: string };
  pod?: { name?: string; uid?: string };
  node?: { name?: string; uid?: string };
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

function parseSegment(segment: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return isJsonObject(value as JsonObject) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

function refOf(value: unknown): ObjectRef | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, uid } = value as { name?: unknown; uid?: unknown };
  return { name: typeof name === 'string' ? name : '', uid: typeof uid === 'string' ? uid : '' };
}

/** Go's `%q` of a string slice: `["a" "b"]`. */
function quoteList(values: readonly string[]): string {
  return `[${values.map((v) => JSON.stringify(v)).join(' ')}]`;
}

export interface ServiceAccountTokensOptions {
  /** `--service-account-issuer`. @defaultValue {@link DEFAULT_SERVICE_ACCOUNT_ISSUER} */
  issuer?: string;
  /** `--api-audiences`. @defaultValue [issuer] */
  apiAudiences?: readonly string[];
  /**
   * `--service-account-signing-key-file`: a PEM private key (RSA) read on first use, so tokens
   * outlive a restart; written (mode 0600) with a new key when the file does not exist. Unset:
   * a key per process.
   */
  signingKeyFile?: string;
}

/** Signs and verifies the emulator's ServiceAccount tokens. */
export class ServiceAccountTokens {
  readonly issuer: string;
  /** The API server's own audiences (`--api-audiences`): a token without another audience is for it. */
  readonly apiAudiences: readonly string[];
  private keys: { privateKey: KeyObject; publicKey: KeyObject; kid: string } | undefined;

  private readonly signingKeyFile: string | undefined;

  constructor(options: ServiceAccountTokensOptions = {}) {
    this.issuer = options.issuer ?? DEFAULT_SERVICE_ACCOUNT_ISSUER;
    this.apiAudiences = options.apiAudiences ?? [this.issuer];
    this.signingKeyFile = options.signingKeyFile;
  }

  /**
   * The key pair, made (or read from the signing key file) on first use: an RSA key takes tens
   * of ms that most tests never need.
   */
  private keyPair(): { privateKey: KeyObject; publicKey: KeyObject; kid: string } {
    if (this.keys === undefined) {
      const { privateKey, publicKey } = this.loadOrGenerate();
      // `keyIDFromPublicKey`: the base64url SHA-256 of the PKIX DER public key.
      const der = publicKey.export({ type: 'spki', format: 'der' });
      this.keys = { privateKey, publicKey, kid: b64url(createHash('sha256').update(der).digest()) };
    }
    return this.keys;
  }

  private loadOrGenerate(): { privateKey: KeyObject; publicKey: KeyObject } {
    const file = this.signingKeyFile;
    if (file !== undefined && existsSync(file)) {
      try {
        const privateKey = createPrivateKey(readFileSync(file, 'utf8'));
        return { privateKey, publicKey: createPublicKey(privateKey) };
      } catch (error) {
        throw new Error(`service account signing key file ${file}: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    if (file !== undefined)
      writeFileSync(file, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), {
        mode: 0o600,
      });
    return pair;
  }

  /** A signed token with upstream's claims (`jti` as with ServiceAccountTokenJTI, on in 1.34). */
  issue(input: TokenClaimsInput): string {
    const { privateKey, kid } = this.keyPair();
    const kubernetes: KubernetesClaims = {
      namespace: input.namespace,
      serviceaccount: { name: input.serviceAccount.name, uid: input.serviceAccount.uid },
    };
    if (input.pod !== undefined) kubernetes.pod = { ...input.pod };
    if (input.node !== undefined) kubernetes.node = { ...input.node };
    // go-jose marshals the claims as a map: keys sorted.
    const payload = {
      aud: [...input.audiences],
      exp: input.nowSeconds + input.expirationSeconds,
      iat: input.nowSeconds,
      iss: this.issuer,
      jti: randomUUID(),
      'kubernetes.io': kubernetes,
      nbf: input.nowSeconds,
      sub: serviceAccountUsername(input.namespace, input.serviceAccount.name),
    };
    const signingInput = `${b64url(JSON.stringify({ alg: 'RS256', kid }))}.${b64url(JSON.stringify(payload))}`;
    return `${signingInput}.${b64url(sign('sha256', Buffer.from(signingInput), privateKey))}`;
  }

  /**
   * Verifies a bearer token as the bound ServiceAccount authenticator does: the issuer, the
   * signature, the audiences against `requested` (the API audiences when unset), the times (with
   * go-jose's leeway), then that the ServiceAccount and the bound Pod or Node still exist with
   * the claimed uids.
   */
  verify(
    token: string,
    requested: readonly string[] | undefined,
    nowMs: number,
    lookup: TokenObjectLookup,
  ): TokenVerification {
    const parts = token.split('.');
    if (parts.length !== 3) return { ok: false, error: undefined };
    const [headerPart = '', payloadPart = '', signaturePart = ''] = parts;
    const header = parseSegment(headerPart);
    const payload = parseSegment(payloadPart);
    if (header === undefined || payload === undefined) return { ok: false, error: undefined };
    // `hasCorrectIssuer`: a token of another issuer is not this authenticator's business.
    if (payload.iss !== this.issuer) return { ok: false, error: undefined };
    const { publicKey } = this.keyPair();
    const signed = verify(
      'sha256',
      Buffer.from(`${headerPart}.${payloadPart}`),
      publicKey,
      Buffer.from(signaturePart, 'base64url'),
    );
    if (header.alg !== 'RS256' || !signed)
      return { ok: false, error: 'go-jose/go-jose: error in cryptographic primitive' };
    const tokenAudiences =
      typeof payload.aud === 'string'
        ? [payload.aud]
        : Array.isArray(payload.aud)
          ? payload.aud.filter((a): a is string => typeof a === 'string')
          : [];
    const effective = tokenAudiences.length === 0 ? this.apiAudiences : tokenAudiences;
    const target =
      requested === undefined || requested.length === 0 ? this.apiAudiences : requested;
    const audiences = effective.filter((a) => target.includes(a));
    if (audiences.length === 0)
      return {
        ok: false,
        error: `token audiences ${quoteList(effective)} is invalid for the target audiences ${quoteList(target)}`,
      };
    const now = Math.floor(nowMs / 1000);
    const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
    const exp = num(payload.exp);
    const nbf = num(payload.nbf);
    const iat = num(payload.iat);
    if (exp !== undefined && now - LEEWAY_SECONDS > exp)
      return { ok: false, error: 'service account token has expired' };
    if (nbf !== undefined && now + LEEWAY_SECONDS < nbf)
      return { ok: false, error: 'service account token is not valid yet' };
    if (iat !== undefined && now + LEEWAY_SECONDS < iat)
      return { ok: false, error: 'service account token is issued in the future' };
    const claims = (payload['kubernetes.io'] ?? {}) as KubernetesClaims;
    const namespace = claims.namespace ?? '';
    const sa = refOf(claims.serviceaccount) ?? { name: '', uid: '' };
    const invalidIfDeletedBefore = nowMs - LEEWAY_SECONDS * 1000;
    const deleted = (stored: StoredRef) =>
      stored.deletionMs !== undefined && stored.deletionMs < invalidIfDeletedBefore;
    const storedSa = lookup.serviceAccount(namespace, sa.name);
    if (storedSa === undefined)
      return { ok: false, error: `serviceaccounts "${sa.name}" not found` };
    if (storedSa.uid !== sa.uid)
      return {
        ok: false,
        error: `service account UID (${storedSa.uid}) does not match claim (${sa.uid})`,
      };
    if (deleted(storedSa))
      return { ok: false, error: `service account ${namespace}/${sa.name} has been deleted` };
    const extra: Record<string, string[]> = {};
    const pod = refOf(claims.pod);
    const node = refOf(claims.node);
    if (pod !== undefined) {
      const stored = lookup.pod(namespace, pod.name);
      if (stored === undefined)
        return { ok: false, error: 'service account token has been invalidated' };
      if (stored.uid !== pod.uid)
        return {
          ok: false,
          error: `pod UID (${stored.uid}) does not match service account pod ref claim (${pod.uid})`,
        };
      if (deleted(stored))
        return { ok: false, error: 'service account token has been invalidated' };
    } else if (node !== undefined) {
      const stored = lookup.node(node.name);
      if (stored === undefined)
        return { ok: false, error: 'service account token has been invalidated' };
      if (stored.uid !== node.uid)
        return {
          ok: false,
          error: `node UID (${stored.uid}) does not match service account node ref claim (${node.uid})`,
        };
      if (deleted(stored))
        return { ok: false, error: 'service account token has been invalidated' };
    }
    // `ServiceAccountInfo.UserInfo`; the map's keys serialize sorted, as Go's do.
    if (typeof payload.jti === 'string' && payload.jti !== '')
      extra[EXTRA_KEYS.credentialId] = [`JTI=${payload.jti}`];
    if (node !== undefined && node.name !== '') {
      extra[EXTRA_KEYS.nodeName] = [node.name];
      if (node.uid !== '') extra[EXTRA_KEYS.nodeUid] = [node.uid];
    }
    if (pod !== undefined && pod.name !== '' && pod.uid !== '') {
      extra[EXTRA_KEYS.podName] = [pod.name];
      extra[EXTRA_KEYS.podUid] = [pod.uid];
    }
    return {
      ok: true,
      user: {
        name: serviceAccountUsername(namespace, sa.name),
        uid: sa.uid,
        groups: [
          'system:serviceaccounts',
          `system:serviceaccounts:${namespace}`,
          'system:authenticated',
        ],
        ...(Object.keys(extra).length === 0 ? {} : { extra }),
      },
      audiences,
    };
  }
}
