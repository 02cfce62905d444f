import { stackSummary } from './stack-summary';
import type { LocalStackInfo } from './local-stack';

const info: LocalStackInfo = {
  apiUrl: 'http://127.0.0.1:8080',
  docsUrl: 'http://127.0.0.1:8080/docs',
  kubeconfig: '/repo/.slicekeeper/kubeconfig',
  emulatorUrl: 'http://127.0.0.1:8001',
  emulatorGates: { release: '1.34', featureGates: {} },
  profile: { name: 'gpu', gates: [] },
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
      "  Kubernetes        1.34 (the emulator's KUBE_RELEASE)",
      "  feature gates     none given; others: the release's defaults",
      '  driver profile    gpu (needs no feature gate)',
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
    const withoutEmulator: LocalStackInfo = { ...info, emulatorUrl: undefined };
    delete withoutEmulator.emulatorGates;
    const lines = stackSummary(withoutEmulator, '/elsewhere');
    expect(lines).toContain(
      '  xdg-open "http://127.0.0.1:8080/ui#token=$(cat /repo/.slicekeeper/admin-token)"   # macOS: open',
    );
    expect(lines.some((line) => line.includes('kube emulator'))).toBe(false);
    expect(lines.some((line) => line.includes('feature gates'))).toBe(false);
  });

  it.each<[string, Partial<LocalStackInfo>, string]>([
    [
      'each gate the profile needs, as the emulator has it',
      {
        emulatorGates: {
          release: '1.34',
          featureGates: { DRAPartitionableDevices: true, DRADeviceBindingConditions: false },
        },
        profile: {
          name: 'fabric',
          gates: ['DRAPartitionableDevices', 'DRADeviceBindingConditions'],
        },
      },
      '  driver profile    fabric, needs DRAPartitionableDevices (on), DRADeviceBindingConditions (off: its fields are dropped)',
    ],
    [
      "a gate not given: the release's default",
      { profile: { name: 'nic', gates: ['DRAConsumableCapacity'] } },
      "  driver profile    nic, needs DRAConsumableCapacity (the release's default)",
    ],
    [
      "a real cluster: the cluster's setting",
      {
        emulatorUrl: undefined,
        emulatorGates: undefined,
        profile: { name: 'nic', gates: ['DRAConsumableCapacity'] },
      },
      "  driver profile    nic, needs DRAConsumableCapacity (the cluster's setting)",
    ],
  ])('names the profile and its gates: %s', (_, changes, line) => {
    const { emulatorGates, ...rest } = { ...info, ...changes };
    const lines = stackSummary(
      emulatorGates === undefined ? rest : { ...rest, emulatorGates },
      '/repo',
    );
    expect(lines).toContain(line);
  });

  it('lists the gates the emulator was given', () => {
    const lines = stackSummary(
      { ...info, emulatorGates: { release: '1.35', featureGates: { DRADeviceTaints: true } } },
      '/repo',
    );
    expect(lines).toContain(
      "  feature gates     DRADeviceTaints=true; others: the release's defaults",
    );
    expect(lines).toContain("  Kubernetes        1.35 (the emulator's KUBE_RELEASE)");
  });
});
