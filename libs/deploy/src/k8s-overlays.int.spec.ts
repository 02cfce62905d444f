import { join } from 'node:path';
import { repoRoot } from '@slicekeeper/testing';
import { describeObject, renderKustomization } from './kube-object';
import type { KubeObject } from './kube-object';
import { isApp, loadAppConfig } from './load-app-config.test-helper';
import { validateKubeObject } from './validate-kube-object';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  args?: string[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  hostNetwork?: boolean;
  hostPID?: boolean;
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    seccompProfile?: { type: string };
  };
  containers: Container[];
  volumes?: {
    name: string;
    hostPath?: { path: string };
    secret?: { secretName: string };
  }[];
}
interface Workload extends KubeObject {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata: { name: string } }[];
  };
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface NetworkPolicyRule {
  from?: { podSelector?: LabelSelector; namespaceSelector?: LabelSelector }[];
  to?: { podSelector?: LabelSelector; namespaceSelector?: LabelSelector }[];
  ports?: { port?: number }[];
}
interface NetworkPolicy extends KubeObject {
  spec: {
    podSelector: LabelSelector;
    policyTypes: string[];
    ingress?: NetworkPolicyRule[];
    egress?: NetworkPolicyRule[];
  };
}

const workloadKinds = new Set(['Deployment', 'DaemonSet', 'StatefulSet']);

function matches(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return true;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(
    ([key, value]) => labels[key] === value,
  );
  const byExpressions = (selector.matchExpressions ?? []).every((expression) => {
    const value = labels[expression.key];
    switch (expression.operator) {
      case 'In':
        return value !== undefined && (expression.values ?? []).includes(value);
      case 'NotIn':
        return value === undefined || !(expression.values ?? []).includes(value);
      case 'Exists':
        return value !== undefined;
      default:
        return value === undefined;
    }
  });
  return byLabels && byExpressions;
}

/** Whether some policy lets `from` pods reach `to` pods of this namespace on `port`. */
function allowed(
  policies: NetworkPolicy[],
  from: Record<string, string>,
  to: Record<string, string>,
  port: number,
): { egress: boolean; ingress: boolean } {
  const rulePermits = (
    rules: NetworkPolicyRule[] | undefined,
    peer: Record<string, string>,
    direction: 'from' | 'to',
  ) =>
    (rules ?? []).some(
      (rule) =>
        (rule.ports === undefined ||
          rule.ports.some((p) => p.port === undefined || p.port === port)) &&
        (rule[direction] === undefined ||
          (rule[direction] ?? []).some(
            (p) => p.namespaceSelector === undefined && matches(p.podSelector, peer),
          )),
    );
  return {
    egress: policies.some(
      (p) =>
        p.spec.policyTypes.includes('Egress') &&
        matches(p.spec.podSelector, from) &&
        rulePermits(p.spec.egress, to, 'to'),
    ),
    ingress: policies.some(
      (p) =>
        p.spec.policyTypes.includes('Ingress') &&
        matches(p.spec.podSelector, to) &&
        rulePermits(p.spec.ingress, from, 'from'),
    ),
  };
}

/** The container's environment as the kubelet would build it; downward-API fields get samples. */
function environmentOf(container: Container, objects: KubeObject[]): Record<string, string> {
  const env: Record<string, string> = {
    // Set by the kubelet in every pod: selects in-cluster configuration.
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '443',
  };
  for (const source of container.envFrom ?? []) {
    const name = source.configMapRef?.name;
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name);
    if (configMap === undefined) throw new Error(`${container.name}: no ConfigMap ${name ?? ''}`);
    Object.assign(env, configMap['data'] as Record<string, string>);
  }
  const samples: Record<string, string> = {
    'spec.nodeName': 'node-1',
    'metadata.name': 'pod-1',
  };
  for (const variable of container.env ?? []) {
    const field = variable.valueFrom?.fieldRef?.fieldPath;
    const value = field === undefined ? variable.value : samples[field];
    if (value === undefined) throw new Error(`${container.name}: cannot resolve ${variable.name}`);
    env[variable.name] = value;
  }
  return env;
}

