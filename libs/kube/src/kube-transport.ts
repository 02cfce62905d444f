import http from 'node:http';
import https from 'node:https';
import { isIPv6 } from 'node:net';
import { KubeConfig, bufferFromFileOrString } from '@kubernetes/client-node';
import type { RequestContext } from '@kubernetes/client-node';
import { TerminalError, errorMessage } from '@slicekeeper/errors';

/** Where the cluster's address and credentials come from. */
export type KubeconfigSource =
  /** A kubeconfig file (KUBECONFIG); its current context is used. */
  | { kind: 'file'; path: string }
  /**
   * The pod's service account. Without `host` and `port`, client-node's
   * `KubeConfig.loadFromCluster()` reads KUBERNETES_SERVICE_HOST/PORT itself; pass them (parsed in
   * the app's config.ts) to keep the environment out of this lib.
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

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function describeSource(source: KubeconfigSource): string {
  switch (source.kind) {
    case 'file':
      return `kubeconfig "${source.path}"`;
    case 'in-cluster':
      return 'in-cluster config';
    case 'yaml':
      return 'kubeconfig text';
  }
}

function loadKubeConfig(source: KubeconfigSource): KubeConfig {
  const kubeConfig = new KubeConfig();
  switch (source.kind) {
    case 'file':
      kubeConfig.loadFromFile(source.path);
      break;
    case 'yaml':
      kubeConfig.loadFromString(source.text);
      break;
    case 'in-cluster':
      if (source.host === undefined || source.port === undefined) {
        kubeConfig.loadFromCluster();
        break;
      }
      kubeConfig.loadFromClusterAndUser(
        {
          name: 'in-cluster',
          server: `https://${isIPv6(source.host) ? `[${source.host}]` : source.host}:${source.port}`,
          caFile: source.caPath ?? `${SERVICE_ACCOUNT_DIR}/ca.crt`,
          skipTLSVerify: false,
        },
        {
          name: 'in-cluster',
          authProvider: {
            name: 'tokenFile',
            config: { tokenFile: source.tokenPath ?? `${SERVICE_ACCOUNT_DIR}/token` },
          },
        },
      );
      break;
  }
  return kubeConfig;
}

interface AuthorizationOptions {
  headers: Record<string, string | number | string[] | undefined>;
}

type ApplyAuthorizationHeader = (options: AuthorizationOptions) => Promise<void>;

/**
 * client-node's per-request credentials (static token, token file re-read every minute, exec
 * plugins, OIDC refresh). It is public only bundled with a new Agent per request (and a re-read
 * of the CA file), which would cost a TCP and TLS handshake per call; we need it alone.
 */
function authorizationOf(kubeConfig: KubeConfig): ApplyAuthorizationHeader {
  const method: unknown = Reflect.get(kubeConfig, 'applyAuthorizationHeader');
  if (typeof method !== 'function') {
    throw new Error('@kubernetes/client-node has no KubeConfig.applyAuthorizationHeader');
  }
  return (options) => (method as ApplyAuthorizationHeader).call(kubeConfig, options);
}

/**
 * One cluster connection: the server URL, a keep-alive agent built once from the kubeconfig's
 * TLS settings, and the credentials applied to each request. Client certificates and the CA are
 * read once; an exec plugin that returns client certificates is not supported (tokens are).
 */
export class KubeTransport {
  /** Base URL of the API server, without a trailing slash. */
  readonly server: string;
  private readonly agent: http.Agent;
  private readonly staticHeaders: Record<string, string> = {};
  private readonly applyAuthorization: ApplyAuthorizationHeader | undefined;

  constructor(source: KubeconfigSource) {
    try {
      const kubeConfig = loadKubeConfig(source);
      const cluster = kubeConfig.getCurrentCluster();
      if (cluster === null) throw new Error('no cluster in the current context');
      if (cluster.proxyUrl !== undefined) throw new Error('proxy-url is not supported');
      const url = new URL(cluster.server);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new Error(`unsupported server URL "${cluster.server}"`);
      }
      this.server = cluster.server.replace(/\/+$/, '');
      const user = kubeConfig.getCurrentUser();
      // LIFO reuses the warmest sockets and lets idle ones time out under low load.
      const agentOptions = { keepAlive: true, scheduling: 'lifo' as const };
      if (url.protocol === 'http:') {
        // Plain HTTP (the kube emulator, kubectl proxy): allowed as kubectl allows it.
        this.agent = new http.Agent(agentOptions);
      } else {
        this.agent = new https.Agent({
          ...agentOptions,
          ca: bufferFromFileOrString(cluster.caFile, cluster.caData) ?? undefined,
          cert: bufferFromFileOrString(user?.certFile, user?.certData) ?? undefined,
          key: bufferFromFileOrString(user?.keyFile, user?.keyData) ?? undefined,
          // Unset unless skipping, so NODE_TLS_REJECT_UNAUTHORIZED keeps its meaning (as in client-node).
          ...(cluster.skipTLSVerify ? { rejectUnauthorized: false } : {}),
          ...(cluster.tlsServerName === undefined ? {} : { servername: cluster.tlsServerName }),
        });
      }
      if (user !== null) {
        if (user.username !== undefined) {
          const basic = Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64');
          this.staticHeaders.Authorization = `Basic ${basic}`;
        }
        if (user.impersonateUser !== undefined) {
          this.staticHeaders['Impersonate-User'] = user.impersonateUser;
        }
        this.applyAuthorization = authorizationOf(kubeConfig);
      }
    } catch (error) {
      throw new TerminalError(`load ${describeSource(source)}: ${errorMessage(error)}`, {
        code: 'config',
        cause: error,
      });
    }
  }

  /** Sets the shared agent and the current credentials on one request. */
  async prepare(request: RequestContext): Promise<void> {
    request.setAgent(this.agent);
    for (const [name, value] of Object.entries(this.staticHeaders)) {
      request.setHeaderParam(name, value);
    }
    if (this.applyAuthorization === undefined) return;
    const options: AuthorizationOptions = { headers: {} };
    await this.applyAuthorization(options);
    for (const [name, value] of Object.entries(options.headers)) {
      if (value !== undefined) request.setHeaderParam(name, String(value));
    }
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agent.destroy();
  }
}
