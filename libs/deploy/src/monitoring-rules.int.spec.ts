import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { repoRoot } from '@slicekeeper/testing';
import { describeObject, renderKustomization } from './kube-object';
import type { KubeObject } from './kube-object';
import { validateMonitoringObject } from './monitoring-objects';

const run = promisify(execFile);
const PROMTOOL = '/usr/bin/promtool';
const COMPONENT = join(repoRoot, 'k8s/components/monitoring');
/** What the committed test file's rule_files names; written beside a copy of it. */
const RULES_FILE = 'slicekeeper.rules.yaml';

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleGroup {
  name: string;
  rules: Rule[];
}
interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts?: unknown[];
}
interface UnitTests {
  rule_files: string[];
  tests: { name: string; alert_rule_test?: AlertTest[] }[];
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; datasource?: { type: string; uid: string } }[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown; datasource?: unknown }[] };
}

/** promtool's exit code and both outputs; a failing run resolves too, so its output shows. */
async function promtool(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(PROMTOOL, args, { cwd });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

function only(objects: KubeObject[], kind: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0] as KubeObject;
}

describe('k8s/components/monitoring', () => {
  let objects: KubeObject[];
  let groups: RuleGroup[];
  let alerts: Rule[];
  let dir: string;

  beforeAll(async () => {
    objects = await renderKustomization(COMPONENT);
    groups = (only(objects, 'PrometheusRule')['spec'] as { groups: RuleGroup[] }).groups;
    alerts = groups.flatMap((group) => group.rules).filter((rule) => rule.alert !== undefined);
    // The PrometheusRule's spec is a Prometheus rules file as it is; promtool reads it from a
    // directory of its own, with the committed unit tests beside it (rule_files are resolved
    // from the test file's directory).
    dir = await mkdtemp(join(tmpdir(), 'slicekeeper-rules-'));
    await writeFile(join(dir, RULES_FILE), stringify({ groups }));
    await copyFile(join(COMPONENT, 'tests/alerts.test.yaml'), join(dir, 'alerts.test.yaml'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('holds a PrometheusRule, a PodMonitor and the dashboard ConfigMap, valid for their CRDs', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'PodMonitor',
      'PrometheusRule',
    ]);
    const problems = objects
      .filter((o) => o.kind !== 'ConfigMap')
      .flatMap((o) => validateMonitoringObject(o).map((p) => `${describeObject(o)}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('passes promtool check rules', async () => {
    const { code, output } = await promtool(['check', 'rules', RULES_FILE], dir);
    expect({ code, output }).toEqual({
      code: 0,
      output: expect.stringContaining(`SUCCESS: ${alerts.length} rules found`) as unknown,
    });
  });

  it('passes its promtool unit tests', async () => {
    const tests = parse(await readFile(join(dir, 'alerts.test.yaml'), 'utf8')) as UnitTests;
    expect(tests.rule_files).toEqual([RULES_FILE]);
    const { code, output } = await promtool(['test', 'rules', 'alerts.test.yaml'], dir);
    expect({ code, output }).toEqual({
      code: 0,
      output: expect.stringContaining('SUCCESS') as unknown,
    });
  });

  it('has a unit test that fires every alert, and one that keeps it quiet on healthy series', async () => {
    const tests = parse(await readFile(join(dir, 'alerts.test.yaml'), 'utf8')) as UnitTests;
    const checks = tests.tests.flatMap((test) =>
      (test.alert_rule_test ?? []).map((check) => ({ group: test.name, ...check })),
    );
    const coverage = alerts.map(({ alert }) => ({
      alert,
      fires: checks.some((c) => c.alertname === alert && (c.exp_alerts ?? []).length > 0),
      quietWhenHealthy: checks.some(
        (c) => c.group === 'healthy' && c.alertname === alert && (c.exp_alerts ?? []).length === 0,
      ),
    }));
    expect(coverage).toEqual(
      alerts.map(({ alert }) => ({ alert, fires: true, quietWhenHealthy: true })),
    );
    // A test of an alert that does not exist would pass vacuously.
    const names = new Set(alerts.map(({ alert }) => alert));
    expect(checks.map((c) => c.alertname).filter((name) => !names.has(name))).toEqual([]);
  });

  it('gives every alert a for, a severity, and a summary, description and runbook in the README', async () => {
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    const operations = readme.slice(
      readme.indexOf('\n## Operations'),
      readme.indexOf('\n## ', readme.indexOf('\n## Operations') + 1),
    );
    for (const rule of alerts) {
      expect({
        alert: rule.alert,
        for: rule.for,
        severity: rule.labels?.['severity'],
        annotations: Object.keys(rule.annotations ?? {}).sort(),
      }).toEqual({
        alert: rule.alert,
        for: expect.stringMatching(/^\d+[mh]$/) as unknown,
        severity: expect.stringMatching(/^(critical|warning|info)$/) as unknown,
        annotations: ['description', 'runbook', 'summary'],
      });
      // `README.md#operations: <item>; <item> (<metric>)`: each item is a bold lead-in of the
      // README's Operations section, so that a renamed section breaks the check, not the runbook.
      const runbook = rule.annotations?.['runbook'] ?? '';
      expect(runbook.startsWith('README.md#operations: ')).toBe(true);
      const items = runbook
        .slice('README.md#operations: '.length)
        .split('; ')
        .map((item) => item.replace(/ \(slicekeeper_.*\)$/, ''));
      for (const item of items) {
        expect({ alert: rule.alert, item, found: operations.includes(`- **${item}`) }).toEqual({
          alert: rule.alert,
          item,
          found: true,
        });
      }
    }
  });

  it('ships the dashboard as a ConfigMap for the Grafana sidecar, on a chosen data source', async () => {
    const configMap = only(objects, 'ConfigMap');
    expect(configMap.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const file = await readFile(join(COMPONENT, 'dashboards/slicekeeper.json'), 'utf8');
    expect(configMap['data']).toEqual({ 'slicekeeper.json': file });
    const dashboard = JSON.parse(file) as Dashboard;
    expect(dashboard.uid).toBe('slicekeeper');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(41);
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    // No uid of one Grafana's data source: every panel and query uses the variable.
    const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
    const queried = panels.filter((p) => p.type !== 'row');
    expect(queried.length).toBeGreaterThan(10);
    const sources = queried.flatMap((p) => [
      { panel: p.title, datasource: p.datasource },
      ...(p.targets ?? []).map((t) => ({ panel: p.title, datasource: t.datasource })),
    ]);
    expect(sources).toEqual(
      sources.map(({ panel }) => ({
        panel,
        datasource: { type: 'prometheus', uid: '${datasource}' },
      })),
    );
    expect(queried.every((p) => (p.targets ?? []).length > 0)).toBe(true);
  });
});

interface ContainerPorts {
  name: string;
  env?: { name: string; value?: string }[];
  ports?: { name?: string; containerPort: number }[];
}
interface PodWorkload extends KubeObject {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: ContainerPorts[] };
    };
  };
}
interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface IngressPolicy extends KubeObject {
  spec: {
    podSelector: Selector;
    ingress?: {
      from?: { namespaceSelector?: Selector; podSelector?: Selector }[];
      ports?: { port?: number }[];
    }[];
  };
}

