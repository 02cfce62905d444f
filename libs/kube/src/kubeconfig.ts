import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import type * as ClientNode from '@kubernetes/client-node';
import { systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** Where the cluster's address and credentials come from. */
export type KubeconfigSource =
  /** A kubeconfig file (KUBECONFIG); its current context is used. */
  | { kind: 'file'; path: string }
  /**
   * The pod's service account, as client-go's `InClusterConfig`. Without `host` and `port`,
   * KUBERNETES_SERVICE_HOST/PORT are read from the environment; pass them (parsed in the app's
   * config.ts) to keep the environment out of this lib.
   */
  | {
      kind: 'in-cluster';
      host?: string;
      port?: number;
      /** @defaultValue '/var/run/secrets/kubernetes.io/serviceaccount/token' */
      tokenPath?: string;
      /** @defaultValue '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt' */
      caPath?: string;
    }
  /** Kubeconfig text (tests: the emulator hands one out). */
  | { kind: 'yaml'; text: string };

/** What requests to the cluster need: its URL, the TLS material and the credentials. */
export interface ClusterAccess {
  /** Base URL of the API server, without a trailing slash. */
  server: string;
  ca: Buffer | undefined;
  cert: Buffer | undefined;
  key: Buffer | undefined;
  skipTLSVerify: boolean;
  tlsServerName: string | undefined;
  /** The headers that authenticate the next request (a token file re-read, a plugin run, …). */
  credentials: () => Promise<CredentialHeaders>;
}

/** Request headers; a list is sent as one header line per value (Impersonate-Group). */
export type CredentialHeaders = Readonly<Record<string, string | string[]>>;

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** How often a token file is read again (client-go's cached file token source). */
const TOKEN_FILE_REREAD_MS = 60_000;

/** The kubeconfig fields the transport reads; others are left alone, as client-go does. */
const clusterSchema = z.looseObject({
  server: z.string().min(1, 'must name the API server'),
  'certificate-authority': z.string().optional(),
  'certificate-authority-data': z.string().optional(),
  'insecure-skip-tls-verify': z.boolean().optional(),
  'tls-server-name': z.string().optional(),
  'proxy-url': z.string().optional(),
});

const userSchema = z.looseObject({
  token: z.string().optional(),
  tokenFile: z.string().optional(),
  'client-certificate': z.string().optional(),
  'client-certificate-data': z.string().optional(),
  'client-key': z.string().optional(),
  'client-key-data': z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
  as: z.string().optional(),
  'as-uid': z.string().optional(),
  'as-groups': z.array(z.string()).optional(),
  'as-user-extra': z.record(z.string(), z.array(z.string())).optional(),
  exec: z.looseObject({}).optional(),
  'auth-provider': z.looseObject({ name: z.string() }).optional(),
});

const kubeconfigSchema = z.looseObject({
  clusters: z.array(z.looseObject({ name: z.string().min(1), cluster: clusterSchema })).nullish(),
  // A user without fields (`user:` in YAML) has no credentials.
  users: z.array(z.looseObject({ name: z.string().min(1), user: userSchema.nullish() })).nullish(),
  contexts: z
    .array(
      z.looseObject({
        name: z.string().min(1),
        context: z.looseObject({ cluster: z.string().min(1), user: z.string().optional() }),
      }),
    )
    .nullish(),
  'current-context': z.string().optional(),
});

type KubeconfigUser = z.infer<typeof userSchema>;

/**
 * Reads what the transport needs from `source`. A kubeconfig is read here (its current context;
 * relative file paths from the file's directory, as kubectl reads them). Only a user that runs an
 * exec plugin or names an auth provider (OIDC, cloud plugins) loads @kubernetes/client-node,
 * when its first request needs credentials: that package loads its whole generated API (936
 * modules: a process loading libs/kube held 135-142 MiB with it, 85 without), which nothing
 * else here uses.
 * @throws Error naming the field and the rule, or the file that cannot be read
 */
export function loadClusterAccess(
  source: KubeconfigSource,
  clock: Clock = systemClock,
): ClusterAccess {
  switch (source.kind) {
    case 'in-cluster':
      return inCluster(source, clock);
    case 'file':
      return fromKubeconfig(readFileSync(source.path, 'utf8'), dirname(source.path), clock);
    case 'yaml':
      return fromKubeconfig(source.text, undefined, clock);
  }
}

function inCluster(
  source: Extract<KubeconfigSource, { kind: 'in-cluster' }>,
  clock: Clock,
): ClusterAccess {
  const host = source.host ?? process.env.KUBERNETES_SERVICE_HOST;
  const port = source.port ?? process.env.KUBERNETES_SERVICE_PORT;
  if (host === undefined || host === '' || port === undefined || port === '') {
    throw new Error(
      'unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
    );
  }
  const tokenPath = source.tokenPath ?? `${SERVICE_ACCOUNT_DIR}/token`;
  return {
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    ca: readFileSync(source.caPath ?? `${SERVICE_ACCOUNT_DIR}/ca.crt`),
    cert: undefined,
    key: undefined,
    skipTLSVerify: false,
    tlsServerName: undefined,
    credentials: tokenFileCredentials(tokenPath, {}, clock),
  };
}

function fromKubeconfig(text: string, base: string | undefined, clock: Clock): ClusterAccess {
  const parsed = kubeconfigSchema.safeParse(parseYaml(text) ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`not a kubeconfig: ${problems.join('; ')}`);
  }
  const config = parsed.data;
  const contextName = config['current-context'];
  if (contextName === undefined || contextName === '')
    throw new Error('current-context is not set');
  const context = config.contexts?.find((c) => c.name === contextName)?.context;
  if (context === undefined) throw new Error(`current-context: no context named "${contextName}"`);
  const cluster = config.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (cluster === undefined) {
    throw new Error(`context "${contextName}": no cluster named "${context.cluster}"`);
  }
  let user: KubeconfigUser = {};
  if (context.user !== undefined) {
    const entry = config.users?.find((u) => u.name === context.user);
    if (entry === undefined) {
      throw new Error(`context "${contextName}": no user named "${context.user}"`);
    }
    user = entry.user ?? {};
  }
  if (cluster['proxy-url'] !== undefined) throw new Error('proxy-url is not supported');
  const path = (file: string) => (base === undefined || isAbsolute(file) ? file : join(base, file));
  return {
    server: cluster.server.replace(/\/+$/, ''),
    ca: material(cluster['certificate-authority'], cluster['certificate-authority-data'], path),
    cert: material(user['client-certificate'], user['client-certificate-data'], path),
    key: material(user['client-key'], user['client-key-data'], path),
    skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    tlsServerName: cluster['tls-server-name'],
    credentials: credentialsOf(user, text, path, clock),
  };
}

/** A PEM from its `-data` field (base64) or, else, its file. */
function material(
  file: string | undefined,
  data: string | undefined,
  path: (file: string) => string,
): Buffer | undefined {
  if (data !== undefined && data !== '') return Buffer.from(data, 'base64');
  if (file !== undefined && file !== '') return readFileSync(path(file));
  return undefined;
}

/**
 * The user's credentials, in client-go's order of precedence: a static token, else a token file;
 * basic credentials beside them; impersonation headers on every request.
 */
function credentialsOf(
  user: KubeconfigUser,
  text: string,
  path: (file: string) => string,
  clock: Clock,
): ClusterAccess['credentials'] {
  if (user.exec !== undefined || user['auth-provider'] !== undefined) {
    return pluginCredentials(text);
  }
  const headers = impersonation(user);
  const token = nonEmpty(user.token);
  const tokenFile = nonEmpty(user.tokenFile);
  const username = nonEmpty(user.username);
  if ((token ?? tokenFile) !== undefined && (username ?? nonEmpty(user.password)) !== undefined) {
    // client-go's rule: one way to authenticate.
    throw new Error('user: more than one authentication method found: token and basic auth');
  }
  if (token !== undefined) return constant({ ...headers, Authorization: `Bearer ${token}` });
  if (tokenFile !== undefined) return tokenFileCredentials(path(tokenFile), headers, clock);
  if (username !== undefined) {
    // An absent password is empty (client-node sent the text "undefined").
    const basic = Buffer.from(`${username}:${user.password ?? ''}`).toString('base64');
    return constant({ ...headers, Authorization: `Basic ${basic}` });
  }
  return constant(headers);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}

function constant(headers: CredentialHeaders): ClusterAccess['credentials'] {
  const answer = Promise.resolve(headers);
  return () => answer;
}

/** client-go's impersonation headers: one line per group and per extra value. */
function impersonation(user: KubeconfigUser): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  const as = nonEmpty(user.as);
  if (as !== undefined) headers['Impersonate-User'] = as;
  const uid = nonEmpty(user['as-uid']);
  if (uid !== undefined) headers['Impersonate-Uid'] = uid;
  if (user['as-groups'] !== undefined && user['as-groups'].length > 0) {
    headers['Impersonate-Group'] = user['as-groups'];
  }
  for (const [name, values] of Object.entries(user['as-user-extra'] ?? {})) {
    headers[`Impersonate-Extra-${encodeURIComponent(name)}`] = values;
  }
  return headers;
}