describe.each(['dev', 'prod'])('k8s/overlays/%s', (overlay) => {
  let objects: KubeObject[];
  let workloads: Workload[];
  let apps: { workload: Workload; container: Container; app: string }[];

  beforeAll(async () => {
    objects = await renderKustomization(join(repoRoot, 'k8s/overlays', overlay));
    workloads = objects.filter((o): o is Workload => workloadKinds.has(o.kind));
    apps = workloads.flatMap((workload) =>
      workload.spec.template.spec.containers
        .filter((container) => isApp(container.name))
        .map((container) => ({ workload, container, app: container.name })),
    );
  });

  it('renders, and every object validates against the Kubernetes API schemas', () => {
    expect(objects.length).toBeGreaterThan(10);
    const problems = objects.flatMap((object) =>
      validateKubeObject(object).map((problem) => `${describeObject(object)}: ${problem}`),
    );
    expect(problems).toEqual([]);
  });

  it('puts everything namespaced in the slicekeeper namespace', () => {
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    expect(objects.find((o) => o.kind === 'Namespace')?.metadata.name).toBe('slicekeeper');
    for (const object of objects.filter((o) => !clusterScoped.has(o.kind))) {
      expect({ object: describeObject(object), namespace: object.metadata.namespace }).toEqual({
        object: describeObject(object),
        namespace: 'slicekeeper',
      });
    }
  });

  it('runs the registration-api, plugin-watcher and slice-syncer', () => {
    expect(apps.map(({ app }) => app).sort()).toEqual([
      'plugin-watcher',
      'registration-api',
      'slice-syncer',
    ]);
  });

  it('gives every app an environment its own config schema accepts', () => {
    for (const { container, app } of apps) {
      if (!isApp(app)) throw new Error(app);
      expect(() => loadAppConfig(app, environmentOf(container, objects))).not.toThrow();
    }
  });

  it('probes /healthz and /readyz on the port each app listens on', () => {
    for (const { container, app } of apps) {
      if (!isApp(app)) throw new Error(app);
      const config = loadAppConfig(app, environmentOf(container, objects));
      const listening = config['PROBE_PORT'] ?? config['PORT'];
      const portOf = (probe: Probe | undefined) => {
        const port = probe?.httpGet?.port;
        return typeof port === 'number'
          ? port
          : container.ports?.find((p) => p.name === port)?.containerPort;
      };
      expect({
        app,
        liveness: container.livenessProbe?.httpGet?.path,
        livenessPort: portOf(container.livenessProbe),
        readiness: container.readinessProbe?.httpGet?.path,
        readinessPort: portOf(container.readinessProbe),
      }).toEqual({
        app,
        liveness: '/healthz',
        livenessPort: listening,
        readiness: '/readyz',
        readinessPort: listening,
      });
    }
  });

  it('sets requests, limits and a restricted security context on every container', () => {
    for (const workload of workloads) {
      const pod = workload.spec.template.spec;
      expect({ workload: describeObject(workload), pod: pod.securityContext }).toMatchObject({
        pod: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      });
      expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
      expect(pod.hostNetwork ?? false).toBe(false);
      expect(pod.hostPID ?? false).toBe(false);
      for (const container of pod.containers) {
        expect({ container: container.name, ...container.securityContext }).toEqual({
          container: container.name,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        for (const bound of ['requests', 'limits'] as const) {
          expect({ container: container.name, bound, ...container.resources?.[bound] }).toEqual({
            container: container.name,
            bound,
            cpu: expect.any(String) as unknown,
            memory: expect.any(String) as unknown,
          });
        }
      }
    }
  });

  it('gives each workload its own ServiceAccount; only the slice-syncer gets a token and a role', () => {
    const accounts = workloads.map((w) => w.spec.template.spec.serviceAccountName);
    expect(new Set(accounts).size).toBe(workloads.length);
    for (const workload of workloads) {
      const pod = workload.spec.template.spec;
      const account = objects.find(
        (o) => o.kind === 'ServiceAccount' && o.metadata.name === pod.serviceAccountName,
      );
      expect({ workload: workload.metadata.name, account: account?.metadata.name }).toEqual({
        workload: workload.metadata.name,
        account: workload.metadata.name,
      });
      expect({
        workload: workload.metadata.name,
        token: pod.automountServiceAccountToken,
      }).toEqual({
        workload: workload.metadata.name,
        token: workload.metadata.name === 'slice-syncer',
      });
    }
    const bindings = objects.filter(
      (o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding',
    );
    expect(bindings.flatMap((b) => b['subjects'] as { kind: string; name: string }[])).toEqual([
      { kind: 'ServiceAccount', name: 'slice-syncer', namespace: 'slicekeeper' },
    ]);
    expect(objects.filter((o) => o.kind === 'Role')).toEqual([]);
  });

  it('runs 2 slice-syncers with an autoscaler and a disruption budget', () => {
    const syncer = workloads.find((w) => w.metadata.name === 'slice-syncer');
    expect(syncer?.kind).toBe('Deployment');
    expect(syncer?.spec.replicas).toBe(2);
    const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler');
    expect(hpa?.['spec']).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'slice-syncer' },
      minReplicas: 2,
    });
    const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget');
    const labels = syncer?.spec.template.metadata.labels ?? {};
    expect(
      pdbs.some((pdb) => matches((pdb['spec'] as { selector: LabelSelector }).selector, labels)),
    ).toBe(true);
  });

  it('runs Redis with an append-only file on a persistent volume and never evicts keys', () => {
    const redis = workloads.find((w) => w.metadata.name === 'redis');
    expect(redis?.kind).toBe('StatefulSet');
    const container = redis?.spec.template.spec.containers[0];
    const args = (container?.args ?? []).join(' ');
    expect(args).toContain('--appendonly yes');
    expect(args).toContain('--maxmemory-policy noeviction');
    const claim = redis?.spec.volumeClaimTemplates?.[0]?.metadata.name;
    expect(container?.volumeMounts).toContainEqual({ name: claim, mountPath: '/data' });
  });

  it('mounts the registration-api token file from a Secret', () => {
    const api = apps.find(({ app }) => app === 'registration-api');
    const tokenFile =
      environmentOf(api?.container ?? { name: '', image: '' }, objects)['TOKEN_FILE'] ?? '';
    const mount = api?.container.volumeMounts?.find((m) => tokenFile.startsWith(`${m.mountPath}/`));
    const volume = api?.workload.spec.template.spec.volumes?.find((v) => v.name === mount?.name);
    expect(volume?.secret?.secretName).toBe('registration-api-tokens');
  });

  it('lets every app reach Redis and nothing else in, after denying all by default', () => {
    const policies = objects.filter((o): o is NetworkPolicy => o.kind === 'NetworkPolicy');
    expect(
      policies.some(
        (p) =>
          Object.keys(p.spec.podSelector).length === 0 &&
          p.spec.policyTypes.includes('Ingress') &&
          p.spec.policyTypes.includes('Egress') &&
          p.spec.ingress === undefined &&
          p.spec.egress === undefined,
      ),
    ).toBe(true);
    const redis = workloads.find((w) => w.metadata.name === 'redis');
    const redisLabels = redis?.spec.template.metadata.labels ?? {};
    for (const { workload, app } of apps) {
      const labels = workload.spec.template.metadata.labels;
      expect({ app, ...allowed(policies, labels, redisLabels, 6379) }).toEqual({
        app,
        egress: true,
        ingress: true,
      });
    }
    expect(allowed(policies, { app: 'intruder' }, redisLabels, 6379).ingress).toBe(false);
  });
});

