import { join } from 'node:path';
import { repoRoot } from '@slicekeeper/testing';
import { describeObject, renderKustomization } from './kube-object';
import type { KubeObject } from './kube-object';
import {
  appConfigVariables,
  appRedisTarget,
  appTraceExport,
  isApp,
  loadAppConfig,
} from './load-app-config.test-helper';
import { isMonitoringObject, validateMonitoringObject } from './monitoring-objects';
import { validateKubeObject } from './validate-kube-object';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    configMapKeyRef?: { name: string; key: string };
  };
}
interface Probe {
  httpGet?: { path: string; port: string | number; scheme?: string };
  exec?: { command: string[] };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
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
  initContainers?: Container[];
  containers: Container[];
  volumes?: {
    name: string;
    hostPath?: { path: string };
    secret?: { secretName: string };
    configMap?: { name: string };
    emptyDir?: Record<string, unknown>;
  }[];
  affinity?: {
    podAntiAffinity?: {
      preferredDuringSchedulingIgnoredDuringExecution?: {
        podAffinityTerm: { topologyKey: string; labelSelector?: LabelSelector };
      }[];
      requiredDuringSchedulingIgnoredDuringExecution?: {
        topologyKey: string;
        labelSelector?: LabelSelector;
      }[];
    };
  };
}
interface Workload extends KubeObject {
  spec: {
    replicas?: number;
    serviceName?: string;
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

interface Service extends KubeObject {
  spec: {
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    selector?: Record<string, string>;
    ports: { name?: string; port: number; targetPort?: string | number }[];
  };
}

const workloadKinds = new Set(['Deployment', 'DaemonSet', 'StatefulSet']);

/** The slice-syncer's Role and RoleBinding for Events about Nodes (k8s/base/slice-syncer.yaml). */
const EVENTS_ROLE = 'slicekeeper-slice-syncer-events';

/** Every container of a pod, init containers first. */
function containersOf(pod: PodSpec): Container[] {
  return [...(pod.initContainers ?? []), ...pod.containers];
}

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

/** The variables the manifests set for a container; downward-API fields get samples. */
function declaredEnvironmentOf(
  container: Container,
  objects: KubeObject[],
): Record<string, string> {
  const configMapData = (name: string | undefined) => {
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name);
    if (configMap === undefined) throw new Error(`${container.name}: no ConfigMap ${name ?? ''}`);
    return (configMap['data'] ?? {}) as Record<string, string>;
  };
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    Object.assign(env, configMapData(source.configMapRef?.name));
  }
  const samples: Record<string, string> = {
    'spec.nodeName': 'node-1',
    'metadata.name': 'pod-1',
  };
  for (const variable of container.env ?? []) {
    const field = variable.valueFrom?.fieldRef?.fieldPath;
    const key = variable.valueFrom?.configMapKeyRef;
    const value =
      field !== undefined
        ? samples[field]
        : key !== undefined
          ? configMapData(key.name)[key.key]
          : variable.value;
    if (value === undefined) throw new Error(`${container.name}: cannot resolve ${variable.name}`);
    env[variable.name] = value;
  }
  return env;
}

/** The container's environment as the kubelet would build it. */
function environmentOf(container: Container, objects: KubeObject[]): Record<string, string> {
  return {
    // Set by the kubelet in every pod: selects in-cluster configuration.
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '443',
    ...declaredEnvironmentOf(container, objects),
  };
}

/**
 * The pods a `host` names from inside the namespace: `<service>` (every pod it selects) or
 * `<statefulset>-<ordinal>.<service>` (one pod of a StatefulSet that service governs).
 */
function podsNamedBy(host: string, objects: KubeObject[], workloads: Workload[]) {
  const services = objects.filter((o): o is Service => o.kind === 'Service');
  const [first = '', second, ...rest] = host.split('.');
  if (rest.length > 0) return [];
  if (second === undefined) {
    const service = services.find((svc) => svc.metadata.name === first);
    return workloads
      .filter(
        (w) =>
          service !== undefined &&
          matches({ matchLabels: service.spec.selector }, w.spec.template.metadata.labels),
      )
      .map((workload) => ({ workload, service }));
  }
  return workloads.flatMap((workload) => {
    const ordinal = first.slice(workload.metadata.name.length + 1);
    const service = services.find((svc) => svc.metadata.name === second);
    return workload.kind === 'StatefulSet' &&
      workload.spec.serviceName === second &&
      service !== undefined &&
      first === `${workload.metadata.name}-${ordinal}` &&
      /^\d+$/.test(ordinal) &&
      Number(ordinal) < (workload.spec.replicas ?? 1)
      ? [{ workload, service }]
      : [];
  });
}

