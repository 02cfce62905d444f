import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { interpolateComposeFile } from '@slicekeeper/deploy';
import type { ComposeVariables } from '@slicekeeper/deploy';
import { listDriverProfiles, repoRoot } from '@slicekeeper/local-stack';
import { PROFILE_FEATURE_GATES } from './config';

interface ComposeFile {
  services: Record<string, { environment?: Record<string, string> }>;
}

const file = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as ComposeFile;

/** One service's environment as `docker compose` interpolates it with `variables`. */
function environment(service: string, variables: ComposeVariables): Record<string, string> {
  const compose = interpolateComposeFile(file, variables);
  return compose.services[service]?.environment ?? {};
}

describe('docker-compose.yml: the example drivers device profile', () => {
  it.each<[string, ComposeVariables, string]>([
    ['DRIVER_PROFILE unset: gpu', {}, 'gpu'],
    ['DRIVER_PROFILE blank: gpu', { DRIVER_PROFILE: '' }, 'gpu'],
    ...listDriverProfiles().map((profile): [string, ComposeVariables, string] => [
      `DRIVER_PROFILE=${profile}`,
      { DRIVER_PROFILE: profile },
      profile,
    ]),
  ])('%s reaches both example drivers', (_, variables, profile) => {
    expect(environment('example-driver-a', variables)['PROFILE']).toBe(profile);
    expect(environment('example-driver-b', variables)['PROFILE']).toBe(profile);
  });

  it.each<[string, ComposeVariables, Record<string, string>]>([
    [
      "the emulator has the profiles' four gates on by default",
      {},
      { KUBE_RELEASE: '', FEATURE_GATES: PROFILE_FEATURE_GATES },
    ],
    [
      "FEATURE_GATES blank: the release's defaults",
      { FEATURE_GATES: '', KUBE_RELEASE: '1.33' },
      { KUBE_RELEASE: '1.33', FEATURE_GATES: '' },
    ],
  ])('%s', (_, variables, expected) => {
    expect(environment('kube-emulator', variables)).toMatchObject(expected);
  });
});
