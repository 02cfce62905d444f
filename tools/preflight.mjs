// The first step of `npm test` and `npm start` (their pre-scripts): checks that the scripts run
// on the Node that package.json pins, and that every Debian package they need is there. As root
// on Debian or Ubuntu it installs what is missing in one apt-get run; anywhere else it names all
// of it and the command that installs it, and stops. With nothing missing it only probes (no
// apt-get, no network) and prints one line. The list and the decisions, tested without apt:
// libs/deploy/src/preflight-plan.mjs.
//
// usage: node tools/preflight.mjs test|start
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import {
  DEBIAN_PYTHON,
  planPreflight,
  requirementsFor,
} from '../libs/deploy/src/preflight-plan.mjs';

const purpose = process.argv[2];
if (purpose !== 'test' && purpose !== 'start') {
  console.error('usage: node tools/preflight.mjs test|start');
  process.exit(2);
}

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const pinnedNode = manifest.devDependencies?.node;
if (typeof pinnedNode !== 'string' || !/^\d+\.\d+\.\d+$/.test(pinnedNode)) {
  console.error(
    `preflight: package.json devDependencies.node must be an exact version (x.y.z), not ${JSON.stringify(pinnedNode)}`,
  );
  process.exit(1);
}

/** @param {string} path */
function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** @param {string} command A path, or a name looked up on PATH. */
function found(command) {
  if (isAbsolute(command)) return isExecutable(command);
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir !== '' && isExecutable(join(dir, command)));
}

/**
 * The modules Debian's python3 cannot import (all of them when it is not there), in one run.
 *
 * @param {string[]} modules
 * @returns {string[]}
 */
function unimportable(modules) {
  if (modules.length === 0) return [];
  if (!isExecutable(DEBIAN_PYTHON)) return modules;
  const script = [
    'import importlib, sys',
    'for name in sys.argv[1:]:',
    '    try:',
    '        importlib.import_module(name)',
    '    except Exception:',
    '        print(name)',
  ].join('\n');
  const result = spawnSync(DEBIAN_PYTHON, ['-c', script, ...modules], { encoding: 'utf8' });
  if (result.status !== 0) return modules;
  const failed = result.stdout.split('\n');
  return modules.filter((name) => failed.includes(name));
}

/**
 * Whether Node starts with `library` preloaded and the dynamic loader silent (a library it cannot
 * find is skipped with one line on stderr).
 *
 * @param {string} library
 */
function preloads(library) {
  const result = spawnSync(process.execPath, ['-e', ''], {
    env: { PATH: process.env.PATH ?? '', LD_PRELOAD: library },
    encoding: 'utf8',
  });
  return result.status === 0 && result.stderr.trim() === '';
}

/**
 * @param {import('../libs/deploy/src/preflight-plan.mjs').Requirement[]} requirements
 * @returns {import('../libs/deploy/src/preflight-plan.mjs').Requirement[]}
 */
function missingOf(requirements) {
  const failedModules = unimportable(
    requirements.flatMap(({ probe }) => ('pythonModule' in probe ? [probe.pythonModule] : [])),
  );
  return requirements.filter(({ probe }) => {
    if ('executable' in probe) return !found(probe.executable);
    if ('preload' in probe) return !preloads(probe.preload);
    return failedModules.includes(probe.pythonModule);
  });
}

const requirements = requirementsFor(purpose, {
  redisUrlSet: (process.env.REDIS_URL ?? '') !== '',
});
const missing = missingOf(requirements);
const plan = planPreflight({
  purpose,
  runningNode: process.versions.node,
  pinnedNode,
  missing,
  root: process.getuid?.() === 0,
  aptGet: found('apt-get'),
});
for (const line of plan.say) (plan.fail ? console.error : console.log)(line);

if (plan.installPackages.length > 0) {
  const started = Date.now();
  console.log(
    `preflight: apt-get update, then install ${plan.installPackages.length} package(s) with their dependencies (a minute or more)…`,
  );
  const install = spawnSync('/bin/sh', ['-c', plan.installLine], { stdio: 'inherit' });
  const still = missingOf(requirements);
  if (install.status !== 0 || still.length > 0) {
    console.error(
      `preflight: the install ${install.status === 0 ? 'finished' : `failed (exit ${install.status ?? install.signal})`}` +
        (still.length > 0 ? `; still missing: ${still.map((r) => r.package).join(', ')}` : ''),
    );
    process.exit(1);
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`preflight: installed ${plan.installPackages.join(', ')} in ${seconds} s`);
}
if (plan.fail) process.exit(1);
if (missing.length === 0) {
  console.log(
    `preflight: Node ${process.versions.node}; installed: ${requirements.map((r) => r.package).join(', ')}`,
  );
}
