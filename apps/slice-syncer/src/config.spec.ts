import { healthTaintPolicy, loadConfig } from './config';

const base = { KUBECONFIG: '/etc/kubeconfig' };

describe('slice-syncer config', () => {
  it('taints unhealthy devices NoSchedule unless told otherwise, per driver where asked', () => {
    const config = loadConfig({
      ...base,
      HEALTH_TAINT_EFFECT: 'NoExecute',
      HEALTH_TAINT_EFFECTS: 'gpu.example.com=None, nic.example.com=off',
    });
    expect(healthTaintPolicy(config, 'gpu.example.com')).toBe('None');
    expect(healthTaintPolicy(config, 'nic.example.com')).toBe('off');
    expect(healthTaintPolicy(config, 'fpga.example.com')).toBe('NoExecute');
    expect(healthTaintPolicy(loadConfig(base), 'gpu.example.com')).toBe('NoSchedule');
  });

  it('names the variable and the rule for a bad health taint setting', () => {
    expect(() => loadConfig({ ...base, HEALTH_TAINT_EFFECT: 'PreferNoSchedule' })).toThrow(
      /HEALTH_TAINT_EFFECT/,
    );
    expect(() =>
      loadConfig({ ...base, HEALTH_TAINT_EFFECTS: 'gpu.example.com=Sometimes' }),
    ).toThrow(
      /HEALTH_TAINT_EFFECTS: "gpu.example.com=Sometimes": effect must be one of None, NoSchedule, NoExecute, off/,
    );
    expect(() => loadConfig({ ...base, HEALTH_TAINT_EFFECTS: 'NoExecute' })).toThrow(
      /HEALTH_TAINT_EFFECTS: "NoExecute": expected <driver>=<effect>/,
    );
    expect(() => loadConfig({ ...base, HEALTH_TAINT_EFFECTS: 'Bad_Driver=None' })).toThrow(
      /HEALTH_TAINT_EFFECTS: "Bad_Driver=None": expected <driver>=<effect> with a driver name \(/,
    );
  });
});
