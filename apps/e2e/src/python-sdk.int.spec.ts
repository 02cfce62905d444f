import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inheritedEnv, repoRoot } from '@slicekeeper/local-stack';

const run = promisify(execFile);

/**
 * Debian's interpreter, the one python3-grpcio and python3-protobuf are installed for: the
 * `python3` first on PATH may be another one (a pyenv build) without them.
 */
const PYTHON = '/usr/bin/python3';

describe('the Python driver SDK (clients/python)', () => {
  it('passes its own unit tests (validation, DriverServer over gRPC, registration client)', async () => {
    // A failure rejects with unittest's report (stderr) in the message.
    const { stderr } = await run(PYTHON, ['-m', 'unittest', 'discover', '-s', 'tests'], {
      cwd: join(repoRoot, 'clients/python'),
      // No __pycache__ in the tree: it would sit beside the committed generated code.
      env: { ...inheritedEnv(process.env, ['PATH', 'HOME', 'LANG']), PYTHONDONTWRITEBYTECODE: '1' },
      timeout: 60_000,
    });
    expect(stderr).toMatch(/^Ran [1-9]\d* tests in /m);
    expect(stderr).toMatch(/^OK$/m);
  }, 90_000);
});