describe.each(['dev', 'prod', 'prod-sentinel', 'prod-monitoring'])('k8s/overlays/%s', (overlay) => {
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
    // The Prometheus Operator's kinds (prod-monitoring) are checked against their CRDs' fields.
    const problems = objects.flatMap((object) =>
      (isMonitoringObject(object)
        ? validateMonitoringObject(object)
        : validateKubeObject(object)
      ).map((problem) => `${describeObject(object)}: ${problem}`),
    );
    expect(problems).toEqual([]);
  });

  it('puts everything namespaced in the slicekeeper namespace, but the events Role in default', () => {
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    expect(objects.find((o) => o.kind === 'Namespace')?.metadata.name).toBe('slicekeeper');
    for (const object of objects.filter((o) => !clusterScoped.has(o.kind))) {
      // Events about Nodes (cluster-scoped) go to the default namespace, and so does the
      // slice-syncer's permission to write them.
      const expected = object.metadata.name === EVENTS_ROLE ? 'default' : 'slicekeeper';
      expect({ object: describeObject(object), namespace: object.metadata.namespace }).toEqual({
        object: describeObject(object),
        namespace: expected,
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

  it('sets for each app only variables its config declares', () => {
    for (const { container, app } of apps) {
      if (!isApp(app)) throw new Error(app);
      const declared = new Set(appConfigVariables(app));
      const unknown = Object.keys(declaredEnvironmentOf(container, objects)).filter(
        (key) => !declared.has(key),
      );
      expect({ app, unknown }).toEqual({ app, unknown: [] });
    }
  });

  it('points every app at the same Redis, which the redis StatefulSet runs', () => {
    const targets = apps.map(({ container, app }) => {
      if (!isApp(app)) throw new Error(app);
      return appRedisTarget(app, environmentOf(container, objects));
    });
    const [target] = targets;
    for (const other of targets) expect(other).toEqual(target);
    const addresses =
      target?.kind === 'server'
        ? [{ host: new URL(target.url).hostname, port: Number(new URL(target.url).port || 6379) }]
        : target?.kind === 'sentinel'
          ? target.sentinels
          : (target?.nodes ?? []);
    expect(addresses.length).toBeGreaterThan(0);
    for (const { host, port } of addresses) {
      const pods = podsNamedBy(host, objects, workloads);
      expect({ host, workloads: pods.map(({ workload }) => workload.metadata.name) }).toEqual({
        host,
        workloads: ['redis'],
      });
      const { workload, service } = pods[0] ?? {};
      const servicePort = service?.spec.ports.find((p) => p.port === port);
      const containerPorts = (workload?.spec.template.spec.containers ?? []).flatMap(
        (c) => c.ports ?? [],
      );
      expect({
        host,
        port,
        listening: containerPorts.some(
          (p) =>
            (p.name !== undefined && p.name === servicePort?.targetPort) ||
            p.containerPort === port,
        ),
      }).toEqual({ host, port, listening: true });
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

  it('pins every image to a version', () => {
    for (const workload of workloads) {
      for (const container of containersOf(workload.spec.template.spec)) {
        expect({ container: container.name, image: container.image }).toEqual({
          container: container.name,
          image: expect.stringMatching(
            /^[a-z0-9./-]+(:(?!latest$)[\w.-]+|@sha256:[0-9a-f]{64})$/,
          ) as unknown,
        });
      }
    }
  });

  it('probes the liveness and readiness of every long-running container', () => {
    for (const workload of workloads) {
      for (const container of workload.spec.template.spec.containers) {
        expect({
          workload: workload.metadata.name,
          container: container.name,
          liveness: container.livenessProbe !== undefined,
          readiness: container.readinessProbe !== undefined,
        }).toEqual({
          workload: workload.metadata.name,
          container: container.name,
          liveness: true,
          readiness: true,
        });
      }
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
      for (const container of containersOf(pod)) {
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

  it('gives each workload its own ServiceAccount; only the slice-syncer and the registration API get a token and a role', () => {
    // The registration API's token is for TokenReview and SubjectAccessReview only.
    const withToken = new Set(['slice-syncer', 'registration-api']);
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
        token: withToken.has(workload.metadata.name),
      });
    }
    const bindings = objects.filter(
      (o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding',
    );
    const bound = bindings.flatMap((b) =>
      (b['subjects'] as { kind: string; name: string; namespace: string }[]).map(
        (s) => `${s.kind} ${s.namespace}/${s.name} -> ${(b['roleRef'] as { name: string }).name}`,
      ),
    );
    // A node-mode watcher registers what it discovers: it may be bound to the registrar role,
    // and to nothing else.
    const watcher = 'ServiceAccount slicekeeper/plugin-watcher -> slicekeeper-plugin-registrar';
    expect(bound.filter((b) => b !== watcher).sort()).toEqual([
      'ServiceAccount slicekeeper/registration-api -> slicekeeper-registration-api',
      'ServiceAccount slicekeeper/slice-syncer -> slicekeeper-slice-syncer',
      `ServiceAccount slicekeeper/slice-syncer -> ${EVENTS_ROLE}`,
    ]);
    // The only namespaced role: writing Events about Nodes, where they go.
    expect(
      objects
        .filter((o) => o.kind === 'Role')
        .map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`),
    ).toEqual([`default/${EVENTS_ROLE}`]);
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
    const container = redis?.spec.template.spec.containers.find((c) => c.name === 'redis');
    const args = (container?.args ?? []).join(' ');
    expect(args).toContain('--appendonly yes');
    expect(args).toContain('--maxmemory-policy noeviction');
    const claim = redis?.spec.volumeClaimTemplates?.[0]?.metadata.name;
    expect(container?.volumeMounts).toContainEqual({ name: claim, mountPath: '/data' });
  });

  it(
    overlay === 'dev'
      ? 'accepts static tokens from a Secret and Kubernetes identities, over plain HTTP'
      : 'accepts Kubernetes identities only, over HTTPS with the certificate from a Secret',
    () => {
      const api = apps.find(({ app }) => app === 'registration-api');
      const container = api?.container ?? { name: '', image: '' };
      const config = loadAppConfig('registration-api', environmentOf(container, objects));
      const secretMountedAt = (file: unknown) => {
        const mount = container.volumeMounts?.find((m) =>
          String(file).startsWith(`${m.mountPath}/`),
        );
        return api?.workload.spec.template.spec.volumes?.find((v) => v.name === mount?.name)?.secret
          ?.secretName;
      };
      const schemes = [container.livenessProbe, container.readinessProbe].map(
        (probe) => probe?.httpGet?.scheme ?? 'HTTP',
      );
      if (overlay === 'dev') {
        expect(config).toMatchObject({ AUTH_MODE: 'both', TOKEN_AUDIENCE: ['slicekeeper'] });
        expect(secretMountedAt(config['TOKEN_FILE'])).toBe('registration-api-tokens');
        expect(config['TLS_CERT_FILE']).toBeUndefined();
        expect(schemes).toEqual(['HTTP', 'HTTP']);
      } else {
        expect(config).toMatchObject({ AUTH_MODE: 'kubernetes', TOKEN_AUDIENCE: ['slicekeeper'] });
        expect(config['TOKEN_FILE']).toBeUndefined();
        expect(secretMountedAt(config['TLS_CERT_FILE'])).toBe('registration-api-tls');
        expect(secretMountedAt(config['TLS_KEY_FILE'])).toBe('registration-api-tls');
        expect(schemes).toEqual(['HTTPS', 'HTTPS']);
        expect(
          api?.workload.spec.template.spec.volumes?.some(
            (v) => v.secret?.secretName === 'registration-api-tokens',
          ),
        ).toBe(false);
      }
    },
  );

  it('lets the registration API reach the Kubernetes API (TokenReview, SubjectAccessReview)', () => {
    const policies = objects.filter((o): o is NetworkPolicy => o.kind === 'NetworkPolicy');
    const api = workloads.find((w) => w.metadata.name === 'registration-api');
    const labels = api?.spec.template.metadata.labels ?? {};
    const ports = policies
      .filter(
        (p) =>
          p.spec.policyTypes.includes('Egress') &&
          matches(p.spec.podSelector, labels) &&
          (p.spec.egress ?? []).some((rule) => rule.to === undefined),
      )
      .flatMap((p) => (p.spec.egress ?? []).flatMap((rule) => rule.ports ?? []))
      .map((port) => port.port);
    expect(ports).toEqual(expect.arrayContaining([443, 6443]));
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

  /** The overlays that trace (the tracing component); the others leave tracing off. */
  const traced = overlay === 'prod-monitoring';

  it(
    traced
      ? 'traces every app to the collector, a tenth of new traces, and lets it reach the collector'
      : 'leaves tracing off',
    () => {
      const policies = objects.filter((o): o is NetworkPolicy => o.kind === 'NetworkPolicy');
      for (const { workload, container, app } of apps) {
        if (!isApp(app)) throw new Error(app);
        const settings = appTraceExport(app, environmentOf(container, objects));
        const labels = workload.spec.template.metadata.labels;
        // Egress to port 4318 of a pod in the observability namespace.
        const toCollector = policies.some(
          (p) =>
            p.spec.policyTypes.includes('Egress') &&
            matches(p.spec.podSelector, labels) &&
            (p.spec.egress ?? []).some(
              (rule) =>
                (rule.ports ?? []).some((port) => port.port === 4318) &&
                (rule.to ?? []).some(
                  (peer) =>
                    peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ===
                    'observability',
                ),
            ),
        );
        expect({ app, settings, toCollector }).toEqual(
          traced
            ? {
                app,
                settings: expect.objectContaining({
                  url: 'http://otel-collector.observability.svc:4318/v1/traces',
                  serviceName: app,
                  sampler: 'parentbased_traceidratio',
                  samplerRatio: 0.1,
                }) as unknown,
                toCollector: true,
              }
            : { app, settings: undefined, toCollector: false },
        );
      }
    },
  );
});

describe('k8s/overlays/prod-cert-manager', () => {
  it('has cert-manager write the Secret the API serves from, for the names its Service answers to', async () => {
    const objects = await renderKustomization(join(repoRoot, 'k8s/overlays/prod-cert-manager'));
    const certificates = objects.filter((o) => o.kind === 'Certificate');
    // Everything else is what prod renders, and validates as there.
    const problems = objects
      .filter((o) => o.kind !== 'Certificate')
      .flatMap((o) => validateKubeObject(o).map((p) => `${describeObject(o)}: ${p}`));
    expect(problems).toEqual([]);
    expect(certificates.map((c) => [c.apiVersion, c.metadata.namespace])).toEqual([
      ['cert-manager.io/v1', 'slicekeeper'],
    ]);
    const spec = certificates[0]?.['spec'] as { secretName: string; dnsNames: string[] };
    const api = objects.find(
      (o): o is Workload => o.kind === 'Deployment' && o.metadata.name === 'registration-api',
    );
    expect(
      api?.spec.template.spec.volumes?.map((v) => v.secret?.secretName).filter(Boolean),
    ).toContain(spec.secretName);
    expect(spec.dnsNames).toEqual(
      expect.arrayContaining([
        'registration-api.slicekeeper.svc',
        'registration-api.slicekeeper.svc.cluster.local',
      ]),
    );
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

describe('k8s/components/redis-sentinel, in k8s/overlays/prod-sentinel', () => {
  let objects: KubeObject[];
  let redis: Workload;
  let pod: PodSpec;
  let policies: NetworkPolicy[];
  let appLabels: Record<string, string>[];

  const container = (name: string) => {
    const found = containersOf(pod).find((c) => c.name === name);
    if (found === undefined) throw new Error(`no container ${name}`);
    return found;
  };

  beforeAll(async () => {
    objects = await renderKustomization(join(repoRoot, 'k8s/overlays/prod-sentinel'));
    const workloads = objects.filter((o): o is Workload => workloadKinds.has(o.kind));
    const found = workloads.find((w) => w.metadata.name === 'redis');
    if (found === undefined) throw new Error('no redis workload');
    redis = found;
    pod = redis.spec.template.spec;
    policies = objects.filter((o): o is NetworkPolicy => o.kind === 'NetworkPolicy');
    appLabels = workloads
      .filter((w) => w.spec.template.spec.containers.some((c) => isApp(c.name)))
      .map((w) => w.spec.template.metadata.labels);
  });

  it('points every app at the Sentinels of every Redis pod, with REDIS_URL removed', () => {
    const config = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'slicekeeper-config',
    )?.['data'] as Record<string, string>;
    expect(config['REDIS_URL']).toBeUndefined();
    const sentinelPort = container('sentinel').ports?.find((p) => p.name === 'sentinel');
    const expected = Array.from({ length: redis.spec.replicas ?? 1 }, (_, ordinal) => ({
      host: `redis-${ordinal}.${redis.spec.serviceName ?? ''}`,
      port: sentinelPort?.containerPort,
    }));
    expect(
      appRedisTarget('slice-syncer', { ...config, KUBERNETES_SERVICE_HOST: '10.96.0.1' }),
    ).toEqual({
      kind: 'sentinel',
      sentinels: expected,
      name: declaredEnvironmentOf(container('configure'), objects)['REDIS_SENTINEL_NAME'],
      tls: false,
    });
  });

  it('runs a Redis and a Sentinel in each of an odd number of pods, quorum a majority', () => {
    const replicas = redis.spec.replicas ?? 1;
    expect(replicas).toBeGreaterThanOrEqual(3);
    expect(replicas % 2).toBe(1);
    expect(pod.containers.map((c) => c.name).sort()).toEqual(['redis', 'sentinel']);
    const env = declaredEnvironmentOf(container('configure'), objects);
    expect(env).toMatchObject({
      HEADLESS_SERVICE: redis.spec.serviceName,
      SEED_MASTER: `redis-0.${redis.spec.serviceName ?? ''}`,
      SENTINEL_QUORUM: String(Math.floor(replicas / 2) + 1),
    });
  });

  it('configures both servers from the services’ own settings, in files they can rewrite', () => {
    const configure = container('configure');
    // The Sentinels the pods run are the ones the apps are told of, from the same ConfigMap.
    for (const name of ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME']) {
      expect(configure.env?.find((v) => v.name === name)?.valueFrom?.configMapKeyRef).toEqual({
        name: 'slicekeeper-config',
        key: name,
      });
    }
    const env = declaredEnvironmentOf(configure, objects);
    const volumeHolding = (c: Container, path: string) =>
      c.volumeMounts?.find((m) => path.startsWith(`${m.mountPath}/`) && m.readOnly !== true)?.name;
    for (const [server, file] of [
      ['redis', env['REDIS_CONF']],
      ['sentinel', env['SENTINEL_CONF']],
    ] as const) {
      const serverContainer = container(server);
      expect({ server, loads: serverContainer.command?.[1] }).toEqual({ server, loads: file });
      const volume = volumeHolding(serverContainer, file ?? '');
      expect({ server, volume }).toEqual({ server, volume: volumeHolding(configure, file ?? '') });
      expect(pod.volumes?.find((v) => v.name === volume)?.emptyDir).toBeDefined();
    }
    // The base's Redis arguments (persistence, memory) still apply after the generated file.
    expect(container('redis').command?.[0]).toBe('redis-server');
    expect(container('redis').args).toEqual(expect.arrayContaining(['--appendonly', 'yes']));
    const script = configure.command?.at(-1) ?? '';
    const mount = configure.volumeMounts?.find((m) => script.startsWith(`${m.mountPath}/`));
    const scripts = pod.volumes?.find((v) => v.name === mount?.name)?.configMap?.name;
    const data = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === scripts)?.[
      'data'
    ] as Record<string, string> | undefined;
    expect(Object.keys(data ?? {})).toContain(script.slice((mount?.mountPath.length ?? 0) + 1));
  });

  it('publishes every pod’s name before it is ready, with the Sentinel port beside Redis’s', () => {
    const service = objects.find(
      (o): o is Service => o.kind === 'Service' && o.metadata.name === redis.spec.serviceName,
    );
    expect(service?.spec.clusterIP).toBe('None');
    expect(service?.spec.publishNotReadyAddresses).toBe(true);
    expect(service?.spec.ports.map((p) => [p.port, p.targetPort]).sort()).toEqual([
      [26379, 'sentinel'],
      [6379, 'redis'],
    ]);
  });

  it('lets the apps reach the Sentinels, and the Redis pods each other, and no one else', () => {
    const redisLabels = redis.spec.template.metadata.labels;
    for (const port of [6379, 26379]) {
      for (const labels of appLabels) {
        expect({ port, ...allowed(policies, labels, redisLabels, port) }).toEqual({
          port,
          egress: true,
          ingress: true,
        });
      }
      expect({ port, ...allowed(policies, redisLabels, redisLabels, port) }).toEqual({
        port,
        egress: true,
        ingress: true,
      });
      expect({ port, ...allowed(policies, { app: 'intruder' }, redisLabels, port) }).toEqual({
        port,
        egress: false,
        ingress: false,
      });
    }
    // Redis pods reach nothing else of the namespace.
    for (const labels of appLabels) {
      expect(allowed(policies, redisLabels, labels, 6379).egress).toBe(false);
    }
  });

  it('spreads the Redis pods over nodes and lets a drain take one at a time', () => {
    const terms = pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution;
    expect(
      terms?.some(
        ({ podAffinityTerm }) =>
          podAffinityTerm.topologyKey === 'kubernetes.io/hostname' &&
          matches(podAffinityTerm.labelSelector, redis.spec.template.metadata.labels),
      ),
    ).toBe(true);
    const budgets = objects
      .filter((o) => o.kind === 'PodDisruptionBudget')
      .map((o) => o['spec'] as { selector: LabelSelector; maxUnavailable?: number })
      .filter((spec) => matches(spec.selector, redis.spec.template.metadata.labels));
    expect(budgets.map((spec) => spec.maxUnavailable)).toEqual([1]);
  });
});
