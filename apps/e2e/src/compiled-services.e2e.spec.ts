import { execFile } from 'node:child_process';
import { readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dockerfileStages } from '@slicekeeper/deploy';
import { repoRoot } from '@slicekeeper/testing';
import { ProductionTree, System, gpuInventory, publishes } from './harness';
import type { ExampleDriverProcess, ResourceSlice } from './harness';

const run = promisify(execFile);
const GPU = 'gpu.example.com';

/**
 * How a running process was started: its command line, working directory, the values it was
 * given of the variables `names`, and whether jemalloc is mapped into it (the images preload it).
 */
async function launched(
  pid: number | undefined,
  names: readonly string[],
): Promise<{
  argv: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  jemalloc: boolean;
}> {
  if (pid === undefined) throw new Error('the process is not running');
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((a) => a !== '');
  const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
  const env = Object.fromEntries(
    names.map((name) => [
      name,
      environ.find((v) => v.startsWith(`${name}=`))?.slice(name.length + 1),
    ]),
  );
  const jemalloc = (await readFile(`/proc/${pid}/maps`, 'utf8')).includes('/libjemalloc.so');
  return { argv, cwd: await readlink(`/proc/${pid}/cwd`), env, jemalloc };
}

/**
 * Whether Node's lookup finds each package (its package.json) from `dir`, in a plain Node
 * process: 'found', or the error's code (MODULE_NOT_FOUND: no package of that name is reachable
 * from there).
 */
async function resolvesFrom(dir: string, names: readonly string[]): Promise<Map<string, string>> {
  const script = `
    const found = {};
    for (const name of JSON.parse(process.argv[1])) {
      try { require.resolve(name + '/package.json', { paths: [process.cwd()] }); found[name] = 'found'; }
      catch (error) {
        // A package whose exports hide its package.json is there all the same.
        found[name] = error.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' ? 'found' : (error.code ?? String(error));
      }
    }
    process.stdout.write(JSON.stringify(found));`;
  const { stdout } = await run(process.execPath, ['-e', script, JSON.stringify(names)], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '' },
  });
  return new Map(Object.entries(JSON.parse(stdout) as Record<string, string>));
}

/**
 * The scenarios `npm start` shows, against what the images run: the services and example drivers
 * compiled (`node apps/<app>/dist/main.js`, the images' ENV) in a tree that holds only the
 * production dependencies, with a real redis-server and the kube emulator, read back with kubectl.
 */
