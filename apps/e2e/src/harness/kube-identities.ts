import { createPrivateKey, sign } from 'node:crypto';

/**
 * Kubernetes identities in the kube emulator, as an operator and kubelet make them on a real
 * cluster: ServiceAccounts, Pods, tokens requested for a Pod (what kubelet projects into it),
 * ClusterRoles and their bindings.
 */

/** A request to the emulator's Kubernetes API (the scenarios act as its admin). */
async function kube(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(new URL(path, url), {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    signal: AbortSignal.timeout(10_000),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

/** The name and uid of a stored object. */
interface Created {
  metadata: { name: string; uid: string };
}

/** A ServiceAccount and a Pod of it on a node: what a driver DaemonSet's pod is. */
export interface DriverPod {
  namespace: string;
  serviceAccount: string;
  pod: string;
  podUid: string;
  node: string;
}

export class KubeIdentities {
  constructor(readonly url: string) {}

  async createServiceAccount(namespace: string, name: string): Promise<void> {
    await kube(this.url, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name, namespace },
    });
  }

  async deleteServiceAccount(namespace: string, name: string): Promise<void> {
    await kube(this.url, 'DELETE', `/api/v1/namespaces/${namespace}/serviceaccounts/${name}`);
  }

  /** A ServiceAccount and a Pod running as it on `node` (scheduled: spec.nodeName set). */
  async driverPod(options: {
    namespace: string;
    serviceAccount: string;
    pod: string;
    node: string;
  }): Promise<DriverPod> {
    await this.createServiceAccount(options.namespace, options.serviceAccount);
    const pod = (await kube(this.url, 'POST', `/api/v1/namespaces/${options.namespace}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: options.pod, namespace: options.namespace },
      spec: {
        serviceAccountName: options.serviceAccount,
        nodeName: options.node,
        containers: [{ name: 'driver', image: 'example.com/gpu-driver:1.0' }],
      },
    })) as Created;
    return { ...options, podUid: pod.metadata.uid };
  }

  /**
   * A token for the pod's ServiceAccount bound to the pod, as kubelet requests it for a
   * projected volume (`serviceAccountToken` with an audience): it carries the node claim.
   */
  async projectedToken(
    pod: DriverPod,
    options: { audience: string; expirationSeconds?: number },
  ): Promise<string> {
    const review = (await kube(
      this.url,
      'POST',
      `/api/v1/namespaces/${pod.namespace}/serviceaccounts/${pod.serviceAccount}/token`,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: [options.audience],
          expirationSeconds: options.expirationSeconds ?? 3600,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.pod, uid: pod.podUid },
        },
      },
    )) as { status: { token: string } };
    return review.status.token;
  }

  /** A ClusterRole granting `verbs` on the plugins of `drivers` in slicekeeper.dev. */
  async pluginRole(name: string, drivers: readonly string[], verbs: readonly string[]) {
    await kube(this.url, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        { apiGroups: ['slicekeeper.dev'], resources: ['plugins'], resourceNames: drivers, verbs },
      ],
    });
  }

  async bindClusterRole(name: string, role: string, namespace: string, serviceAccount: string) {
    await kube(this.url, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    });
  }
}

/**
 * A JWT that looks like a ServiceAccount token (same claims, a node claim for `node`) but that
 * no key of the cluster signed.
 */
export function forgedToken(node: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return [
    part({ alg: 'RS256', kid: 'forged' }),
    part({
      aud: ['slicekeeper'],
      exp: now + 3600,
      iat: now,
      iss: 'https://kubernetes.default.svc.cluster.local',
      sub: 'system:serviceaccount:kube-system:gpu-driver',
      'kubernetes.io': { node: { name: node, uid: 'forged' } },
    }),
    Buffer.from('not a signature').toString('base64url'),
  ].join('.');
}

/**
 * `token` with its times moved so that it expired `ageSeconds` ago (negative: expires later),
 * signed again with the cluster's ServiceAccount signing key (`SERVICE_ACCOUNT_SIGNING_KEY_FILE`):
 * a token the cluster did issue, only expired. TokenRequest cannot give one (10 minutes at least).
 */
export function expiredCopy(token: string, signingKeyPem: string, ageSeconds = 3600): string {
  const [header = '', payload = ''] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
    exp: number;
    iat: number;
    nbf: number;
  };
  const lifetime = claims.exp - claims.iat;
  const exp = Math.floor(Date.now() / 1000) - ageSeconds;
  const moved = { ...claims, exp, iat: exp - lifetime, nbf: exp - lifetime };
  const signingInput = `${header}.${Buffer.from(JSON.stringify(moved)).toString('base64url')}`;
  const signature = sign('sha256', Buffer.from(signingInput), createPrivateKey(signingKeyPem));
  return `${signingInput}.${signature.toString('base64url')}`;
}