/**
 * A bearer token read from `file` (a projected service account token, rotated by the kubelet):
 * read now, so that a missing file fails at start, then again when a minute has passed.
 */
function tokenFileCredentials(
  file: string,
  headers: CredentialHeaders,
  clock: Clock,
): ClusterAccess['credentials'] {
  // The headers are built when the file is read, not for every request.
  const read = () =>
    Promise.resolve({ ...headers, Authorization: `Bearer ${readFileSync(file, 'utf8').trim()}` });
  let answer = read();
  let readAt = clock.now();
  return () => {
    if (clock.now() - readAt >= TOKEN_FILE_REREAD_MS) {
      answer = read();
      readAt = clock.now();
    }
    return answer;
  };
}

/**
 * Credentials from an exec plugin or an auth provider, through @kubernetes/client-node (loaded
 * on the first request): its `applyToHTTPSOptions` runs the plugin, refreshes OIDC tokens and
 * sets the impersonation header. Only the user of the current context is handed over, bound to a
 * placeholder cluster, without its TLS material (the transport's agent holds it).
 */
function pluginCredentials(text: string): ClusterAccess['credentials'] {
  let kubeConfig: ClientNode.KubeConfig | undefined;
  return async () => {
    kubeConfig ??= pluginKubeConfig(text);
    const options: { headers: OutgoingHttpHeaders } = { headers: {} };
    await kubeConfig.applyToHTTPSOptions(options);
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(options.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value : String(value);
    }
    return headers;
  };
}

function pluginKubeConfig(text: string): ClientNode.KubeConfig {
  const { KubeConfig } = require('@kubernetes/client-node') as typeof ClientNode;
  const full = new KubeConfig();
  full.loadFromString(text);
  const user = full.getCurrentUser();
  const credentials = new KubeConfig();
  credentials.loadFromClusterAndUser(
    { name: 'credentials', server: 'https://credentials.invalid', skipTLSVerify: false },
    {
      ...(user ?? { name: 'none' }),
      certData: undefined,
      certFile: undefined,
      keyData: undefined,
      keyFile: undefined,
    },
  );
  return credentials;
}
