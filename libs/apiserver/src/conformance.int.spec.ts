import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadCases, replayCase } from './conformance-replay';
import { startKubeEmulator } from './start-kube-emulator';

/**
 * Replays every recorded kube-apiserver 1.34 exchange in `<repo root>/../shared/kube-conformance`
 * against a fresh emulator per case. A case may only be skipped with a reason in UNSUPPORTED.
 */
const CASES_DIR = resolve(__dirname, '../../../../shared/kube-conformance');
const ADMIN_TOKEN = 'conformance-admin-token';

/** Cases the emulator does not support yet, by file name, each with the reason. */
const UNSUPPORTED: Readonly<Record<string, string>> = {};

const cases = loadCases(CASES_DIR);
let tokenDir: string;
let tokenFile: string;

beforeAll(() => {
  tokenDir = mkdtempSync(join(tmpdir(), 'kube-conformance-'));
  tokenFile = join(tokenDir, 'tokens.csv');
  writeFileSync(tokenFile, `${ADMIN_TOKEN},conformance-admin,uid-admin,"system:masters"\n`);
});

afterAll(() => {
  rmSync(tokenDir, { recursive: true, force: true });
  const skipped = Object.keys(UNSUPPORTED).length;
  process.stdout.write(
    `kube-conformance: ${cases.length - skipped} cases replayed, ${skipped} marked unsupported\n`,
  );
});

describe('kube-conformance replay', () => {
  it('finds the recorded cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(49);
  });

  for (const testCase of cases) {
    const reason = UNSUPPORTED[testCase.file];
    if (reason !== undefined) continue;
    it(`${testCase.file}: ${testCase.name}`, async () => {
      const running = await startKubeEmulator({ tokenFile });
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
