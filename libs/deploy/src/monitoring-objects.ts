import type { KubeObject } from './kube-object';

/**
 * The fields of a custom resource a check knows: a scalar kind, a map of string values, an
 * object of named fields, or an array of one shape.
 */
type Shape =
  | 'string'
  | 'number'
  | 'boolean'
  | 'duration'
  | 'stringMap'
  | { readonly [field: string]: Shape }
  | readonly [Shape];

// Prometheus' duration, as the Prometheus Operator's CRDs pattern it.
const DURATION =
  /^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$/;

const labelSelector: Shape = {
  matchLabels: 'stringMap',
  matchExpressions: [{ key: 'string', operator: 'string', values: ['string'] }],
};

const relabelConfig: Shape = {
  sourceLabels: ['string'],
  separator: 'string',
  targetLabel: 'string',
  regex: 'string',
  modulus: 'number',
  replacement: 'string',
  action: 'string',
};

/**
 * The fields of monitoring.coreos.com/v1 PrometheusRule and PodMonitor specs that slicekeeper
 * may use (a subset of the Prometheus Operator's CRDs, as its API reference names them), so that
 * a misspelt field, which the API server would prune without a word, fails a check instead.
 */
const specs: ReadonlyMap<string, Shape> = new Map<string, Shape>([
  [
    'PrometheusRule',
    {
      groups: [
        {
          name: 'string',
          interval: 'duration',
          query_offset: 'duration',
          limit: 'number',
          labels: 'stringMap',
          rules: [
            {
              alert: 'string',
              record: 'string',
              expr: 'string',
              for: 'duration',
              keep_firing_for: 'duration',
              labels: 'stringMap',
              annotations: 'stringMap',
            },
          ],
        },
      ],
    },
  ],
  [
    'PodMonitor',
    {
      jobLabel: 'string',
      podTargetLabels: ['string'],
      sampleLimit: 'number',
      selector: labelSelector,
      namespaceSelector: { any: 'boolean', matchNames: ['string'] },
      podMetricsEndpoints: [
        {
          port: 'string',
          portNumber: 'number',
          path: 'string',
          scheme: 'string',
          interval: 'duration',
          scrapeTimeout: 'duration',
          honorLabels: 'boolean',
          honorTimestamps: 'boolean',
          relabelings: [relabelConfig],
          metricRelabelings: [relabelConfig],
        },
      ],
    },
  ],
]);

function problemsOf(value: unknown, shape: Shape, path: string): string[] {
  if (typeof shape === 'string') {
    switch (shape) {
      case 'stringMap':
        return typeof value === 'object' && value !== null && !Array.isArray(value)
          ? Object.entries(value)
              .filter(([, item]) => typeof item !== 'string')
              .map(([key]) => `${path}.${key}: not a string`)
          : [`${path}: not a map of strings`];
      case 'duration':
        return typeof value === 'string' && DURATION.test(value) ? [] : [`${path}: not a duration`];
      default:
        return typeof value === shape ? [] : [`${path}: not a ${shape}`];
    }
  }
  if (Array.isArray(shape)) {
    const [element] = shape as readonly [Shape];
    return Array.isArray(value)
      ? value.flatMap((item, index) => problemsOf(item, element, `${path}[${index}]`))
      : [`${path}: not an array`];
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [`${path}: not an object`];
  }
  const fields = shape as { readonly [field: string]: Shape };
  return Object.entries(value).flatMap(([key, item]) => {
    const fieldShape = fields[key];
    const fieldPath = `${path}.${key}`;
    return fieldShape === undefined
      ? [`unknown field ${fieldPath}`]
      : problemsOf(item, fieldShape, fieldPath);
  });
}

/** Rules the CRDs' schemas require beyond field shapes. */
function requiredProblems(object: KubeObject): string[] {
  const spec = object['spec'] as Record<string, unknown> | undefined;
  if (object.kind === 'PrometheusRule') {
    const groups = (spec?.['groups'] ?? []) as { name?: unknown; rules?: unknown[] }[];
    return groups.flatMap((group, g) => [
      ...(typeof group.name === 'string' ? [] : [`spec.groups[${g}]: no name`]),
      ...((group.rules ?? []) as Record<string, unknown>[]).flatMap((rule, r) =>
        typeof rule['expr'] === 'string' &&
        (typeof rule['alert'] === 'string') !== (typeof rule['record'] === 'string')
          ? []
          : [`spec.groups[${g}].rules[${r}]: needs expr and exactly one of alert and record`],
      ),
    ]);
  }
  return spec?.['selector'] === undefined ? ['spec.selector: missing'] : [];
}

/**
 * Problems of a monitoring.coreos.com/v1 object (PrometheusRule, PodMonitor): unknown or
 * mistyped spec fields, missing required ones. Empty when it is valid.
 */
export function validateMonitoringObject(object: KubeObject): string[] {
  const shape = specs.get(object.kind);
  if (object.apiVersion !== 'monitoring.coreos.com/v1' || shape === undefined) {
    return [`unsupported kind ${object.apiVersion} ${object.kind}`];
  }
  const fields = Object.keys(object).filter(
    (key) => !['apiVersion', 'kind', 'metadata', 'spec'].includes(key),
  );
  return [
    ...fields.map((key) => `unknown field ${key}`),
    ...problemsOf(object['spec'], shape, 'spec'),
    ...requiredProblems(object),
  ];
}

/** Whether the object is one of the Prometheus Operator's (checked by validateMonitoringObject). */
export function isMonitoringObject(object: KubeObject): boolean {
  return object.apiVersion.startsWith('monitoring.coreos.com/');
}
