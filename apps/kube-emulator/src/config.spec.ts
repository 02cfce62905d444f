import { loadConfig } from './config';

describe('kube emulator config', () => {
  it('defaults to loopback, port 8001 and a kubeconfig under .kube-emulator', () => {
    expect(loadConfig({})).toEqual({
      PORT: 8001,
      HOST: '127.0.0.1',
      KUBECONFIG_OUT: '.kube-emulator/kubeconfig',
      SERVICE_ACCOUNT_ISSUER: 'https://kubernetes.default.svc.cluster.local',
      HISTORY_SIZE: 10_000,
      GC_DELAY: 0,
      KUBE_RELEASE: '1.34',
      FEATURE_GATES: {},
      LOG_LEVEL: 'info',
    });
  });

  it('reads every variable', () => {
    expect(
      loadConfig({
        PORT: '0',
        TOKEN_FILE: '/etc/tokens.csv',
        KUBECONFIG_OUT: '/tmp/kc',
        HISTORY_SIZE: '50',
        GC_DELAY: '2s',
        LOG_LEVEL: 'debug',
        SERVICE_ACCOUNT_ISSUER: 'https://issuer.example',
        SERVICE_ACCOUNT_SIGNING_KEY_FILE: '/var/sa.key',
      }),
    ).toMatchObject({
      PORT: 0,
      TOKEN_FILE: '/etc/tokens.csv',
      KUBECONFIG_OUT: '/tmp/kc',
      HISTORY_SIZE: 50,
      GC_DELAY: 2000,
      LOG_LEVEL: 'debug',
      SERVICE_ACCOUNT_ISSUER: 'https://issuer.example',
      SERVICE_ACCOUNT_SIGNING_KEY_FILE: '/var/sa.key',
    });
  });

  it('names every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'http', HISTORY_SIZE: '0', LOG_LEVEL: 'loud' })).toThrow(
      /PORT[\s\S]*HISTORY_SIZE[\s\S]*LOG_LEVEL/,
    );
  });

  describe('FEATURE_GATES', () => {
    it("reads kube-apiserver's --feature-gates syntax", () => {
      expect(
        loadConfig({
          FEATURE_GATES:
            'DRADeviceTaints=true, DRAPartitionableDevices=false,,DRAConsumableCapacity=1,DRAResourceClaimDeviceStatus=F',
        }).FEATURE_GATES,
      ).toEqual({
        DRADeviceTaints: true,
        DRAPartitionableDevices: false,
        DRAConsumableCapacity: true,
        DRAResourceClaimDeviceStatus: false,
      });
    });

    it('refuses a gate it does not know, naming it', () => {
      expect(() =>
        loadConfig({ FEATURE_GATES: 'DRADeviceTaints=true,DRADeviceTaint=true' }),
      ).toThrow(
        /FEATURE_GATES: unrecognized feature gate: DRADeviceTaint \(the emulator knows DRADeviceTaints, /,
      );
    });

    it('names every bad entry: a missing or a non-boolean value', () => {
      expect(() =>
        loadConfig({ FEATURE_GATES: 'DRADeviceTaints,DRAConsumableCapacity=on' }),
      ).toThrow(
        /FEATURE_GATES: missing bool value for DRADeviceTaints[\s\S]*FEATURE_GATES: invalid value of DRAConsumableCapacity=on/,
      );
    });
  });

  describe('KUBE_RELEASE', () => {
    it('takes a release the emulator can pass for', () => {
      expect(loadConfig({ KUBE_RELEASE: '1.32' }).KUBE_RELEASE).toBe('1.32');
      expect(loadConfig({ KUBE_RELEASE: '1.36' }).KUBE_RELEASE).toBe('1.36');
      expect(loadConfig({ KUBE_RELEASE: '1.37' }).KUBE_RELEASE).toBe('1.37');
    });

    it('refuses another, naming the variable and the accepted values', () => {
      expect(() => loadConfig({ KUBE_RELEASE: 'v1.34' })).toThrow(
        'KUBE_RELEASE: must be one of 1.32, 1.33, 1.34, 1.35, 1.36, 1.37 (got "v1.34")',
      );
    });

    it('refuses a gate the release does not have', () => {
      expect(() =>
        loadConfig({ KUBE_RELEASE: '1.33', FEATURE_GATES: 'DRAConsumableCapacity=true' }),
      ).toThrow(
        'FEATURE_GATES: unrecognized feature gate: DRAConsumableCapacity (kube-apiserver 1.33 has no such gate)',
      );
      expect(
        loadConfig({ KUBE_RELEASE: '1.33', FEATURE_GATES: 'DRADeviceTaints=true' }).FEATURE_GATES,
      ).toEqual({ DRADeviceTaints: true });
      expect(() =>
        loadConfig({ KUBE_RELEASE: '1.35', FEATURE_GATES: 'DRANodeAllocatableResources=true' }),
      ).toThrow(
        'FEATURE_GATES: unrecognized feature gate: DRANodeAllocatableResources (kube-apiserver 1.35 has no such gate)',
      );
      expect(
        loadConfig({
          KUBE_RELEASE: '1.36',
          FEATURE_GATES: 'DRAListTypeAttributes=true,DRANodeAllocatableResources=true',
        }).FEATURE_GATES,
      ).toEqual({ DRAListTypeAttributes: true, DRANodeAllocatableResources: true });
    });
  });
});