/** matchLabels and the In operator: what slicekeeper's selectors use. */
function selects(selector: Selector, labels: Record<string, string>): boolean {
  return (
    Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value) &&
    (selector.matchExpressions ?? []).every(
      ({ key, operator, values }) =>
        operator === 'In' && (values ?? []).includes(labels[key] ?? ''),
    )
  );
}

describe('k8s/overlays/prod-monitoring: what the PodMonitor scrapes', () => {
  const metricsApps = ['registration-api', 'slice-syncer', 'plugin-watcher'];
  let objects: KubeObject[];

  beforeAll(async () => {
    objects = await renderKustomization(join(repoRoot, 'k8s/overlays/prod-monitoring'));
  });

  it('puts the rules, the PodMonitor and the dashboard beside the apps', () => {
    const apps = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet');
    const namespaces = new Set(apps.map((o) => o.metadata.namespace));
    for (const kind of ['PrometheusRule', 'PodMonitor', 'ConfigMap']) {
      const found = objects.filter(
        (o) => o.kind === kind && o.metadata.name !== 'slicekeeper-config',
      );
      expect({ kind, namespaces: found.map((o) => o.metadata.namespace) }).toEqual({
        kind,
        namespaces: [...namespaces],
      });
    }
  });

  it('selects every app pod on the port its /metrics is served on, and the policies let it in', () => {
    const podMonitor = only(objects, 'PodMonitor')['spec'] as {
      selector: Selector;
      podMetricsEndpoints: { port: string; path: string }[];
    };
    const policies = objects.filter((o): o is IngressPolicy => o.kind === 'NetworkPolicy');
    const scraped = objects
      .filter((o): o is PodWorkload => o.kind === 'Deployment' || o.kind === 'DaemonSet')
      .flatMap((workload) =>
        workload.spec.template.spec.containers
          .filter((container) => metricsApps.includes(container.name))
          .map((container) => {
            const labels = workload.spec.template.metadata.labels;
            // /metrics is served on PROBE_PORT, the API's on its PORT (the README's tables).
            const setting = container.env?.find(
              (v) => v.name === 'PROBE_PORT' || v.name === 'PORT',
            );
            const port = Number(setting?.value);
            const endpoints = podMonitor.podMetricsEndpoints.filter((endpoint) =>
              container.ports?.some((p) => p.name === endpoint.port && p.containerPort === port),
            );
            // Prometheus runs in the `monitoring` namespace (the base's policy names it).
            const admitted = policies.some(
              (policy) =>
                selects(policy.spec.podSelector, labels) &&
                (policy.spec.ingress ?? []).some(
                  (rule) =>
                    (rule.ports ?? []).some((p) => p.port === port) &&
                    (rule.from ?? []).some(
                      (peer) =>
                        peer.podSelector === undefined &&
                        peer.namespaceSelector !== undefined &&
                        selects(peer.namespaceSelector, {
                          'kubernetes.io/metadata.name': 'monitoring',
                        }),
                    ),
                ),
            );
            return {
              app: container.name,
              selected: selects(podMonitor.selector, labels),
              paths: endpoints.map((endpoint) => endpoint.path),
              admitted,
            };
          }),
      );
    expect(scraped.sort((a, b) => a.app.localeCompare(b.app))).toEqual(
      [...metricsApps].sort().map((app) => ({
        app,
        selected: true,
        paths: ['/metrics'],
        admitted: true,
      })),
    );
  });
});
