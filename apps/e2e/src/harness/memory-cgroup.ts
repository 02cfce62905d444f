import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '@slicekeeper/local-stack';
import { parseQuantity } from '@slicekeeper/slices';

/**
 * A Linux memory cgroup with a limit, for running one service of a benchmark under the memory
 * limit its Kubernetes manifest gives it. Node sizes V8's heap from that limit
 * (`uv_get_constrained_memory`): on an unconstrained 24 GiB host Node 24's young generation alone
 * commits 128 MiB, under a 384 MiB limit 1 MiB, so a memory figure measured without the limit
 * is not what a pod costs. Needs a writable cgroup hierarchy (root, as in CI); where there is
 * none, {@link MemoryCgroup.create} says why, and the benchmark reports the figure as
 * unconstrained.
 */
export class MemoryCgroup {
  private closed: Promise<void> | undefined;

  private constructor(
    /** The cgroup's directory. */
    readonly path: string,
    readonly limitBytes: number,
    /** `cgroup v1` or `cgroup v2`. */
    readonly hierarchy: string,
    private readonly procsFile: string,
  ) {}

  /**
   * Creates the cgroup `name` with `limitBytes`, in the memory hierarchy of cgroup v2 (under this
   * process's own cgroup) or v1. Rejects, naming each hierarchy tried and why it failed, when
   * neither can be written.
   */
  static async create(name: string, limitBytes: number): Promise<MemoryCgroup> {
    const failures: string[] = [];
    for (const candidate of await hierarchies(name)) {
      try {
        await mkdir(candidate.path, { recursive: true });
        await writeFile(join(candidate.path, candidate.limitFile), String(limitBytes));
        return new MemoryCgroup(
          candidate.path,
          limitBytes,
          candidate.hierarchy,
          join(candidate.path, 'cgroup.procs'),
        );
      } catch (error) {
        failures.push(`${candidate.hierarchy} at ${candidate.path}: ${(error as Error).message}`);
      }
    }
    throw new Error(
      `no memory cgroup could be made (${failures.length > 0 ? failures.join('; ') : 'no memory hierarchy is mounted'})`,
    );
  }

  /**
   * `command` started inside the cgroup: a shell writes its own pid into the cgroup, then
   * replaces itself with the command, so the limit holds from the process's first instruction.
   */
  wrap<C extends { command: string; args: string[] }>(command: C): C {
    return {
      ...command,
      command: '/bin/sh',
      args: [
        '-c',
        'echo $$ > "$1" && shift && exec "$@"',
        'sh',
        this.procsFile,
        command.command,
        ...command.args,
      ],
    };
  }

  /** Removes the cgroup once its processes have exited; idempotent. */
  close(): Promise<void> {
    this.closed ??= rmdir(this.path).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    });
    return this.closed;
  }
}

interface Hierarchy {
  hierarchy: string;
  path: string;
  limitFile: string;
}

async function hierarchies(name: string): Promise<Hierarchy[]> {
  const found: Hierarchy[] = [];
  const v2Controllers = '/sys/fs/cgroup/cgroup.controllers';
  if (existsSync(v2Controllers) && (await readFile(v2Controllers, 'utf8')).includes('memory')) {
    const own = /^0::(.*)$/m.exec(await readFile('/proc/self/cgroup', 'utf8'))?.[1] ?? '/';
    found.push({
      hierarchy: 'cgroup v2',
      path: join('/sys/fs/cgroup', own, name),
      limitFile: 'memory.max',
    });
  }
  if (existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) {
    found.push({
      hierarchy: 'cgroup v1',
      path: join('/sys/fs/cgroup/memory', name),
      limitFile: 'memory.limit_in_bytes',
    });
  }
  return found;
}

/**
 * The memory limit of the container `container` in the Kubernetes manifest at `manifest`
 * (relative to the repository), in bytes: what a pod of that workload may use.
 */
export async function manifestMemoryLimit(manifest: string, container: string): Promise<number> {
  const documents = (await readFile(join(repoRoot, manifest), 'utf8'))
    .split(/^---$/m)
    .map((text) => parse(text) as unknown);
  for (const document of documents) {
    const containers = (
      document as {
        spec?: { template?: { spec?: { containers?: { name?: string; resources?: unknown }[] } } };
      } | null
    )?.spec?.template?.spec?.containers;
    const limit = (
      containers?.find((c) => c.name === container)?.resources as
        | { limits?: { memory?: unknown } }
        | undefined
    )?.limits?.memory;
    if (typeof limit !== 'string') continue;
    const quantity = parseQuantity(limit);
    if (quantity === undefined || quantity.sign <= 0) {
      throw new Error(
        `${manifest}: container ${container}: limits.memory "${limit}" is not a positive quantity`,
      );
    }
    return Math.ceil(Number(quantity.mantissa) * 10 ** quantity.exponent);
  }
  throw new Error(`${manifest}: no container ${container} with resources.limits.memory`);
}