describe('the compiled services (what the images run)', () => {
  let tree: ProductionTree | undefined;
  let system: System;
  const productionTree = (): ProductionTree => {
    if (tree === undefined) throw new Error('the production tree was not laid out');
    return tree;
  };
  const drivers = new Map<string, ExampleDriverProcess>();
  const inventory = gpuInventory({ devices: 8 });
  const sliceOf = (slices: ResourceSlice[], node: string): ResourceSlice[] =>
    slices.filter((s) => s.spec.nodeName === node && s.spec.driver === GPU);

  beforeAll(async () => {
    tree = await ProductionTree.prepare((line) =>
      process.stdout.write(`compiled-services: ${line}\n`),
    );
    system = await System.start({
      name: 'compiled-services',
      nodes: ['node-a', 'node-b'],
      syncerReplicas: 2,
      production: productionTree(),
      // A removed driver's slices go at once rather than after the default 30 s.
      apiEnv: { REMOVAL_GRACE: '0s' },
    });
    for (const node of ['node-a', 'node-b']) {
      drivers.set(node, await system.exampleDriver({ node, driver: GPU, inventory }));
    }
  }, 20 * 60_000);

  afterAll(async () => {
    // Undefined when the build or the tree failed.
    await (system as System | undefined)?.close();
    await tree?.close();
  });

  it('runs every service and driver as its image’s CMD (`node apps/<app>/dist/main.js`) with its own stage’s ENV and jemalloc', async () => {
    const stages = dockerfileStages(await readFile(join(repoRoot, 'docker/Dockerfile'), 'utf8'));
    const stage = (app: string) => stages.find((s) => s.name === app);
    const cmd = (app: string) => stage(app)?.cmd ?? [];
    const env = (app: string) => stage(app)?.env ?? {};
    // The watcher's image alone sets jemalloc's immediate purge: each process must get its own.
    expect(env('plugin-watcher')['MALLOC_CONF']).toBeDefined();
    expect(env('slice-syncer')['MALLOC_CONF']).toBeUndefined();
    const names = [...new Set(stages.flatMap((s) => Object.keys(s.env)))];
    const processes = [
      ['registration-api', system.servicePid('registration-api')],
      ['plugin-watcher', system.servicePid('plugin-watcher')],
      ...system.syncers.map((name) => ['slice-syncer', system.servicePid(name)] as const),
      ...[...drivers.values()].map((driver) => ['example-driver', driver.pid] as const),
    ] as const;
    expect(processes).toHaveLength(6);
    for (const [app, pid] of processes) {
      expect(cmd(app)[0]).toBe('node');
      expect(env(app)['NODE_ENV']).toBe('production');
      expect(await launched(pid, names)).toEqual({
        argv: [process.execPath, ...cmd(app).slice(1)],
        cwd: productionTree().root,
        env: Object.fromEntries(names.map((name) => [name, env(app)[name]])),
        jemalloc: true,
      });
    }
  });

  it('reaches no devDependency from the services’ code, though the repository has them installed', async () => {
    const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    // A devDependency that a production dependency needs too is in the image as well.
    const devOnly = Object.keys(manifest.devDependencies).filter(
      (name) => !productionTree().packages.has(name),
    );
    const inRepo = await resolvesFrom(join(repoRoot, 'apps/slice-syncer/dist'), devOnly);
    const installed = devOnly.filter((name) => inRepo.get(name) === 'found');
    expect(installed).toEqual(expect.arrayContaining(['tsx', 'typescript', 'jest']));
    const inTree = await resolvesFrom(
      join(productionTree().root, 'apps/slice-syncer/dist'),
      installed,
    );
    expect(Object.fromEntries(inTree)).toEqual(
      Object.fromEntries(installed.map((name) => [name, 'MODULE_NOT_FOUND'])),
    );
    // What the services need is there.
    const needed = [
      'ioredis',
      'bullmq',
      'fastify',
      '@kubernetes/client-node',
      '@slicekeeper/runtime',
    ];
    const inTreeNeeded = await resolvesFrom(
      join(productionTree().root, 'apps/slice-syncer/dist'),
      needed,
    );
    expect(Object.fromEntries(inTreeNeeded)).toEqual(
      Object.fromEntries(needed.map((n) => [n, 'found'])),
    );
  });

  it('publishes both drivers’ slices, as kubectl shows them', async () => {
    await system.until('both drivers published', async () => {
      const slices = await system.kubectlSlices();
      return (
        publishes(sliceOf(slices, 'node-a'), inventory) &&
        publishes(sliceOf(slices, 'node-b'), inventory)
      );
    });
    const slices = await system.kubectlSlices();
    for (const node of ['node-a', 'node-b']) {
      const own = sliceOf(slices, node);
      expect(own).toHaveLength(1);
      expect(own[0]?.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('slicekeeper');
    }
  });

  it('publishes a driver’s changed inventory', async () => {
    const changed = gpuInventory({ devices: 12, rev: 1 });
    await drivers.get('node-a')?.publish(changed);
    await system.until('the change published', async () =>
      publishes(sliceOf(await system.kubectlSlices(), 'node-a'), changed),
    );
    expect(publishes(sliceOf(await system.kubectlSlices(), 'node-b'), inventory)).toBe(true);
  });

  it('withdraws the slices of a driver that is removed, and only those', async () => {
    await drivers.get('node-b')?.close();
    await system.until(
      'the removed driver’s slices withdrawn',
      async () => sliceOf(await system.kubectlSlices(), 'node-b').length === 0,
    );
    const left = await system.kubectlSlices();
    expect(left.map((s) => s.spec.nodeName)).toEqual(['node-a']);
  });
});
