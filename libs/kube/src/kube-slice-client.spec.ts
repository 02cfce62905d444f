import { TerminalError } from '@slicekeeper/errors';
import { KubeSliceClient } from './kube-slice-client';

function kubeconfig(cluster: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}

describe('KubeSliceClient configuration', () => {
  it.each([
    [
      { kind: 'file', path: '/nonexistent/kubeconfig' },
      /^load kubeconfig "\/nonexistent\/kubeconfig": .*ENOENT/,
    ],
    [
      { kind: 'in-cluster', host: '10.0.0.1', port: 443, caPath: '/nonexistent/ca.crt' },
      /^load in-cluster config: .*ENOENT.*ca\.crt/,
    ],
    [
      {
        kind: 'yaml',
        text: kubeconfig({ server: 'https://x:6443', 'proxy-url': 'http://proxy:3128' }),
      },
      /^load kubeconfig text: proxy-url is not supported$/,
    ],
    [
      { kind: 'yaml', text: kubeconfig({ server: 'ftp://x' }) },
      /^load kubeconfig text: unsupported server URL "ftp:\/\/x"$/,
    ],
  ] as const)('fails fast with a terminal config error (%j)', (source, message) => {
    let thrown: unknown;
    try {
      new KubeSliceClient({ kubeconfig: source });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TerminalError);
    expect(thrown).toMatchObject({
      code: 'config',
      message: expect.stringMatching(message) as unknown,
    });
  });

  it('closes once: a second close() returns the same promise', async () => {
    const api = new KubeSliceClient({
      kubeconfig: { kind: 'yaml', text: kubeconfig({ server: 'http://127.0.0.1:1' }) },
    });
    const closing = api.close();
    expect(api.close()).toBe(closing);
    await closing;
  });
});
