import { stringify } from 'yaml';

export interface KubeconfigOptions {
  /** The API server URL, e.g. `http://127.0.0.1:6443`. */
  server: string;
  /** Bearer token of the kubeconfig's user; no credentials when unset. */
  token?: string;
  /** Name of the cluster, user and context. @defaultValue 'kube-emulator' */
  name?: string;
}

/** A kubeconfig (YAML) that kubectl and @kubernetes/client-node accept for the emulator. */
export function buildKubeconfig(options: KubeconfigOptions): string {
  const name = options.name ?? 'kube-emulator';
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    // The emulator speaks plain HTTP; client-node only allows that with TLS verification off.
    clusters: [{ name, cluster: { server: options.server, 'insecure-skip-tls-verify': true } }],
    users: [{ name, user: options.token === undefined ? {} : { token: options.token } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
    preferences: {},
  });
}
