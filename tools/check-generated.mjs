// Fails when committed generated code differs from what the protos in proto/ generate: the
// ts-proto output in libs/proto/src/generated (buf) and the Python SDK's protobuf and gRPC
// modules in clients/python/slicekeeper_driver/_generated (tools/generate-python.mjs).
// Generated code is never edited by hand, only regenerated with `npm run proto:generate`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { PYTHON_GENERATED, generatePython } from './generate-python.mjs';

const root = new URL('..', import.meta.url).pathname;
const generated = 'libs/proto/src/generated';
const scratch = mkdtempSync(join(tmpdir(), 'slicekeeper-proto-'));

/** Files under `dir`; Python's bytecode caches are not generated code, and not committed. */
function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === '__pycache__') return [];
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** Each file of `dir` that is missing, extra or different in the repository, vs. the scratch. */
function drift(dir) {
  const fresh = join(scratch, dir);
  const committed = join(root, dir);
  const freshFiles = files(fresh).map((f) => relative(fresh, f));
  const committedFiles = files(committed).map((f) => relative(committed, f));
  const problems = [
    ...freshFiles.filter((f) => !committedFiles.includes(f)).map((f) => `missing: ${f}`),
    ...committedFiles.filter((f) => !freshFiles.includes(f)).map((f) => `not generated: ${f}`),
    ...freshFiles
      .filter((f) => committedFiles.includes(f))
      .filter((f) => !readFileSync(join(fresh, f)).equals(readFileSync(join(committed, f))))
      .map((f) => `differs: ${f}`),
  ];
  if (problems.length > 0) {
    console.error(
      `${dir} is out of date with proto/ (run \`npm run proto:generate\` and commit):\n` +
        problems.map((d) => `  ${d}`).join('\n'),
    );
  } else {
    console.log(`${dir}: up to date (${freshFiles.length} files)`);
  }
  return problems.length;
}

try {
  execFileSync('npx', ['buf', 'generate', '--output', scratch], { cwd: root, stdio: 'inherit' });
  generatePython(scratch);
  // Both, so that one run names every stale file.
  const stale = drift(generated) + drift(PYTHON_GENERATED);
  if (stale > 0) process.exitCode = 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
