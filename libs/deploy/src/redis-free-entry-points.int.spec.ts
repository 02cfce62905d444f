import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { repoRoot } from '@slicekeeper/testing';

/**
 * What loading a lib's entry point loads, in a fresh node process as a service would: the
 * Kubernetes client and the pure libs load no Redis client (issue 25), whatever imports they
 * gain later through another lib; and no process loads @kubernetes/client-node or the tracing SDK
 * until it needs them (tens of MiB each). The lint fences in eslint.config.mjs reject the
 * imports; this checks what node actually loads. With a second argument, that export of the
 * entry point is called first.
 */
const loadScript = `
const loaded = new Set();
const entry = require(process.argv[1]);
if (process.argv[2]) entry[process.argv[2]]();
for (const file of Object.keys(require.cache)) {
  const parts = file.split('/node_modules/');
  if (parts.length < 2) continue;
  const [first, second] = parts[parts.length - 1].split('/');
  loaded.add(first.startsWith('@') ? first + '/' + second : first);
}
process.stdout.write(JSON.stringify([...loaded].sort()));
`;

/** The npm packages that requiring `entryPoint` loads (workspace libs resolve to their sources). */
async function packagesLoadedBy(entryPoint: string, call?: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      ...['--import', 'tsx', '--conditions=@slicekeeper/source', '-e', loadScript, entryPoint],
      ...(call === undefined ? [] : [call]),
    ],
    { cwd: repoRoot },
  );
  return JSON.parse(stdout) as string[];
}

const redisClients = ['bullmq', 'ioredis'];
/** Loaded only when needed: client-node for exec plugins and auth providers, the SDK for tracing. */
const onDemand = [
  '@kubernetes/client-node',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/sdk-trace',
];

describe('what loading an entry point loads', () => {
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

  it.each(['@slicekeeper/kube', '@slicekeeper/telemetry', '@slicekeeper/runtime'])(
    '%s loads neither client-node nor the tracing SDK until they are needed',
    async (entryPoint) => {
      const loaded = await packagesLoadedBy(entryPoint);
      expect(loaded.filter((name) => onDemand.includes(name))).toEqual([]);
    },
    120_000,
  );

  it('the Kubernetes client loads its kubeconfig parser (the check sees packages)', async () => {
    expect(await packagesLoadedBy('@slicekeeper/kube')).toContain('yaml');
  }, 120_000);

  it('the tracing SDK loads once a process starts tracing (the check sees it load)', async () => {
    const loaded = await packagesLoadedBy('@slicekeeper/telemetry', 'enableContext');
    expect(loaded).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace']));
  }, 120_000);

  it('the queue lib loads both (the check sees Redis clients)', async () => {
    const loaded = await packagesLoadedBy('@slicekeeper/queue');
    expect(loaded.filter((name) => redisClients.includes(name))).toEqual(redisClients);
  }, 120_000);
});
