import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { repoRoot } from '@slicekeeper/testing';

/**
 * The module-boundary fence of eslint.config.mjs (STYLE.md rules 8 and 20), checked against the
 * real config and the real nx project graph: production code may not import tooling, test
 * support or test doubles; specs and benchmarks may. Only libs/state names Redis keys.
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

const boundaries = '@nx/enforce-module-boundaries';
const testDoubles = 'no-restricted-imports';
const keyNames = 'no-restricted-syntax';

/** Named cases: an import placed in a file, and the rule that must reject it (or none). */
const cases = [
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
    rejectedBy: testDoubles,
  },
  {
    name: 'production lib imports its own test doubles',
    project: 'libs/watcher',
    file: 'src/boundary-probe.ts',
    source: importOwnFakes,
    rejectedBy: testDoubles,
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
    rejectedBy: testDoubles,
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
] as const;

describe('module boundaries (eslint.config.mjs)', () => {
  let results: LintMessage[][];

  beforeAll(async () => {
    results = await lintAll(cases);
  });

  it.each(cases.map((testCase, index) => ({ ...testCase, index })))(
    '$name: rejected by $rejectedBy',
    ({ project, file, index, rejectedBy }) => {
      const messages = results[index] ?? [];
      const rejections = messages
        .filter(
          (message) =>
            message.fatal === true ||
            (message.severity === 2 &&
              (message.ruleId === boundaries ||
                message.ruleId === testDoubles ||
                message.ruleId === keyNames)),
        )
        .map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`);
      expect({ file: `${project}/${file}`, rejections }).toEqual({
        file: `${project}/${file}`,
        rejections: rejectedBy === null ? [] : [expect.stringMatching(`^${rejectedBy}: `)],
      });
    },
  );
});
