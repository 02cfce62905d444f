/**
 * Summarises the V8 CPU profiles a `BENCH_CPU_PROF=<dir>` run wrote: per service, the functions
 * with the most self time and the self time per package (a dependency under node_modules, a
 * workspace lib or app, Node's internals, V8's garbage collector, idle).
 *
 *   node --import tsx apps/e2e/bench/cpu-profile-summary.ts <dir> [top=15]
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { round } from './stats';

/** A `.cpuprofile` as V8 writes it (the fields read here). */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
  }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time of one function or one package, ms, and its share of the profile's busy time. */
export interface SelfTime {
  name: string;
  ms: number;
  /** Share of the time not idle, %. */
  share: number;
}

export interface ProfileSummary {
  /** The app whose main.ts the profile contains, or the file name. */
  service: string;
  file: string;
  /** Sampled time not idle, ms. */
  busyMs: number;
  topFunctions: SelfTime[];
  byPackage: SelfTime[];
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

/** Self time per function and per package of one profile; `(idle)` is left out. */
export function summarizeProfile(profile: CpuProfile, file: string, top: number): ProfileSummary {
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
    const path = frame.url.replace(/^.*\/(node_modules|libs|apps)\//, '$1/');
    // tsx compiles a TypeScript source to one line: its line numbers say nothing.
    const line = frame.url.endsWith('.ts') ? '' : `:${frame.lineNumber + 1}`;
    const where = frame.url === '' ? '' : ` ${path}${line}`;
    const name = `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${where}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    const pkg = packageOf(frame.url, frame.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  const ranked = (totals: Map<string, number>): SelfTime[] =>
    [...totals]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({
        name,
        ms: round(us / 1000, 1),
        share: round((us / busyUs) * 100, 1),
      }));
  return {
    service,
    file,
    busyMs: round(busyUs / 1000, 0),
    topFunctions: ranked(functions),
    byPackage: ranked(packages),
  };
}

async function main(): Promise<void> {
  const [dir, topArg] = process.argv.slice(2);
  if (dir === undefined) throw new Error('usage: cpu-profile-summary.ts <dir> [top]');
  const top = topArg === undefined ? 15 : Number(topArg);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort();
  for (const file of files) {
    const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
    const s = summarizeProfile(profile, file, top);
    const lines = [
      `## ${s.service} (${s.file}): ${s.busyMs} ms busy`,
      'self time by package:',
      ...s.byPackage.map((p) => `  ${p.share}%  ${p.ms} ms  ${p.name}`),
      'top functions by self time:',
      ...s.topFunctions.map((f) => `  ${f.share}%  ${f.ms} ms  ${f.name}`),
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
