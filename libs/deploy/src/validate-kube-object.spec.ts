import { validateKubeObject } from './validate-kube-object';
import type { KubeObject } from './kube-object';

function deployment(container: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'app', namespace: 'slicekeeper' },
    spec: {
      selector: { matchLabels: { app: 'app' } },
      template: {
        metadata: { labels: { app: 'app' } },
        spec: { containers: [{ name: 'app', image: 'app:1', ...container }] },
      },
    },
  };
}

describe('validateKubeObject', () => {
  it.each([
    ['valid', deployment({ ports: [{ containerPort: 8080 }] }), []],
    [
      'misspelled-field',
      deployment({ readinesProbe: { httpGet: { path: '/readyz', port: 8080 } } }),
      ['unknown field spec.template.spec.containers[0].readinesProbe'],
    ],
    [
      'wrong-type',
      deployment({ ports: [{ containerPort: '8080' }] }),
      [expect.stringContaining('containerPort must be integer') as unknown],
    ],
    [
      'missing-required-field',
      deployment({ image: undefined, name: undefined }),
      [expect.stringContaining('containers/0 must have required property name') as unknown],
    ],
    [
      'unsupported-kind',
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } },
      ['unsupported kind example.com/v1 Widget'],
    ],
    [
      'wrapped-secret-data',
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's' },
        data: { 'tokens.json': 'e30K\ne30K\n' },
      },
      [],
    ],
  ] as [string, KubeObject, unknown[]][])('%s', (_name, object, problems) => {
    expect(validateKubeObject(object)).toEqual(problems);
  });
});
