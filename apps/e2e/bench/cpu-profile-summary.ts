/**
 * Summarises the V8 CPU profiles a `BENCH_CPU_PROF=<dir>` run wrote: per service, the functions
 * with the most self time and the self time per package (a dependency under node_modules, a
 * workspace lib or app, Node's internals, V8's garbage collector, idle); then its longest tasks,
 * the stretches of samples with no idle one between them (what holds the event loop, and so its
 * lag), each with when it began, what it spent its time in and which code it ran through.
 * With `--phase=<name>`, only the samples of one phase the run recorded (`phases.json`, e.g.
 * "100 changes/s"), of the profiles that have any.
 *
 *   node --import tsx apps/e2e/bench/cpu-profile-summary.ts <dir> [top=15] [tasks=10] [--phase=<name>]
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PROFILE_PHASES_FILE, readProfilePhases } from './profile-phases';
import type { PhaseWindow } from './profile-phases';
import { round } from './stats';

/** A `.cpuprofile` as V8 writes it (the fields read here). */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  /** When profiling began, µs on the monotonic clock; the first sample is a delta after it. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * The profile's samples taken within `window` (each with the delta before it), or undefined
 * when it has none there.
 */
export function withinWindow(profile: CpuProfile, window: PhaseWindow): CpuProfile | undefined {
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let at = profile.startTime;
  let first: number | undefined;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < window.fromUs || at >= window.toUs) return;
    first ??= at - delta;
    samples.push(id);
    timeDeltas.push(delta);
  });
  if (first === undefined) return undefined;
  return { ...profile, startTime: first, samples, timeDeltas };
}

type CallFrame = CpuProfile['nodes'][number]['callFrame'];

/** Self time of one function or one package, ms, and its share of the profile's busy time. */
export interface SelfTime {
  name: string;
  ms: number;
  /** Share of the time not idle, %. */
  share: number;
}

/** One stretch of samples with no idle sample between them: one hold of the event loop. */
export interface LongTask {
  /** When it began, seconds after the profile's first sample. */
  atS: number;
  ms: number;
  /**
   * Its samples: at the profile's interval (1 ms by default) about one per ms of it, fewer when
   * the process waited for a core, not for its own code (the sampler waited too).
   */
  samples: number;
  /** Self time per package within the task, most first. */
  byPackage: SelfTime[];
  /** The project's and its dependencies' functions the task spent the most time under. */
  through: SelfTime[];
}

export interface ProfileSummary {
  /** The app whose main.ts the profile contains, or the file name. */
  service: string;
  file: string;
  /** Sampled time not idle, ms. */
  busyMs: number;
  topFunctions: SelfTime[];
  byPackage: SelfTime[];
  longestTasks: LongTask[];
}

/** Where a function's code lives: a package, a workspace lib or app, node: or V8. */
export function packageOf(url: string, functionName: string): string {
  if (functionName === '(garbage collector)') return 'V8 garbage collector';
  if (functionName === '(program)') return 'V8 (program)';
  if (url === '') return functionName === '' ? 'native' : `native ${functionName}`;
  if (url.startsWith('node:')) return 'node internals';
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (module?.[1] !== undefined) return module[1];
  const workspace = /\/(libs|apps)\/([^/]+)\//.exec(url);
  if (workspace?.[2] !== undefined) return `${workspace[1] ?? ''}/${workspace[2]}`;
  return url;
}

function frameName(frame: CallFrame): string {
  const path = frame.url.replace(/^.*\/(node_modules|libs|apps)\//, '$1/');
  // tsx compiles a TypeScript source to one line: its line numbers say nothing.
  const line = frame.url.endsWith('.ts') ? '' : `:${frame.lineNumber + 1}`;
  const where = frame.url === '' ? '' : ` ${path}${line}`;
  return `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${where}`;
}

function ranked(totals: Map<string, number>, busyUs: number, top: number): SelfTime[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({
      name,
      ms: round(us / 1000, 1),
      share: round((us / busyUs) * 100, 1),
    }));
}

/**
 * The `count` longest runs of consecutive samples none of which is idle. A sample's time is the
 * delta that follows it, so a task's length is what its samples cover at the profile's interval.
 */
