import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, realpath, rm, symlink } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { dockerfileStages } from '@slicekeeper/deploy';
import { repoRoot } from '@slicekeeper/local-stack';

const run = promisify(execFile);

/**
 * The compiled services laid out as the images have them (docker/Dockerfile): each workspace's
 * package.json and dist/ under `root`, and a node_modules holding only the packages that
 * `npm ls --omit=dev` lists, symlinked from the repository's. It lies outside the repository, so
 * Node's lookup never climbs into the repository's node_modules: a devDependency, or a workspace
 * whose dist/ is missing, cannot be found from the services' code, just as in an image.
 * Third-party packages are symlinked, and resolve their own dependencies where they really are.
 */
export class ProductionTree {
  private constructor(
    readonly root: string,
    /** The names of the packages in the tree's node_modules (the production dependencies). */
    readonly packages: ReadonlySet<string>,
    /** Each app's image: its stage in docker/Dockerfile, which is named after it. */
    private readonly images: ReadonlyMap<string, ImageSettings>,
  ) {}

  /**
   * Builds the services (`npm run build:services`, incremental: it compiles only what changed)
   * and lays out the tree; `progress` tells what it is doing.
   */
  static async prepare(progress: (line: string) => void): Promise<ProductionTree> {
    const images = await imageSettings();
    progress('building the services (npm run build:services: tsc -b, incremental)');
    await run('npm', ['run', '--silent', 'build:services'], {
      cwd: repoRoot,
      timeout: 15 * 60_000,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: unknown) => {
      const output = error as { stdout?: string; stderr?: string };
      throw new Error(
        `npm run build:services failed:\n${output.stdout ?? ''}${output.stderr ?? ''}`,
      );
    });
    progress('laying out the production tree (npm ls --omit=dev)');
    const root = await mkdtemp(join(tmpdir(), 'slicekeeper-production-'));
    try {
      if (!relative(repoRoot, root).startsWith('..')) {
        throw new Error(`the production tree ${root} must lie outside the repository (TMPDIR)`);
      }
      await cp(join(repoRoot, 'package.json'), join(root, 'package.json'));
      for (const workspace of await workspaces()) await copyBuild(workspace, root);
      // What the example driver serves when it is given no inventory file (as the image has it).
      await cp(
        join(repoRoot, 'apps/example-driver/inventory'),
        join(root, 'apps/example-driver/inventory'),
        { recursive: true },
      );
      const packages = new Set<string>();
      for (const path of await productionPackages()) {
        const name = await linkPackage(path, root);
        if (name !== undefined) packages.add(name);
      }
      return new ProductionTree(root, packages, images);
    } catch (error) {
      await rm(root, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * How an app's image starts it: its CMD (`node <runtime flags> apps/<app>/dist/main.js`), with
   * this process's Node for `node`, and the variables its stage's `ENV` lines set (with those of
   * the stages it is built on: NODE_ENV, LD_PRELOAD, …).
   */
  command(app: string): {
    command: string;
    args: string[];
    cwd: string;
    env: Readonly<Record<string, string>>;
  } {
    const image = this.images.get(app);
    if (image === undefined) throw new Error(`docker/Dockerfile has no stage ${app} with a CMD`);
    const [program, ...args] = image.cmd;
    if (program !== 'node') {
      throw new Error(`docker/Dockerfile: the CMD of ${app} runs ${program}, not node`);
    }
    return { command: process.execPath, args, cwd: this.root, env: image.env };
  }

  async close(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}

/** What the production tree takes from one stage of docker/Dockerfile. */
interface ImageSettings {
  cmd: readonly string[];
  env: Readonly<Record<string, string>>;
}

/**
 * The CMD and environment of every stage of docker/Dockerfile that has a CMD, each environment
 * checked on this machine: Node must start under it without a word from the dynamic loader (a
 * library LD_PRELOAD names that is not installed is otherwise skipped with one line on stderr,
 * and the services would run unlike the images) or from a library it configures (jemalloc warns
 * of a MALLOC_CONF option it does not know).
 */
async function imageSettings(): Promise<Map<string, ImageSettings>> {
  const dockerfile = await readFile(join(repoRoot, 'docker/Dockerfile'), 'utf8');
  const images = new Map<string, ImageSettings>();
  for (const stage of dockerfileStages(dockerfile)) {
    if (stage.name !== undefined && stage.cmd !== undefined) {
      images.set(stage.name, { cmd: stage.cmd, env: stage.env });
    }
  }
  const checked = new Set<string>();
  for (const [name, { env }] of images) {
    const key = JSON.stringify(env);
    if (checked.has(key)) continue;
    checked.add(key);
    const { stderr } = await run(process.execPath, ['-e', ''], {
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 60_000,
    });
    if (stderr.trim() !== '') {
      throw new Error(
        `the environment of the ${name} image (${key}) does not work here: ${stderr.trim()} (npm test's preflight installs what the images install)`,
      );
    }
  }
  return images;
}

/** The workspaces (`apps/*`, `libs/*` with a package.json), relative to the repository. */
async function workspaces(): Promise<string[]> {
  const found: string[] = [];
  for (const group of ['apps', 'libs']) {
    for (const name of await readdir(join(repoRoot, group))) {
      if (existsSync(join(repoRoot, group, name, 'package.json'))) found.push(`${group}/${name}`);
    }
  }
  return found;
}

/** A workspace's package.json and dist/, without tsc's build info, as the image's build stage. */
async function copyBuild(workspace: string, root: string): Promise<void> {
  await mkdir(join(root, workspace), { recursive: true });
  await cp(join(repoRoot, workspace, 'package.json'), join(root, workspace, 'package.json'));
  const dist = join(repoRoot, workspace, 'dist');
  if (!existsSync(dist)) return;
  await cp(dist, join(root, workspace, 'dist'), {
    recursive: true,
    filter: (source) => !source.endsWith('.tsbuildinfo'),
  });
}

/** Every installed package of the production dependency tree (absolute paths), as npm sees it. */
async function productionPackages(): Promise<string[]> {
  const { stdout } = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: repoRoot,
    timeout: 5 * 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && line !== repoRoot);
}

/**
 * Links one package into the tree at the place it has in the repository: a workspace to its copy
 * in the tree (so that its own imports resolve in the tree too), any other package to where it is
 * installed. A package nested in another's node_modules comes with its parent. Resolves with the
 * name of a package linked into the tree's own node_modules.
 */
async function linkPackage(path: string, root: string): Promise<string | undefined> {
  const rel = relative(repoRoot, path);
  const parts = rel.split(sep);
  const depth = parts.filter((part) => part === 'node_modules').length;
  if (rel.startsWith('..') || depth !== 1) return undefined;
  const real = await realpath(path);
  const installed = relative(repoRoot, real);
  const target = installed.startsWith(`node_modules${sep}`) ? real : join(root, installed);
  await mkdir(dirname(join(root, rel)), { recursive: true });
  await symlink(target, join(root, rel));
  return parts[0] === 'node_modules' ? parts.slice(1).join('/') : undefined;
}
