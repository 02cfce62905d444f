import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import type { DriverInventory } from '@slicekeeper/contracts';
import {
  SupervisedProcess,
  inheritedEnv,
  listDriverProfiles,
  loadDriverProfile,
  repoRoot,
} from '@slicekeeper/local-stack';
import { publisher, toDriverInventory } from '@slicekeeper/proto';
import { waitFor } from '@slicekeeper/testing';

/** Debian's interpreter, with python3-grpcio and python3-protobuf (not a pyenv one on PATH). */
const PYTHON = '/usr/bin/python3';
const EXAMPLE = join(repoRoot, 'clients/python/examples/example_driver.py');

/**
 * The Python example driver reads the example driver's profile files itself (apps/example-driver
 * reads the same ones): what it streams for `--profile` must be the file, field for field, as
 * apps/example-driver's own spec proves for the TypeScript driver.
 */
describe('the Python example driver publishes the same profiles as apps/example-driver', () => {
  let dir: string;
  const drivers: SupervisedProcess[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sk-py-profiles-'));
  });
  afterAll(async () => {
    await Promise.all(drivers.map((driver) => driver.stop(5000)));
    await rm(dir, { recursive: true, force: true });
  });

  it('has a --profile for every profile file', () => {
    expect(listDriverProfiles()).toEqual(['fabric', 'gpu', 'nic', 'partitionable-gpu']);
  });

  it.each(listDriverProfiles().map((profile) => [profile]))(
    '--profile %s streams the profile file as it is',
    async (profile) => {
      // The fabric pool is cluster-level: its key has no node.
      const node = profile === 'fabric' ? '' : 'node-a';
      const endpoint = `unix://${join(dir, `${profile}.sock`)}`;
      const driver = new SupervisedProcess({
        name: `python-${profile}`,
        command: PYTHON,
        args: [EXAMPLE, '--node', node, '--profile', profile, '--endpoint', endpoint],
        env: {
          ...inheritedEnv(process.env, ['PATH', 'HOME', 'LANG']),
          PYTHONDONTWRITEBYTECODE: '1',
        },
      });
      drivers.push(driver);
      await driver.waitForLog('serving', 'serving', 30_000);

      const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure());
      const seen: DriverInventory[] = [];
      const call = client.watchResources({ nodeName: node });
      call.on('data', (m: publisher.DriverResources) =>
        seen.push(toDriverInventory(m, { nodeName: node })),
      );
      call.on('error', () => undefined);
      await waitFor(() => seen.length === 1, { description: `the ${profile} inventory` });
      call.cancel();
      client.close();
      await driver.stop(5000);

      const file = loadDriverProfile(profile);
      expect(seen[0]).toEqual({
        pools: file.pools.map((pool) => ({ ...pool, name: pool.name || node })),
      });
    },
    60_000,
  );
});