export function longestTasks(profile: CpuProfile, count: number, top = 4): LongTask[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const runs: { first: number; end: number; us: number }[] = [];
  // When each sample was taken, µs after the profile's start.
  const takenUs: number[] = [];
  let open: { first: number; us: number } | undefined;
  profile.samples.forEach((id, i) => {
    takenUs.push((takenUs[i - 1] ?? 0) + (profile.timeDeltas[i] ?? 0));
    if (byId.get(id)?.callFrame.functionName === '(idle)') {
      if (open !== undefined) runs.push({ first: open.first, end: i, us: open.us });
      open = undefined;
      return;
    }
    open ??= { first: i, us: 0 };
    open.us += profile.timeDeltas[i + 1] ?? 0;
  });
  if (open !== undefined)
    runs.push({ first: open.first, end: profile.samples.length, us: open.us });
  const projectCode = /\/(node_modules|libs|apps)\//;
  return runs
    .sort((a, b) => b.us - a.us)
    .slice(0, count)
    .map((run) => {
      const packages = new Map<string, number>();
      const through = new Map<string, number>();
      for (let i = run.first; i < run.end; i += 1) {
        const us = profile.timeDeltas[i + 1] ?? 0;
        const leaf = byId.get(profile.samples[i] ?? -1);
        if (leaf === undefined) continue;
        const pkg = packageOf(leaf.callFrame.url, leaf.callFrame.functionName);
        packages.set(pkg, (packages.get(pkg) ?? 0) + us);
        const seen = new Set<string>();
        for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
          const frame = byId.get(id)?.callFrame;
          if (frame === undefined || !projectCode.test(frame.url)) continue;
          const name = frameName(frame);
          if (seen.has(name)) continue;
          seen.add(name);
          through.set(name, (through.get(name) ?? 0) + us);
        }
      }
      return {
        atS: round((takenUs[run.first] ?? 0) / 1e6, 1),
        ms: round(run.us / 1000, 1),
        samples: run.end - run.first,
        byPackage: ranked(packages, run.us, top),
        through: ranked(through, run.us, top),
      };
    });
}

/** Self time per function and per package of one profile; `(idle)` is left out. */
export function summarizeProfile(
  profile: CpuProfile,
  file: string,
  top: number,
  tasks = 10,
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  let busyUs = 0;
  let service = file;
  for (const frame of byId.values()) {
    const app = /\/apps\/([^/]+)\/(?:src|dist)\/main\.[jt]s$/.exec(frame.url)?.[1];
    if (app !== undefined) service = app;
  }
  for (const [id, us] of selfUs) {
    const frame = byId.get(id);
    if (frame === undefined || frame.functionName === '(idle)') continue;
    busyUs += us;
    const name = frameName(frame);
    functions.set(name, (functions.get(name) ?? 0) + us);
    const pkg = packageOf(frame.url, frame.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  return {
    service,
    file,
    busyMs: round(busyUs / 1000, 0),
    topFunctions: ranked(functions, busyUs, top),
    byPackage: ranked(packages, busyUs, top),
    longestTasks: longestTasks(profile, tasks),
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const phaseName = args.find((a) => a.startsWith('--phase='))?.slice('--phase='.length);
  const [dir, topArg, tasksArg] = args.filter((a) => !a.startsWith('--phase='));
  if (dir === undefined) {
    throw new Error('usage: cpu-profile-summary.ts <dir> [top] [tasks] [--phase=<name>]');
  }
  const top = topArg === undefined ? 15 : Number(topArg);
  const tasks = tasksArg === undefined ? 10 : Number(tasksArg);
  let window: PhaseWindow | undefined;
  if (phaseName !== undefined) {
    const phases = await readProfilePhases(dir);
    window = phases[phaseName];
    if (window === undefined) {
      const known = Object.keys(phases);
      throw new Error(
        `--phase: no phase "${phaseName}" in ${join(dir, PROFILE_PHASES_FILE)} (${known.length === 0 ? 'it records none' : `it records ${known.map((k) => `"${k}"`).join(', ')}`})`,
      );
    }
  }
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort();
  for (const file of files) {
    const whole = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
    const profile = window === undefined ? whole : withinWindow(whole, window);
    if (profile === undefined) continue;
    const s = summarizeProfile(profile, file, top, tasks);
    const lines = [
      `## ${s.service} (${s.file})${phaseName === undefined ? '' : `, phase "${phaseName}"`}: ${s.busyMs} ms busy`,
      'self time by package:',
      ...s.byPackage.map((p) => `  ${p.share}%  ${p.ms} ms  ${p.name}`),
      'top functions by self time:',
      ...s.topFunctions.map((f) => `  ${f.share}%  ${f.ms} ms  ${f.name}`),
      'longest tasks (no idle sample between):',
      ...s.longestTasks.flatMap((t) => [
        `  ${t.ms} ms at ${t.atS} s, ${t.samples} samples: ${t.byPackage.map((p) => `${p.name} ${p.share}%`).join(', ')}`,
        ...t.through.map((f) => `      under ${f.name} ${f.share}%`),
      ]),
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
