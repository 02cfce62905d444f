import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@slicekeeper/testing';
import type { FloorResult } from './floor';
import type { LatencyResult } from './latency';
import { round } from './stats';
import type { SyncRunResult } from './sync-throughput';
import type { WatcherMemoryResult } from './watcher-memory';

export interface Goal {
  name: string;
  goal: string;
  actual: string;
  met: boolean;
}

export interface BenchResults {
  /** The day of the run (UTC), YYYY-MM-DD: the results file's name. */
  date: string;
  startedAt: string;
  machine: {
    cpus: number;
    model: string;
    totalMemoryBytes: number;
    node: string;
    platform: string;
    /** 1, 5 and 15 minute load averages when the run started (the machine may be shared). */
    loadAverage: number[];
  };
  settings: Record<string, unknown>;
  floor: FloorResult;
  latency: (LatencyResult & { ratioToFloor: number })[];
  sync: SyncRunResult[];
  watcherMemory: WatcherMemoryResult;
  goals: Goal[];
  durationSeconds: number;
}

export function machineInfo(): BenchResults['machine'] {
  return {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model ?? 'unknown',
    totalMemoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage: os.loadavg().map((l) => round(l)),
  };
}

/** The goals, each met or not, from the figures. */
export function evaluateGoals(
  floor: FloorResult,
  latency: readonly (LatencyResult & { ratioToFloor: number })[],
  sync: readonly SyncRunResult[],
): Goal[] {
  const goals: Goal[] = [];
  const at100 = latency.find((l) => l.rate === 100);
  if (at100 !== undefined) {
    goals.push({
      name: 'p50 latency at 100 changes/s',
      goal: `≤ 3 × floor (${ms(3 * floor.floorMs)})`,
      actual: `${ms(at100.p50ms)} (${at100.ratioToFloor} × floor)`,
      met: at100.p50ms <= 3 * floor.floorMs,
    });
    goals.push({
      name: 'p99 latency at 100 changes/s',
      goal: '≤ 50 ms',
      actual: ms(at100.p99ms),
      met: at100.p99ms <= 50,
    });
  }
  for (const run of sync) {
    goals.push({
      name: `cold publish, ${run.keys} keys, ${run.replicas} replica(s)`,
      goal: '≤ 30 s',
      actual: `${run.cold.seconds} s`,
      met: run.cold.seconds <= 30,
    });
    goals.push({
      name: `warm resync, ${run.keys} keys, ${run.replicas} replica(s)`,
      goal: '≤ 15 s, 0 writes',
      actual: `${run.warm.seconds} s, ${run.warm.writes} writes`,
      met: run.warm.seconds <= 15 && run.warm.writes === 0,
    });
  }
  return goals;
}

const ms = (value: number): string => `${round(value, 2)} ms`;
const mib = (bytes: number): string => `${round(bytes / 2 ** 20, 1)} MiB`;

function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The results as markdown tables. */
export function markdown(results: BenchResults): string {
  const { floor, machine } = results;
  const sections = [
    `# slicekeeper system benchmark, ${results.date}`,
    `${machine.cpus} × ${machine.model}, ${mib(machine.totalMemoryBytes)}, node ${machine.node}, load at start ${machine.loadAverage.join(' ')}; ${results.durationSeconds} s`,
    '## Floor (same Redis, same emulator process)',
    table(
      ['hop', 'samples', 'p50', 'p99', 'max'],
      [
        ['BullMQ add → Worker runs', ...summaryCells(floor.queueRoundTrip)],
        ['ResourceSlice write (keep-alive HTTP)', ...summaryCells(floor.apiWrite)],
        ['**floor** = p50 + p50', '', ms(floor.floorMs), '', ''],
      ],
    ),
    '## End-to-end latency: driver sends → slice seen through a watch',
    table(
      [
        'changes/s',
        'sent',
        'seen',
        'p50',
        'p99',
        'max',
        'p50 / floor',
        'API reads / change',
        'API writes / change',
        'converged',
      ],
      results.latency.map((l) => [
        `${l.rate} (sent at ${l.achievedRate})`,
        l.sent,
        l.seen,
        ms(l.p50ms),
        ms(l.p99ms),
        ms(l.maxMs),
        l.ratioToFloor,
        l.readsPerChange,
        l.writesPerChange,
        l.converged ? 'yes' : '**no**',
      ]),
    ),
    '## Cold publish / warm resync / 10% churn',
    table(
      [
        'replicas',
        'phase',
        'keys',
        'seconds',
        'keys/s',
        'writes',
        'reads',
        'reads/key',
        'Redis bytes/key',
      ],
      results.sync.flatMap((run) =>
        [run.cold, run.warm, run.churn].map((p) => [
          run.replicas,
          p.phase,
          p.keys,
          p.seconds,
          p.keysPerSecond,
          p.writes,
          p.reads,
          p.readsPerKey,
          p.phase === 'cold' ? run.redisBytesPerKey : '',
        ]),
      ),
    ),
    '## CPU seconds per process and phase (from /proc; the bench hosts the in-process drivers)',
    cpuTable(results),
    '## Plugin-watcher memory per stream',
    table(
      [
        'streams',
        'RSS before',
        'RSS after',
        'RSS / stream',
        'heap used / stream',
        'time to stream',
      ],
      [
        [
          results.watcherMemory.streams,
          mib(results.watcherMemory.rssBeforeBytes),
          mib(results.watcherMemory.rssAfterBytes),
          `${round(results.watcherMemory.rssBytesPerStream / 1024, 1)} KiB`,
          `${round(results.watcherMemory.heapUsedBytesPerStream / 1024, 1)} KiB`,
          `${results.watcherMemory.secondsToStream} s`,
        ],
      ],
    ),
    '## Goals',
    table(
      ['goal', 'target', 'actual', 'met'],
      results.goals.map((g) => [g.name, g.goal, g.actual, g.met ? 'met' : '**not met**']),
    ),
  ];
  return `${sections.join('\n\n')}\n`;
}

const PROCESSES = [
  'bench',
  'plugin-watcher',
  'slice-syncer',
  'kube-emulator',
  'redis',
  'registration-api',
];

function cpuTable(results: BenchResults): string {
  const rows: [string, Record<string, number>, number][] = [
    ...results.latency.map((l): [string, Record<string, number>, number] => [
      `latency ${l.rate}/s`,
      l.cpuSeconds,
      l.wallSeconds,
    ]),
    ...results.sync.flatMap((run) =>
      [run.cold, run.warm, run.churn].map((p): [string, Record<string, number>, number] => [
        `${p.phase} ×${run.replicas}`,
        p.cpuSeconds,
        p.seconds,
      ]),
    ),
  ];
  return table(
    ['phase', 'wall s', ...PROCESSES],
    rows.map(([name, cpu, seconds]) => [
      name,
      seconds,
      ...PROCESSES.map((p) => round(cpu[p] ?? 0, 2)),
    ]),
  );
}

function summaryCells(s: FloorResult['apiWrite']): (string | number)[] {
  return [s.samples, ms(s.p50), ms(s.p99), ms(s.max)];
}

/** Writes `bench/results/<date>.json` at the repository root; returns its path. */
export async function writeResults(results: BenchResults): Promise<string> {
  const dir = join(repoRoot, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${results.date}.json`);
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}