describe('plugin-watcher per overlay', () => {
  it('dev: a shared-mode Deployment', async () => {
    const objects = await renderKustomization(join(repoRoot, 'k8s/overlays/dev'));
    const watcher = objects.find(
      (o): o is Workload => o.metadata.name === 'plugin-watcher' && workloadKinds.has(o.kind),
    );
    expect(watcher?.kind).toBe('Deployment');
    const env = environmentOf(
      watcher?.spec.template.spec.containers[0] ?? { name: '', image: '' },
      objects,
    );
    expect(loadAppConfig('plugin-watcher', env)).toMatchObject({ WATCHER_MODE: 'shared' });
  });

  it('prod: a node-mode DaemonSet with its node name and the kubelet plugins directory', async () => {
    const objects = await renderKustomization(join(repoRoot, 'k8s/overlays/prod'));
    const watcher = objects.find(
      (o): o is Workload => o.metadata.name === 'plugin-watcher' && workloadKinds.has(o.kind),
    );
    expect(watcher?.kind).toBe('DaemonSet');
    const pod = watcher?.spec.template.spec;
    const container = pod?.containers[0] ?? { name: '', image: '' };
    expect(container.env).toContainEqual({
      name: 'NODE_NAME',
      valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } },
    });
    expect(loadAppConfig('plugin-watcher', environmentOf(container, objects))).toMatchObject({
      WATCHER_MODE: 'node',
      NODE_NAME: 'node-1',
    });
    const volume = pod?.volumes?.find((v) => v.hostPath?.path === '/var/lib/kubelet/plugins');
    expect(container.volumeMounts).toContainEqual(
      expect.objectContaining({ name: volume?.name, mountPath: '/var/lib/kubelet/plugins' }),
    );
  });
});
