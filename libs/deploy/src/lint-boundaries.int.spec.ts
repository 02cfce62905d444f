import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { repoRoot } from '@slicekeeper/testing';

/**
 * The module-boundary fence of eslint.config.mjs (STYLE.md rules 8 and 20), checked against the
 * real config and the real nx project graph: production code may not import tooling, test
 * support or test doubles; specs and benchmarks may. No service imports another's lib (the
 * watcher not the syncer, nor the other way round); the Kubernetes client loads nothing that
 * opens Redis; pure logic imports nothing with I/O. Only libs/state names Redis keys, however
 * the name is put together.
 */

interface LintCase {
  /** Folder ESLint runs in, as `nx lint` does: the project's root. */
  readonly project: string;
  /** Path of the probe inside `project`; it need not exist. */
  readonly file: string;
  readonly source: string;
}

interface LintMessage {
  readonly ruleId: string | null;
  readonly severity: number;
  readonly message: string;
  readonly fatal?: boolean;
}

/**
 * Lints each case with ESLint's Node API (`lintText`) in a child node process: ESLint loads
 * eslint.config.mjs with a dynamic import(), which jest's module system refuses without
 * --experimental-vm-modules. The boundary rule reads nx's cached project graph and skips itself
 * when there is none, so the child computes the graph first. Probe files do not exist, so type
 * information is switched off (`disableTypeChecked`); the rules under test do not need it.
 * Results follow a marker line because nx may print to stdout.
 */
