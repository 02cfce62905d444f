import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { repoRoot } from '@slicekeeper/testing';

/**
 * What loading a lib's entry point loads, in a fresh node process as a service would: the
 * Kubernetes client and the pure libs load no Redis client (issue 25), whatever imports they
 * gain later through another lib. The lint fence in eslint.config.mjs rejects the import; this
 * checks what node actually loads.
 */
const loadScript = `
const loaded = new Set();
require(process.argv[1]);
for (const file of Object.keys(require.cache)) {
  const parts = file.split('/node_modules/');
  if (parts.length < 2) continue;
  const [first, second] = parts[parts.length - 1].split('/');
  loaded.add(first.startsWith('@') ? first + '/' + second : first);
}
process.stdout.write(JSON.stringify([...loaded].sort()));
`;

/** The npm packages that requiring `entryPoint` loads (workspace libs resolve to their sources). */
async function packagesLoadedBy(entryPoint: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--conditions=@slicekeeper/source', '-e', loadScript, entryPoint],
    { cwd: repoRoot },
  );
  return JSON.parse(stdout) as string[];
}

const redisClients = ['bullmq', 'ioredis'];

describe('entry points that load no Redis client', () => {
  it.each([
    '@slicekeeper/kube',
    '@slicekeeper/time',
    '@slicekeeper/slices',
    '@slicekeeper/contracts',
  ])(
    '%s',
    async (entryPoint) => {
      const loaded = await packagesLoadedBy(entryPoint);
      expect(loaded.filter((name) => redisClients.includes(name))).toEqual([]);
    },
    120_000,
  );

  it('the Kubernetes client still loads client-node (the check sees packages)', async () => {
    expect(await packagesLoadedBy('@slicekeeper/kube')).toContain('@kubernetes/client-node');
  }, 120_000);

  it('the queue lib loads both (the check sees Redis clients)', async () => {
    const loaded = await packagesLoadedBy('@slicekeeper/queue');
    expect(loaded.filter((name) => redisClients.includes(name))).toEqual(redisClients);
  }, 120_000);
});
