// Fails when the committed ts-proto output in libs/proto/src/generated differs from what the
// protos in proto/ generate: generated code is never edited by hand, only regenerated with
// `npm run proto:generate`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const generated = 'libs/proto/src/generated';
const scratch = mkdtempSync(join(tmpdir(), 'slicekeeper-proto-'));

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

try {
  execFileSync('npx', ['buf', 'generate', '--output', scratch], { cwd: root, stdio: 'inherit' });
  const fresh = join(scratch, generated);
  const committed = join(root, generated);
  const freshFiles = files(fresh).map((f) => relative(fresh, f));
  const committedFiles = files(committed).map((f) => relative(committed, f));
  const drift = [
    ...freshFiles.filter((f) => !committedFiles.includes(f)).map((f) => `missing: ${f}`),
    ...committedFiles.filter((f) => !freshFiles.includes(f)).map((f) => `not generated: ${f}`),
    ...freshFiles
      .filter((f) => committedFiles.includes(f))
      .filter((f) => !readFileSync(join(fresh, f)).equals(readFileSync(join(committed, f))))
      .map((f) => `differs: ${f}`),
  ];
  if (drift.length > 0) {
    console.error(
      `${generated} is out of date with proto/ (run \`npm run proto:generate\` and commit):\n` +
        drift.map((d) => `  ${d}`).join('\n'),
    );
    process.exit(1);
  }
  console.log(`${generated}: up to date (${freshFiles.length} files)`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
