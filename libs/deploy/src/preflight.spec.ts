import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { dockerfileStages } from './dockerfile-stages';
import { DEBIAN_PYTHON, REQUIREMENTS, planPreflight, requirementsFor } from './preflight-plan.mjs';

const repoRoot = join(__dirname, '../../..');
const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};
const pinnedNode = manifest.devDependencies['node'] ?? '';

function requirement(name: string) {
  const found = REQUIREMENTS.find((candidate) => candidate.package === name);
  if (found === undefined) throw new Error(`no requirement ${name}`);
  return found;
}

const ready = {
  purpose: 'test' as const,
  runningNode: pinnedNode,
  pinnedNode,
  missing: [],
  root: true,
  aptGet: true,
};

describe('the preflight of npm test and npm start', () => {
  it('pins one exact Node version, the one these tests run on, first on PATH for what they spawn', () => {
    expect(pinnedNode).toMatch(/^\d+\.\d+\.\d+$/);
    expect(process.versions.node).toBe(pinnedNode);
    // Tools the suite starts by name (nx, npx, a shebang `env node`) find the same Node.
    expect(execFileSync('node', ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim()).toBe(
      pinnedNode,
    );
  });

  it('with everything there, says nothing, installs nothing and passes', () => {
    expect(planPreflight(ready)).toEqual({
      say: [],
      installPackages: [],
      installLine: '',
      fail: false,
    });
  });

  it('as root on Debian, installs every missing package in one apt-get run and prints that line', () => {
    const plan = planPreflight({
      ...ready,
      missing: [requirement('chromium'), requirement('python3-grpcio'), requirement('prometheus')],
    });
    const line =
      'apt-get update -qq && env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium python3-grpcio prometheus';
    expect(plan.installPackages).toEqual(['chromium', 'python3-grpcio', 'prometheus']);
    expect(plan.installLine).toBe(line);
    expect(plan.fail).toBe(false);
    expect(plan.say).toEqual([
      "preflight: `npm test` needs 3 missing Debian package(s): chromium (/usr/bin/chromium), python3-grpcio (/usr/bin/python3 -c 'import grpc'), prometheus (/usr/bin/promtool)",
      `preflight: installing them: ${line}`,
    ]);
  });

  it('without root, installs nothing and stops at once, naming every missing package and the sudo command', () => {
    const plan = planPreflight({
      ...ready,
      root: false,
      missing: [requirement('redis-sentinel'), requirement('protobuf-compiler-grpc')],
    });
    expect(plan).toEqual({
      say: [
        'preflight: `npm test` needs 2 missing Debian package(s): redis-sentinel (redis-sentinel), protobuf-compiler-grpc (/usr/bin/grpc_python_plugin)',
        'preflight: install them, then run `npm test` again:',
        '  sudo apt-get update -qq && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-sentinel protobuf-compiler-grpc',
      ],
      installPackages: [],
      installLine:
        'sudo apt-get update -qq && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-sentinel protobuf-compiler-grpc',
      fail: true,
    });
  });

  it('without apt-get, stops naming the packages, the paths the tests look at and the Debian command', () => {
    const plan = planPreflight({
      ...ready,
      aptGet: false,
      missing: [requirement('kubernetes-client')],
    });
    expect(plan.installPackages).toEqual([]);
    expect(plan.fail).toBe(true);
    expect(plan.say[0]).toBe(
      'preflight: `npm test` needs 1 missing Debian package(s): kubernetes-client (/usr/bin/kubectl)',
    );
    expect(plan.say[1]).toMatch(/^preflight: this machine has no apt-get/);
    expect(plan.say[2]).toBe(
      '  apt-get update -qq && env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client',
    );
  });

  it('on another Node, stops and says which Node runs and how to get the pinned one', () => {
    const plan = planPreflight({ ...ready, purpose: 'start', runningNode: '20.20.2' });
    expect(plan.fail).toBe(true);
    expect(plan.installPackages).toEqual([]);
    expect(plan.say).toEqual([
      `preflight: this runs on Node 20.20.2, but the project runs on Node ${pinnedNode} (package.json devDependencies.node), which \`npm ci\` installs into node_modules/.bin for every npm script: run \`npm ci\`, then \`npm start\` (not \`node …\` directly).`,
    ]);
  });

  it('on another Node as root, still installs what is missing in the same step, then stops', () => {
    const plan = planPreflight({
      ...ready,
      runningNode: '20.20.2',
      missing: [requirement('redis-server')],
    });
    expect(plan.installPackages).toEqual(['redis-server']);
    expect(plan.fail).toBe(true);
    expect(plan.say).toHaveLength(3);
  });

  it('npm start needs only a Redis server, and none when REDIS_URL names one', () => {
    expect(requirementsFor('start', { redisUrlSet: false }).map((r) => r.package)).toEqual([
      'redis-server',
    ]);
    expect(requirementsFor('start', { redisUrlSet: true })).toEqual([]);
    expect(requirementsFor('test', { redisUrlSet: true })).toContain(requirement('redis-server'));
  });

  it('installs every library the images preload: the tests run the services with their ENV', () => {
    const dockerfile = readFileSync(join(repoRoot, 'docker/Dockerfile'), 'utf8');
    const runtime = dockerfileStages(dockerfile).find((stage) => stage.name === 'runtime');
    const preloaded = (runtime?.env['LD_PRELOAD'] ?? '').split(/[\s:]+/).filter((l) => l !== '');
    expect(preloaded).toEqual(['libjemalloc.so.2']);
    const probed = requirementsFor('test', { redisUrlSet: false }).flatMap(({ probe }) =>
      'preload' in probe ? [probe.preload] : [],
    );
    expect(probed).toEqual(preloaded);
    // The image installs the same package the preflight installs here.
    expect(runtime?.runs.some((run) => run.includes('libjemalloc2'))).toBe(true);
  });

  it('checks every Debian tool that the code names by its path', () => {
    const probed = new Set(
      requirementsFor('test', { redisUrlSet: false }).flatMap(({ probe }) =>
        'executable' in probe ? [probe.executable] : 'pythonModule' in probe ? [DEBIAN_PYTHON] : [],
      ),
    );
    const named = new Set<string>();
    const scan = (dir: string): void => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry);
        if (['node_modules', 'dist', 'out-tsc', 'generated'].includes(entry)) continue;
        if (statSync(path).isDirectory()) scan(path);
        else if (/\.(ts|mjs|js)$/.test(entry)) {
          for (const match of readFileSync(path, 'utf8').matchAll(/['"`](\/usr\/bin\/[\w.+-]+)/g)) {
            if (match[1] !== undefined) named.add(match[1]);
          }
        }
      }
    };
    for (const top of ['apps', 'libs', 'tools']) scan(join(repoRoot, top));
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((path) => !probed.has(path))).toEqual([]);
  });
});
