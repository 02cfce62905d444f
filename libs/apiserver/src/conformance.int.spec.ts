import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadCases, replayCase } from './conformance-replay';
import type { ConformanceCase } from './conformance-replay';
import type { FeatureGates } from './resource-types';
import { startKubeEmulator } from './start-kube-emulator';

/**
 * Replays, against a fresh emulator per case, every recorded kube-apiserver 1.34 exchange in
 * `<repo root>/../shared/kube-conformance`, and our own cases in the same format in
 * `libs/apiserver/conformance-cases` (written from the kube-apiserver 1.36 source, whose default
 * gates turn DRADeviceTaints on). A case may only be skipped with a reason in UNSUPPORTED.
 */
const ADMIN_TOKEN = 'conformance-admin-token';

interface Suite {
  title: string;
  cases: ConformanceCase[];
  /** The server's `--feature-gates` for the suite's cases. */
  featureGates: FeatureGates;
  /** Fewer cases than this means the directory was not found whole. */
  atLeast: number;
}

const SUITES: readonly Suite[] = [
  {
    title: 'kube-conformance replay',
    cases: loadCases(resolve(__dirname, '../../../../shared/kube-conformance')),
    featureGates: {},
    atLeast: 49,
  },
  {
    title: 'emulator conformance cases (kube-apiserver 1.36)',
    cases: loadCases(resolve(__dirname, '../conformance-cases')),
    featureGates: { DRADeviceTaints: true },
    atLeast: 8,
  },
];

/** Cases the emulator does not support yet, by file name, each with the reason. */
const UNSUPPORTED: Readonly<Record<string, string>> = {};

let tokenDir: string;
let tokenFile: string;

beforeAll(() => {
  tokenDir = mkdtempSync(join(tmpdir(), 'kube-conformance-'));
  tokenFile = join(tokenDir, 'tokens.csv');
  writeFileSync(tokenFile, `${ADMIN_TOKEN},conformance-admin,uid-admin,"system:masters"\n`);
});

afterAll(() => {
  rmSync(tokenDir, { recursive: true, force: true });
  const total = SUITES.reduce((sum, suite) => sum + suite.cases.length, 0);
  const skipped = Object.keys(UNSUPPORTED).length;
  process.stdout.write(
    `kube-conformance: ${total - skipped} cases replayed, ${skipped} marked unsupported\n`,
  );
});

for (const suite of SUITES) {
  describe(suite.title, () => {
    it('finds the cases', () => {
      expect(suite.cases.length).toBeGreaterThanOrEqual(suite.atLeast);
    });

    for (const testCase of suite.cases) {
      const reason = UNSUPPORTED[testCase.file];
      if (reason !== undefined) continue;
      it(`${testCase.file}: ${testCase.name}`, async () => {
        const running = await startKubeEmulator({ tokenFile, featureGates: suite.featureGates });
        try {
          const differences = await replayCase(testCase, {
            url: running.url,
            token: ADMIN_TOKEN,
            action: () => {
              running.emulator.forgetHistory();
            },
          });
          expect(differences).toEqual([]);
        } finally {
          await running.close();
        }
      }, 30_000);
    }
  });
}
