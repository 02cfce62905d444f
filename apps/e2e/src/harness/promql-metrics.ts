import { parser } from '@prometheus-io/lezer-promql';

/** A node of lezer's syntax tree (its type, without a dependency on @lezer/common). */
type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

/**
 * Grafana's variables, replaced before parsing: `$__rate_interval` and its kind stand where
 * PromQL wants a duration, any other variable where it wants a number or inside a string.
 */
function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\[\$__\w+\]/g, '[5m]').replace(/\$\{\w+\}|\$\w+/g, '1');
}

function text(expr: string, node: SyntaxNode): string {
  return expr.slice(node.from, node.to);
}

/** The metric name of a `{__name__="x"}` matcher, undefined for any other matcher. */
function nameMatcher(expr: string, matcher: SyntaxNode): string | undefined {
  const label = matcher.getChild('LabelName');
  const op = matcher.getChild('MatchOp');
  const value = matcher.getChild('StringLiteral');
  if (label === null || op === null || value === null || text(expr, label) !== '__name__') {
    return undefined;
  }
  if (text(expr, op) !== '=') {
    throw new Error(`${text(expr, matcher)}: a metric name must be matched exactly to be checked`);
  }
  return JSON.parse(text(expr, value)) as string;
}

/**
 * The metric names of every vector selector in a PromQL expression (a rule's `expr`, a Grafana
 * target's, or the selector of a `label_values(<selector>, <label>)` variable), parsed with
 * Prometheus' own grammar. Throws on a syntax error, and on a selector whose metric name is not
 * fixed (a regex on `__name__`), which could not be checked.
 */
export function metricNamesOf(promql: string): string[] {
  const labelValues = /^\s*label_values\((.*),\s*\w+\s*\)\s*$/s.exec(promql);
  const expr = withoutGrafanaVariables(labelValues?.[1] ?? promql);
  const names: string[] = [];
  const errors: string[] = [];
  parser.parse(expr).iterate({
    enter(ref) {
      if (ref.type.isError) errors.push(`at ${ref.from}`);
      if (ref.name !== 'VectorSelector') return;
      const node = ref.node;
      const identifier = node.getChild('Identifier');
      const fromMatchers = (
        node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []
      )
        .map((matcher) => nameMatcher(expr, matcher))
        .filter((name): name is string => name !== undefined);
      const found = identifier === null ? fromMatchers : [text(expr, identifier), ...fromMatchers];
      if (found.length === 0) throw new Error(`${text(expr, node)}: no metric name`);
      names.push(...found);
    },
  });
  if (errors.length > 0) throw new Error(`not PromQL (${errors.join(', ')}): ${expr}`);
  return names;
}

/**
 * The metric names an exposition in Prometheus' text format offers, from its `# TYPE` lines
 * (prom-client writes them for every registered metric, also before a labelled one has a
 * sample): a histogram `x` offers `x_bucket`, `x_sum` and `x_count`, a summary `x`, `x_sum` and
 * `x_count`.
 */
export function exportedMetricNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = match;
    names.add(name);
    if (type === 'histogram')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}
