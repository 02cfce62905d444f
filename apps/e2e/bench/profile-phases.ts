/**
 * The phases of a profiled run (`BENCH_CPU_PROF=<dir>`) as windows of time, written beside the
 * profiles, so that `cpu-profile-summary.ts --phase=<name>` can read one phase alone out of
 * profiles that span the whole run. Times are µs on the monotonic clock V8 stamps its CPU
 * profiles' samples with (`process.hrtime`), the same in every process of the machine.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const PROFILE_PHASES_FILE = 'phases.json';

/** A stretch of a run, µs on the monotonic clock. */
export interface PhaseWindow {
  fromUs: number;
  toUs: number;
}

/** Now on the monotonic clock of V8's CPU profiles, µs. */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** The phases recorded in `dir`, by name; none when no run wrote any. */
export async function readProfilePhases(dir: string): Promise<Record<string, PhaseWindow>> {
  let text: string;
  try {
    text = await readFile(join(dir, PROFILE_PHASES_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null) {
    throw new Error(`${PROFILE_PHASES_FILE}: expected an object of phase windows`);
  }
  const phases: Record<string, PhaseWindow> = {};
  for (const [name, window] of Object.entries(parsed)) {
    const { fromUs, toUs } = (window ?? {}) as Partial<PhaseWindow>;
    if (typeof fromUs !== 'number' || typeof toUs !== 'number' || toUs < fromUs) {
      throw new Error(`${PROFILE_PHASES_FILE}: "${name}" needs numbers fromUs <= toUs`);
    }
    phases[name] = { fromUs, toUs };
  }
  return phases;
}

/**
 * Adds `phases` to those recorded in `dir` (a phase of the same name is replaced); makes `dir`,
 * which the services' profiles only make when they exit.
 */
export async function recordProfilePhases(
  dir: string,
  phases: Record<string, PhaseWindow>,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const all = { ...(await readProfilePhases(dir)), ...phases };
  await writeFile(join(dir, PROFILE_PHASES_FILE), `${JSON.stringify(all, null, 2)}\n`);
}
