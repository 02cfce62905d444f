import { PROFILE_FEATURE_GATES, loadConfig } from './config';

describe('local stack config: the driver profile and the emulator it needs', () => {
  it.each<[string, Record<string, string>, [string, string | undefined, string | undefined]]>([
    [
      'defaults: the gpu profile, the four alpha DRA gates on',
      {},
      ['gpu', undefined, PROFILE_FEATURE_GATES],
    ],
    ['a profile by name', { PROFILE: 'fabric' }, ['fabric', undefined, PROFILE_FEATURE_GATES]],
    [
      'a release that has the gates keeps them on',
      { KUBE_RELEASE: '1.36' },
      ['gpu', '1.36', PROFILE_FEATURE_GATES],
    ],
    [
      "a release before 1.34 gets its own defaults (it lacks DRAConsumableCapacity's gate)",
      { KUBE_RELEASE: '1.33' },
      ['gpu', '1.33', undefined],
    ],
    [
      'gates given are passed as given',
      { PROFILE: 'nic', FEATURE_GATES: 'DRAConsumableCapacity=false' },
      ['nic', undefined, 'DRAConsumableCapacity=false'],
    ],
  ])('%s', (_, env, [profile, release, gates]) => {
    const config = loadConfig(env);
    expect([config.PROFILE, config.KUBE_RELEASE, config.FEATURE_GATES]).toEqual([
      profile,
      release,
      gates,
    ]);
  });

  it('refuses a profile the example driver does not have, naming the choices', () => {
    expect(() => loadConfig({ PROFILE: 'tpu' })).toThrow(
      /PROFILE.*must be one of fabric, gpu, nic, partitionable-gpu/,
    );
  });
});
