// What `npm test` and `npm start` need from the machine, and what their preflight does about
// what is missing. Pure, so that preflight.spec.ts tests the decisions without touching apt;
// tools/preflight.mjs (plain JavaScript: it runs before anything is built, on whatever Node npm
// finds) probes the machine and carries the plan out.

/**
 * How to tell that a requirement is met: an executable (an absolute path where the code that
 * uses it names one, else looked up on PATH), a module that Debian's /usr/bin/python3 imports, or
 * a shared library that Node starts with as LD_PRELOAD names it (the images' jemalloc).
 *
 * @typedef {{ executable: string } | { pythonModule: string } | { preload: string }} Probe
 */

/**
 * @typedef {'test' | 'start'} Purpose
 *
 * @typedef {object} Requirement
 * @property {string} package Debian's package that provides it.
 * @property {Probe} probe
 * @property {readonly Purpose[]} neededBy
 */

/** Debian's interpreter: the SDK's tests run on it, with Debian's grpcio and protobuf. */
export const DEBIAN_PYTHON = '/usr/bin/python3';

/**
 * Every Debian package the project's own scripts need: the one list, for developers and CI
 * alike. `npm start` needs a Redis server only; the tests start their own Redis servers and
 * sentinels on free ports, drive kubectl, headless Chromium, promtool, protoc and its gRPC
 * Python plugin, and the Python SDK. Probes name the paths the tests use.
 *
 * @type {readonly Requirement[]}
 */
export const REQUIREMENTS = [
  { package: 'redis-server', probe: { executable: 'redis-server' }, neededBy: ['start', 'test'] },
  { package: 'redis-tools', probe: { executable: 'redis-cli' }, neededBy: ['test'] },
  { package: 'redis-sentinel', probe: { executable: 'redis-sentinel' }, neededBy: ['test'] },
  { package: 'kubernetes-client', probe: { executable: '/usr/bin/kubectl' }, neededBy: ['test'] },
  { package: 'chromium', probe: { executable: '/usr/bin/chromium' }, neededBy: ['test'] },
  { package: 'prometheus', probe: { executable: '/usr/bin/promtool' }, neededBy: ['test'] },
  { package: 'protobuf-compiler', probe: { executable: '/usr/bin/protoc' }, neededBy: ['test'] },
  {
    package: 'protobuf-compiler-grpc',
    probe: { executable: '/usr/bin/grpc_python_plugin' },
    neededBy: ['test'],
  },
  { package: 'python3-grpcio', probe: { pythonModule: 'grpc' }, neededBy: ['test'] },
  { package: 'python3-protobuf', probe: { pythonModule: 'google.protobuf' }, neededBy: ['test'] },
  // The tests run the compiled services with the images' ENV, which preloads jemalloc.
  { package: 'libjemalloc2', probe: { preload: 'libjemalloc.so.2' }, neededBy: ['test'] },
];

/**
 * What `purpose` needs. `npm start` uses the Redis at `REDIS_URL` when it is set, and then
 * starts no redis-server.
 *
 * @param {Purpose} purpose
 * @param {{ redisUrlSet: boolean }} options
 * @returns {Requirement[]}
 */
export function requirementsFor(purpose, { redisUrlSet }) {
  return REQUIREMENTS.filter(
    (requirement) =>
      requirement.neededBy.includes(purpose) &&
      !(purpose === 'start' && redisUrlSet && requirement.package === 'redis-server'),
  );
}

/** How a probe reads in a message: the path or command, or the Python module. */
export function describeProbe(/** @type {Probe} */ probe) {
  if ('executable' in probe) return probe.executable;
  if ('preload' in probe) return `LD_PRELOAD=${probe.preload}`;
  return `${DEBIAN_PYTHON} -c 'import ${probe.pythonModule}'`;
}

/**
 * @typedef {object} MachineFacts
 * @property {Purpose} purpose
 * @property {string} runningNode `process.versions.node` of the preflight (npm's PATH puts the
 *   pinned node of node_modules/.bin first, so every script and what it spawns runs on it).
 * @property {string} pinnedNode The exact version of the `node` package in devDependencies.
 * @property {readonly Requirement[]} missing The requirements whose probe failed.
 * @property {boolean} root Whether the preflight runs as root (uid 0).
 * @property {boolean} aptGet Whether apt-get is on PATH (a Debian or Ubuntu machine).
 *
 * @typedef {object} PreflightPlan
 * @property {string[]} say Lines to print first, in order.
 * @property {string[]} installPackages Debian packages to install now; empty: install nothing.
 * @property {string} installLine The one shell line that installs them (printed and run).
 * @property {boolean} fail Whether to stop with a non-zero exit after printing.
 */

/** The one line that installs `packages`, as root or through sudo. */
export function installLine(
  /** @type {readonly string[]} */ packages,
  /** @type {boolean} */ root,
) {
  const sudo = root ? '' : 'sudo ';
  return `${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${packages.join(' ')}`;
}

/**
 * Decides what the preflight says and does. Everything missing is named in one go; as root on a
 * Debian machine the missing packages are installed in one apt-get run (and the preflight then
 * probes again), anywhere else it stops with the exact command. A wrong Node stops it too: the
 * rest of the suite would fail on it in ways that do not say why.
 *
 * @param {MachineFacts} facts
 * @returns {PreflightPlan}
 */
export function planPreflight(facts) {
  const { purpose, runningNode, pinnedNode, missing, root, aptGet } = facts;
  /** @type {string[]} */
  const say = [];
  let fail = false;
  if (runningNode !== pinnedNode) {
    fail = true;
    say.push(
      `preflight: this runs on Node ${runningNode}, but the project runs on Node ${pinnedNode} ` +
        `(package.json devDependencies.node), which \`npm ci\` installs into node_modules/.bin ` +
        `for every npm script: run \`npm ci\`, then \`npm ${purpose}\` (not \`node …\` directly).`,
    );
  }
  const packages = [...new Set(missing.map((requirement) => requirement.package))];
  if (packages.length === 0) {
    return { say, installPackages: [], installLine: '', fail };
  }
  const what = missing.map((r) => `${r.package} (${describeProbe(r.probe)})`).join(', ');
  if (root && aptGet) {
    const line = installLine(packages, true);
    say.push(
      `preflight: \`npm ${purpose}\` needs ${packages.length} missing Debian package(s): ${what}`,
      `preflight: installing them: ${line}`,
    );
    return { say, installPackages: packages, installLine: line, fail };
  }
  const line = installLine(packages, root);
  say.push(
    `preflight: \`npm ${purpose}\` needs ${packages.length} missing Debian package(s): ${what}`,
  );
  if (aptGet) {
    say.push(`preflight: install them, then run \`npm ${purpose}\` again:`, `  ${line}`);
  } else {
    say.push(
      'preflight: this machine has no apt-get: install the same tools another way (the paths ' +
        'in brackets are where the tests look for them); on Debian or Ubuntu it is:',
      `  ${line}`,
    );
  }
  return { say, installPackages: [], installLine: line, fail: true };
}
