import { stackSummary } from './stack-summary';
import type { LocalStackInfo } from './local-stack';

const info: LocalStackInfo = {
  apiUrl: 'http://127.0.0.1:8080',
  docsUrl: 'http://127.0.0.1:8080/docs',
  kubeconfig: '/repo/.slicekeeper/kubeconfig',
  emulatorUrl: 'http://127.0.0.1:8001',
  redisUrl: 'redis://127.0.0.1:6379',
  tokenFile: '/repo/.slicekeeper/tokens.json',
  adminTokenFile: '/repo/.slicekeeper/admin-token',
  pids: new Map(),
  startedInMs: 4321,
};

describe('stackSummary', () => {
  it('lists where each part is and lines to copy, paths relative to the working directory', () => {
    expect(stackSummary(info, '/repo')).toEqual([
      'ready in 4.3s',
      '  registration API  http://127.0.0.1:8080',
      '  API docs          http://127.0.0.1:8080/docs',
      '  status page       http://127.0.0.1:8080/ui (sign in with the admin token)',
      '  kubeconfig        .slicekeeper/kubeconfig',
      '  kube emulator     http://127.0.0.1:8001',
      '  redis             redis://127.0.0.1:6379',
      '  tokens            .slicekeeper/tokens.json (admin token alone: .slicekeeper/admin-token)',
      '',
      '  kubectl --kubeconfig .slicekeeper/kubeconfig get resourceslices',
      '  curl -H "Authorization: Bearer $(cat .slicekeeper/admin-token)" http://127.0.0.1:8080/v1/plugins',
      '  xdg-open "http://127.0.0.1:8080/ui#token=$(cat .slicekeeper/admin-token)"   # macOS: open',
      '',
      'A process that dies is started again, with backoff. Ctrl-C stops everything.',
    ]);
  });

  it('shows paths outside the working directory as they are, and no emulator with a cluster', () => {
    const lines = stackSummary({ ...info, emulatorUrl: undefined }, '/elsewhere');
    expect(lines).toContain(
      '  xdg-open "http://127.0.0.1:8080/ui#token=$(cat /repo/.slicekeeper/admin-token)"   # macOS: open',
    );
    expect(lines.some((line) => line.includes('kube emulator'))).toBe(false);
  });
});
