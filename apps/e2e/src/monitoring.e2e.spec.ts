import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { freePort, repoRoot } from '@slicekeeper/testing';
import { System } from './harness';
import { exportedMetricNames, metricNamesOf } from './harness/promql-metrics';

const COMPONENT = join(repoRoot, 'k8s/components/monitoring');

interface Panel {
  title: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; query?: unknown }[] };
}

/** Every PromQL expression of the alerts and the dashboard, with where it comes from. */
async function monitoringExpressions(): Promise<{ where: string; expr: string }[]> {
  // The component's files as committed: kustomize copies rules and dashboard unchanged.
  const rule = parse(await readFile(join(COMPONENT, 'prometheus-rule.yaml'), 'utf8')) as {
    spec: { groups: { rules: { alert?: string; record?: string; expr: string }[] }[] };
  };
  const dashboard = JSON.parse(
    await readFile(join(COMPONENT, 'dashboards/slicekeeper.json'), 'utf8'),
  ) as Dashboard;
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  return [
    ...rule.spec.groups.flatMap((group) =>
      group.rules.map((r) => ({ where: `alert ${r.alert ?? r.record ?? ''}`, expr: r.expr })),
    ),
    ...panels.flatMap((panel) =>
      (panel.targets ?? []).flatMap((target) =>
        target.expr === undefined ? [] : [{ where: `panel ${panel.title}`, expr: target.expr }],
      ),
    ),
    ...dashboard.templating.list.flatMap((variable) => {
      const query = variable.query;
      const text =
        typeof query === 'object' && query !== null ? (query as { query?: unknown }).query : query;
      return typeof text === 'string' && text.startsWith('label_values(')
        ? [{ where: `variable ${variable.name}`, expr: text }]
        : [];
    }),
  ];
}

describe('monitoring: every metric the alerts and the dashboard name is exported', () => {
  let system: System;
  let watcherMetricsUrl: string;

  beforeAll(async () => {
    // The watcher logs no probe URL (the syncers do): give it a port of the test's choosing.
    const watcherPort = await freePort();
    watcherMetricsUrl = `http://127.0.0.1:${watcherPort}/metrics`;
    system = await System.start({
      name: 'monitoring',
      nodes: ['node-a'],
      watcherEnv: { PROBE_PORT: String(watcherPort) },
    });
  }, 90_000);

  afterAll(async () => {
    await system.close();
  });

  it('finds each metric of every rule, panel and variable in some service’s /metrics', async () => {
    const expressions = await monitoringExpressions();
    expect(expressions.length).toBeGreaterThan(30);
    const wanted = new Map<string, string[]>();
    for (const { where, expr } of expressions) {
      const names = metricNamesOf(expr);
      expect({ where, names: names.length > 0 }).toEqual({ where, names: true });
      for (const name of names) wanted.set(name, [...(wanted.get(name) ?? []), where]);
    }

    const urls = [
      `${system.apiUrl}/metrics`,
      watcherMetricsUrl,
      ...(await system.syncerMetricsUrls()),
    ];
    const exported = new Set<string>();
    for (const url of urls) {
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      expect({ url, status: response.status }).toEqual({ url, status: 200 });
      for (const name of exportedMetricNames(await response.text())) exported.add(name);
    }

    const missing = [...wanted]
      .filter(([name]) => !exported.has(name))
      .map(([name, where]) => `${name} (${[...new Set(where)].join(', ')})`);
    expect(missing).toEqual([]);
  }, 30_000);
});