const resultsMarker = '--- lint results ---';
const lintScript = `
const path = require('node:path');
const { createProjectGraphAsync } = require('@nx/devkit');
const { ESLint } = require('eslint');
const tseslint = require('typescript-eslint');
const cases = JSON.parse(process.argv[1]);
(async () => {
  await createProjectGraphAsync({ exitOnError: false });
  const messages = [];
  for (const { project, file, source } of cases) {
    const cwd = path.join(process.cwd(), project);
    const eslint = new ESLint({
      cwd,
      overrideConfig: [{ ...tseslint.configs.disableTypeChecked, files: ['**/*.ts'] }],
    });
    const [result] = await eslint.lintText(source, { filePath: path.join(cwd, file) });
    messages.push(result.messages);
  }
  process.stdout.write('\\n${resultsMarker}\\n' + JSON.stringify(messages));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

async function lintAll(cases: readonly LintCase[]): Promise<LintMessage[][]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['-e', lintScript, JSON.stringify(cases)],
    // No nx daemon: a test starts nothing that outlives it.
    { cwd: repoRoot, env: { ...process.env, NX_DAEMON: 'false' }, maxBuffer: 16 * 1024 * 1024 },
  );
  const start = stdout.lastIndexOf(resultsMarker);
  if (start < 0) throw new Error(`no lint results in the output of ESLint:\n${stdout}`);
  return JSON.parse(stdout.slice(start + resultsMarker.length)) as LintMessage[][];
}

const importEmulator = "import { startKubeEmulator } from '@slicekeeper/apiserver';\n";
const importTesting = "import { RedisServer } from '@slicekeeper/testing';\n";
const importLocalStack = "import { LocalStack } from '@slicekeeper/local-stack';\n";
const importConfig = "import { parseConfig } from '@slicekeeper/config';\n";
const importWatcherFakes = "import { silentLogger } from '@slicekeeper/watcher/testing';\n";
const importOwnFakes = "import { silentLogger } from './testing/fakes';\n";

const importKeyLayout = "import { redisKeys } from '@slicekeeper/state/testing';\n";
const handBuiltKey =
  'export const snapshotKey = (prefix: string, id: string): string => `${prefix}:{${id}}:snapshot`;\n';
const handBuiltIndex =
  'export const knownKeys = (prefix: string): string => `${prefix}:known-keys`;\n';
const errorText = 'export const text = (path: string): string => `${path}: not YAML`;\n';
const concatenatedIndex =
  "export const knownKeys = (prefix: string): string => prefix + ':known-keys';\n";
const concatenatedKey =
  "export const snapshotKey = (prefix: string, id: string): string => prefix + ':{' + id + '}';\n";
const appendedKey =
  "export function leaseKey(prefix: string): string {\n  let key = prefix;\n  key += ':lease';\n  return key;\n}\n";
const concatCallKey =
  "export const statusKey = (prefix: string): string => prefix.concat(':status');\n";
const hostAndPort =
  "export const address = (host: string, port: number): string => host + ':' + String(port);\n" +
  "export const local = (host: string): string => host + ':6379';\n";

const importSyncer = "import { Reconciler } from '@slicekeeper/syncer';\n";
const importWatcher = "import { PluginWatcher } from '@slicekeeper/watcher';\n";
const importKube = "import { KubeTransport } from '@slicekeeper/kube';\n";
const importQueue = "import { SyncQueue } from '@slicekeeper/queue';\n";
// A lib with I/O (a metrics server, a logger) whose own graph does not lead back to the domain
// libs, so that the probe is refused for its tag rather than for a cycle it would close.
const importObservability = "import { createLogger } from '@slicekeeper/observability';\n";
const importRuntime = "import { runService } from '@slicekeeper/runtime';\n";
const importState = "import { SnapshotStore } from '@slicekeeper/state';\n";
const importTime = "import { Backoff, systemClock } from '@slicekeeper/time';\n";
const importIoredis = "import { Redis } from 'ioredis';\n";
const importClientNode = "import { KubeConfig } from '@kubernetes/client-node';\n";
const importClientNodeTypes = "import type { KubeConfig } from '@kubernetes/client-node';\n";
const importTracingSdk = "import { TracerProvider } from '@opentelemetry/sdk-trace';\n";
const importBullmq = "import { Queue } from 'bullmq';\n";

const boundaries = '@nx/enforce-module-boundaries';
const restrictedImports = '@typescript-eslint/no-restricted-imports';
const keyNames = 'no-restricted-syntax';

interface ProbeCase extends LintCase {
  readonly name: string;
  /** The rule that must reject the probe, or null when it must lint clean. */
  readonly rejectedBy: string | null;
  /** What the rejection must name (the fence's tag or package), so no other rule stands in. */
  readonly because?: string;
}

/** Named cases: an import placed in a file, and the rule that must reject it (or none). */
const cases: readonly ProbeCase[] = [
  {
    name: 'production lib imports the kube emulator',
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: importEmulator,
    rejectedBy: boundaries,
  },
  {
    name: 'spec of a production lib imports the kube emulator',
    project: 'libs/syncer',
    file: 'src/boundary-probe.spec.ts',
    source: importEmulator,
    rejectedBy: null,
  },
  {
    name: 'production lib imports test support',
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: importTesting,
    rejectedBy: boundaries,
  },
  {
    name: "app's main.ts imports the local stack",
    project: 'apps/slice-syncer',
    file: 'src/main.ts',
    source: importLocalStack,
    rejectedBy: boundaries,
  },
  {
    name: 'benchmark of an app imports test support and the kube emulator',
    project: 'apps/slice-syncer',
    file: 'bench/boundary-probe.bench.ts',
    source: importTesting + importEmulator,
    rejectedBy: null,
  },
  {
    name: 'tooling imports test support and a production lib',
    project: 'apps/kube-emulator',
    file: 'src/boundary-probe.ts',
    source: importTesting + importConfig,
    rejectedBy: null,
  },
  {
    name: "production lib imports another lib's test doubles",
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: importWatcherFakes,
    rejectedBy: restrictedImports,
  },
  {
    name: 'production lib imports its own test doubles',
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: importOwnFakes,
    rejectedBy: restrictedImports,
  },
  {
    name: 'production lib imports client-node (its whole generated API loads)',
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importClientNode,
    rejectedBy: restrictedImports,
    because: '@kubernetes/client-node',
  },
  {
    name: 'production lib imports the tracing SDK (it loads when tracing starts)',
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: importTracingSdk,
    rejectedBy: restrictedImports,
    because: '@opentelemetry/sdk-trace',
  },
  {
    name: "production lib imports client-node's types only",
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importClientNodeTypes,
    rejectedBy: null,
  },
  {
    name: "e2e harness (tooling) imports a lib's test doubles",
    project: 'apps/e2e',
    file: 'src/harness/boundary-probe.ts',
    source: importWatcherFakes,
    rejectedBy: null,
  },
  {
    name: 'spec imports its own test doubles',
    project: 'libs/watcher',
    file: 'src/boundary-probe.spec.ts',
    source: importOwnFakes,
    rejectedBy: null,
  },
  {
    name: 'production lib imports the Redis key layout',
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: importKeyLayout,
    rejectedBy: restrictedImports,
  },
  {
    name: "production lib builds a key's Redis name by hand",
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: handBuiltKey,
    rejectedBy: keyNames,
  },
  {
    name: "production app builds an index's Redis name by hand",
    project: 'apps/registration-api',
    file: 'src/boundary-probe.ts',
    source: handBuiltIndex,
    rejectedBy: keyNames,
  },
  {
    name: 'the state lib names Redis keys',
    project: 'libs/state',
    file: 'src/boundary-probe.ts',
    source: handBuiltKey + handBuiltIndex,
    rejectedBy: null,
  },
  {
    name: 'production text that only looks like a key',
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: errorText,
    rejectedBy: null,
  },
  {
    name: 'spec reads a record by its Redis name',
    project: 'libs/syncer',
    file: 'src/boundary-probe.spec.ts',
    source: importKeyLayout + handBuiltKey,
    rejectedBy: null,
  },
  {
    name: "production lib concatenates an index's Redis name",
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: concatenatedIndex,
    rejectedBy: keyNames,
  },
  {
    name: "production app concatenates a key's Redis name",
    project: 'apps/slice-syncer',
    file: 'src/boundary-probe.ts',
    source: concatenatedKey,
    rejectedBy: keyNames,
  },
  {
    name: 'production lib appends to a Redis name',
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: appendedKey,
    rejectedBy: keyNames,
  },
  {
    name: 'production lib builds a Redis name with concat()',
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: concatCallKey,
    rejectedBy: keyNames,
  },
  {
    name: 'the state lib concatenates Redis names',
    project: 'libs/state',
    file: 'src/boundary-probe.ts',
    source: concatenatedIndex + concatenatedKey + appendedKey + concatCallKey,
    rejectedBy: null,
  },
  {
    name: 'production text that concatenates a host and a port',
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: hostAndPort,
    rejectedBy: null,
  },
  {
    name: 'watcher lib imports the syncer',
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: importSyncer,
    rejectedBy: boundaries,
    because: 'scope:watcher',
  },
  {
    name: 'spec of the watcher lib imports the syncer',
    project: 'libs/watcher',
    file: 'src/boundary-probe.spec.ts',
    source: importSyncer,
    rejectedBy: boundaries,
    because: 'scope:watcher',
  },
  {
    name: 'syncer lib imports the watcher',
    project: 'libs/syncer',
    file: 'src/boundary-probe.ts',
    source: importWatcher,
    rejectedBy: boundaries,
    because: 'scope:syncer',
  },
  {
    name: "plugin-watcher app imports the syncer's lib",
    project: 'apps/plugin-watcher',
    file: 'src/boundary-probe.ts',
    source: importSyncer,
    rejectedBy: boundaries,
    because: 'scope:plugin-watcher',
  },
  {
    name: "slice-syncer app imports the watcher's lib",
    project: 'apps/slice-syncer',
    file: 'src/boundary-probe.ts',
    source: importWatcher,
    rejectedBy: boundaries,
    because: 'scope:slice-syncer',
  },
  {
    name: "registration-api app imports the syncer's lib",
    project: 'apps/registration-api',
    file: 'src/boundary-probe.ts',
    source: importSyncer,
    rejectedBy: boundaries,
    because: 'scope:registration-api',
  },
  {
    name: 'spec of the registration-api app runs a syncer',
    project: 'apps/registration-api',
    file: 'src/boundary-probe.int.spec.ts',
    source: importSyncer,
    rejectedBy: null,
  },
  {
    name: 'services that talk to the API server use the Kubernetes client',
    project: 'apps/registration-api',
    file: 'src/boundary-probe.ts',
    source: importKube,
    rejectedBy: null,
  },
  {
    name: 'plugin-watcher app imports the Kubernetes client',
    project: 'apps/plugin-watcher',
    file: 'src/boundary-probe.ts',
    source: importKube,
    rejectedBy: boundaries,
    because: 'scope:plugin-watcher',
  },
  {
    name: 'shared lib imports a service lib',
    project: 'libs/driver-kit',
    file: 'src/boundary-probe.ts',
    source: importSyncer,
    rejectedBy: boundaries,
    because: 'scope:shared',
  },
  {
    name: 'Kubernetes client imports ioredis',
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importIoredis,
    rejectedBy: boundaries,
    because: '"ioredis"',
  },
  {
    name: 'Kubernetes client imports BullMQ',
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importBullmq,
    rejectedBy: boundaries,
    because: '"bullmq"',
  },
  {
    name: 'Kubernetes client imports the queue lib',
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importQueue,
    rejectedBy: boundaries,
    because: 'io:redis',
  },
  {
    name: 'Kubernetes client imports the service runtime',
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importRuntime,
    rejectedBy: boundaries,
    because: 'io:redis',
  },
  {
    name: 'spec of the Kubernetes client imports the state lib',
    project: 'libs/kube',
    file: 'src/boundary-probe.spec.ts',
    source: importState,
    rejectedBy: boundaries,
    because: 'io:redis',
  },
  {
    name: 'Kubernetes client takes its clock and backoff from the time lib',
    project: 'libs/kube',
    file: 'src/boundary-probe.ts',
    source: importTime,
    rejectedBy: null,
  },
  {
    name: 'pure logic imports ioredis',
    project: 'libs/slices',
    file: 'src/boundary-probe.ts',
    source: importIoredis,
    rejectedBy: boundaries,
    because: '"ioredis"',
  },
  {
    name: 'pure logic imports a lib with I/O',
    project: 'libs/slices',
    file: 'src/boundary-probe.ts',
    source: importObservability,
    rejectedBy: boundaries,
    because: 'type:domain',
  },
  {
    name: 'pure logic uses the time lib',
    project: 'libs/slices',
    file: 'src/boundary-probe.ts',
    source: importTime,
    rejectedBy: null,
  },
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('module boundaries (eslint.config.mjs)', () => {
  let results: LintMessage[][];

  // Computing nx's project graph and linting every probe takes tens of seconds on a loaded machine.
  beforeAll(async () => {
    results = await lintAll(cases);
  }, 300_000);

  it.each(cases.map((testCase, index) => ({ ...testCase, index })))(
    '$name: rejected by $rejectedBy',
    ({ project, file, index, rejectedBy, because }) => {
      const messages = results[index] ?? [];
      const rejections = messages
        .filter(
          (message) =>
            message.fatal === true ||
            (message.severity === 2 &&
              (message.ruleId === boundaries ||
                message.ruleId === restrictedImports ||
                message.ruleId === keyNames)),
        )
        .map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`);
      expect({ file: `${project}/${file}`, rejections }).toEqual({
        file: `${project}/${file}`,
        rejections:
          rejectedBy === null
            ? []
            : [
                expect.stringMatching(
                  new RegExp(`^${rejectedBy}: .*${escapeRegExp(because ?? '')}`, 's'),
                ),
              ],
      });
    },
  );
});
