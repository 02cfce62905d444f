import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadCases, replayCase } from './conformance-replay';
import type { ConformanceCase } from './conformance-replay';
import type { KubeRelease } from './kube-release';
import { startKubeEmulator } from './start-kube-emulator';

/**
 * Replays, against a fresh emulator per case, every recorded kube-apiserver 1.34 exchange in
 * `<repo root>/../shared/kube-conformance` and `<repo root>/../shared/kube-conformance-more`,
 * and our own cases in the same format in
 * `libs/apiserver/conformance-cases` (written from the kube-apiserver source of the release the
 * emulator is started as: 1.36 unless a case names another in `release`). A case may only be
 * skipped with a reason in UNSUPPORTED.
 */
const ADMIN_TOKEN = 'conformance-admin-token';

interface Suite {
  title: string;
  cases: ConformanceCase[];
  /** The release the emulator passes for, with its default gates, unless a case names one. */
  release: KubeRelease;
  /** Fewer cases than this means the directory was not found whole. */
  atLeast: number;
  /**
   * Whether the recorded cluster ran kube-controller-manager (its garbage collector removes the
   * `orphan` and `foregroundDeletion` finalizers).
   */
  garbageCollection: boolean;
}

const SUITES: readonly Suite[] = [
  {
    title: 'kube-conformance replay',
    cases: loadCases(resolve(__dirname, '../../../../shared/kube-conformance')),
    release: '1.34',
    atLeast: 49,
    garbageCollection: true,
  },
  {
    title: 'kube-conformance-more replay',
    cases: loadCases(resolve(__dirname, '../../../../shared/kube-conformance-more')),
    release: '1.34',
    atLeast: 27,
    // "no garbage collector ran in this recording" (its README, case 06).
    garbageCollection: false,
  },
  {
    title: 'emulator conformance cases (kube-apiserver 1.36 unless a case says otherwise)',
    cases: loadCases(resolve(__dirname, '../conformance-cases')),
    release: '1.36',
    atLeast: 8,
    garbageCollection: true,
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
        const running = await startKubeEmulator({
          tokenFile,
          release: testCase.release ?? suite.release,
          garbageCollection: suite.garbageCollection,
        });
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
