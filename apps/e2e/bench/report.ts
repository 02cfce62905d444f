import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@slicekeeper/testing';
import { cpuPerUnitTable } from './cpu-per-change';
import type { CpuPerUnitRow, TracingCostRow, TracingRun } from './cpu-per-change';
import type { FloorResult } from './floor';
import type { LatencyResult } from './latency';
import type { PrioritiesResult } from './priorities';
import type { RepairResult } from './repair';
import { round } from './stats';
import type { ApiCalls } from './support';
import type { SyncRunResult } from './sync-throughput';
import type { SyncerMemoryResult } from './syncer-memory';
import { WATCHER_MANIFEST } from './watcher-memory';
import type { WatcherMemoryResult } from './watcher-memory';

export interface Goal {
  name: string;
  goal: string;
  actual: string;
  met: boolean;
}

/** What every run records, whichever parts it ran. */
export interface BenchRun {
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
    /** The same when the run ended. */
    loadAverageAtEnd?: number[];
  };
  settings: Record<string, unknown>;
  goals: Goal[];
  durationSeconds: number;
}

/** Every part. */
export interface BenchResults extends BenchRun {
  floor: FloorResult;
  latency: (LatencyResult & { ratioToFloor: number })[];
  sync: SyncRunResult[];
  /** CPU ms per change, key published or key resynced, per process, beside the floor's. */
  cpuPerUnit: CpuPerUnitRow[];
  /** API reads (list/get of resourceslices and nodes) per phase; watch requests apart. */
  apiReads: ApiReadsRow[];
  repair: RepairResult;
  syncerMemory: SyncerMemoryResult;
  watcherMemory: WatcherMemoryResult;
  priorities: PrioritiesResult;
}

/** Only the sync priorities (`BENCH_ONLY=priorities`). */
export interface PrioritiesBenchResults extends BenchRun {
  priorities: PrioritiesResult;
}

/** Only the floor, the latency rates and one replica's sync phases (`BENCH_ONLY=cpu`). */
export interface CpuBenchResults extends BenchRun {
  floor: FloorResult;
  /** The floor with its rounds `settings.floorPaceMs` apart, as changes come at 100 changes/s. */
  pacedFloor: FloorResult;
  latency: LatencyResult[];
  sync: SyncRunResult[];
  cpuPerUnit: CpuPerUnitRow[];
}

/** The latency phases with tracing off and on (`BENCH_ONLY=cpu BENCH_TRACING=on`). */
export interface TracingCpuBenchResults extends BenchRun {
  off: TracingRun;
  on: TracingRun;
  cost: TracingCostRow[];
}

/** Only the plugin-watcher's memory (`BENCH_ONLY=watcher-memory`). */
export interface WatcherMemoryBenchResults extends BenchRun {
  watcherMemory: WatcherMemoryResult;
}

export function machineInfo(): BenchRun['machine'] {
  return {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model ?? 'unknown',
    totalMemoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage: os.loadavg().map((l) => round(l)),
  };
}

/** The API calls of one phase, counted against what the phase did. */
export interface ApiReadsRow {
  phase: string;
  /** What `count` counts: inventory changes, resyncs (one per key), first publishes, … */
  unit: 'change' | 'resync' | 'publish' | 'external delete' | 'restart';
  count: number;
  sliceReads: number;
  nodeReads: number;
  /** (sliceReads + nodeReads) / count. */
  readsPerUnit: number;
  /** Watch requests opened (not reads). */
  watches: number;
  writes: number;
  /** Syncs the syncers ran (`slicekeeper_syncs_total`); unset where not counted. */
  syncs?: number;
}

const PLURALS: Record<ApiReadsRow['unit'], string> = {
  change: 'changes',
  resync: 'resyncs',
  publish: 'publishes',
  'external delete': 'external deletes',
  restart: 'restarts',
};

function readsRow(
  phase: string,
  unit: ApiReadsRow['unit'],
  count: number,
  api: ApiCalls,
  syncs?: number,
): ApiReadsRow {
  return {
    ...(syncs === undefined ? {} : { syncs }),
    phase,
    unit,
    count,
    sliceReads: api.sliceReads,
    nodeReads: api.nodeReads,
    readsPerUnit: round(api.reads / count, 3),
    watches: api.watches,
    writes: api.writes,
  };
}

/** One row per measured phase; changes and resyncs are the rows the goals judge. */
export function apiReadRows(
  latency: readonly LatencyResult[],
  sync: readonly SyncRunResult[],
  repair: RepairResult,
  memory: SyncerMemoryResult,
): ApiReadsRow[] {
  return [
    ...latency.map((l) => readsRow(`latency ${l.rate}/s`, 'change', l.sent, l.api, l.syncs)),
    ...sync.flatMap((run) =>
      [
        ['cold', 'publish', run.cold] as const,
        ['warm', 'resync', run.warm] as const,
        ['churn', 'change', run.churn] as const,
      ].map(([name, unit, p]) =>
        readsRow(`${name} ×${run.replicas}`, unit, p.keys, p.api, p.syncs),
      ),
    ),
    readsRow('external-delete repair', 'external delete', repair.deletes, repair.api, repair.syncs),
    readsRow('syncer restart (its first lists)', 'restart', 1, memory.startApi),
  ];
}

/** Reads per unit over every row of that unit. */
function readsPer(rows: readonly ApiReadsRow[], unit: ApiReadsRow['unit']) {
  const of = rows.filter((r) => r.unit === unit);
  const count = of.reduce((sum, r) => sum + r.count, 0);
  const reads = of.reduce((sum, r) => sum + r.sliceReads + r.nodeReads, 0);
  const watches = of.reduce((sum, r) => sum + r.watches, 0);
  return { count, reads, watches, perUnit: count === 0 ? Number.NaN : round(reads / count, 3) };
}

/** The issue 15 line: reads per change and per resync, watch requests named apart. */
export function readsLine(rows: readonly ApiReadsRow[]): string {
  const changes = readsPer(rows, 'change');
  const resyncs = readsPer(rows, 'resync');
  return (
    `API reads (list/get of resourceslices and nodes): ${changes.perUnit} per change ` +
    `(${changes.reads} over ${changes.count} changes), ${resyncs.perUnit} per resync ` +
    `(${resyncs.reads} over ${resyncs.count} forced resyncs); watch requests are not reads ` +
    `and are not counted (${changes.watches + resyncs.watches} opened meanwhile)`
  );
}

/** Probes under a backlog within 1 s p99, every one seen. */
export function priorityGoal(p: PrioritiesResult): Goal {
  const { driverLoss, firstPublish } = p;
  const met = (e: PrioritiesResult['driverLoss']): boolean =>
    e.seen === e.injected && e.p99ms <= 1000;
  return {
    name: `driver-loss taint and new node's first publish under a ${p.keys}-key backlog`,
    goal: 'p99 ≤ 1 s each, every one seen',
    actual:
      `taint p99 ${ms(driverLoss.p99ms)} (${driverLoss.seen}/${driverLoss.injected} seen), ` +
      `first publish p99 ${ms(firstPublish.p99ms)} (${firstPublish.seen}/${firstPublish.injected} seen)`,
    met: met(driverLoss) && met(firstPublish),
  };
}

/** Issue 18: at most 64 KiB of resident set and of heap per plugin stream. */
export function watcherMemoryGoal(m: WatcherMemoryResult): Goal {
  const limit = 64 * 1024;
  return {
    name: `plugin-watcher memory per stream at ${m.streams} streams${'bytes' in m.limit ? '' : ' (without its memory limit)'}`,
    goal: '≤ 64 KiB RSS and ≤ 64 KiB heap used per stream, settled',
    actual: `${kib(m.settled.rssBytesPerStream)} RSS, ${kib(m.settled.heapUsedBytesPerStream)} heap used (right after connecting: ${kib(m.connected.rssBytesPerStream)}, ${kib(m.connected.heapUsedBytesPerStream)}; on average with fixed costs: ${kib(m.average.rssBytesPerStream)}, ${kib(m.average.heapUsedBytesPerStream)})`,
    met: m.settled.rssBytesPerStream <= limit && m.settled.heapUsedBytesPerStream <= limit,
  };
}

/** The goals, each met or not, from the figures. */
export function evaluateGoals(
  floor: FloorResult,
  latency: readonly (LatencyResult & { ratioToFloor: number })[],
  sync: readonly SyncRunResult[],
  apiReads: readonly ApiReadsRow[],
  priorities: PrioritiesResult,
): Goal[] {
  const goals: Goal[] = [];
  for (const unit of ['change', 'resync'] as const) {
    const reads = readsPer(apiReads, unit);
    goals.push({
      name: `API reads per ${unit} (list/get of resourceslices and nodes; watches not counted)`,
      goal: '0',
      actual: `${reads.perUnit} (${reads.reads} over ${reads.count})`,
      met: reads.reads === 0,
    });
  }
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
  goals.push(priorityGoal(priorities));
  return goals;
}

const ms = (value: number): string => `${round(value, 2)} ms`;
const mib = (bytes: number): string => `${round(bytes / 2 ** 20, 1)} MiB`;
const kib = (bytes: number): string => `${round(bytes / 1024, 1)} KiB`;

export function table(
  header: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const line = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function heading(results: BenchRun, title: string): string[] {
  const { machine } = results;
  return [
    `# ${title}, ${results.date}`,
    `${machine.cpus} × ${machine.model}, ${mib(machine.totalMemoryBytes)}, node ${machine.node}, load at start ${machine.loadAverage.join(' ')}, at the end ${(machine.loadAverageAtEnd ?? []).join(' ')}; ${results.durationSeconds} s`,
  ];
}

export function goalsTable(goals: readonly Goal[]): string {
  return table(
    ['goal', 'target', 'actual', 'met'],
    goals.map((g) => [g.name, g.goal, g.actual, g.met ? 'met' : '**not met**']),
  );
}

function prioritiesSection(p: PrioritiesResult): string[] {
  const backlog = (e: PrioritiesResult['driverLoss']): string =>
    `${e.backlog.min} / ${e.backlog.median} / ${e.backlog.max}`;
  const row = (
    name: string,
    reason: string,
    e: PrioritiesResult['driverLoss'],
  ): (string | number)[] => [
    name,
    reason,
    e.injected,
    e.seen === e.injected ? e.seen : `**${e.seen}**`,
    backlog(e),
    ms(e.p50ms),
    ms(e.p99ms),
    ms(e.maxMs),
  ];
  return [
    '## Sync priorities under a backlog: enqueue → seen through a watch',
    `A cold publish of ${p.keys} keys on ${p.nodes} nodes (reason \`snapshot\`, priority 3) drained through one slice-syncer with its default write rate and concurrency in **${p.cold.seconds} s** (${p.cold.keysPerSecond} keys/s, ${p.cold.writes} writes). Meanwhile, spread over the drain, published keys lost their driver and new nodes published for the first time; each is timed from its enqueue until the watch shows the key's slice tainted \`<driver>/driver-unreachable\`, or the new key's slice. While the probes were in flight the bench's own event loop, which timestamps the watch events, lagged up to ${ms(p.benchEventLoopDelay.maxMs)} (p99 ${ms(p.benchEventLoopDelay.p99ms)}).`,
    table(
      [
        'event',
        'reason (priority)',
        'injected',
        'seen',
        'backlog when enqueued (min / median / max jobs)',
        'p50',
        'p99',
        'max',
      ],
      [
        row('driver lost → slice tainted', '`unreachable` (1)', p.driverLoss),
        row("new node's first publish → slice", '`first-snapshot` (2)', p.firstPublish),
      ],
    ),
  ];
}

/** The results of `BENCH_ONLY=priorities` as markdown. */
export function prioritiesMarkdown(results: PrioritiesBenchResults): string {
  return onePartMarkdown(results, 'sync priorities', prioritiesSection(results.priorities));
}

/** The results of a `BENCH_ONLY` run: the heading, its part's section, its goals. */
function onePartMarkdown(
  results: PrioritiesBenchResults | WatcherMemoryBenchResults,
  part: string,
  section: string[],
): string {
  const sections = [
    ...heading(results, `slicekeeper system benchmark (${part} only)`),
    ...section,
    '## Goals',
    goalsTable(results.goals),
  ];
  return `${sections.join('\n\n')}\n`;
}

function watcherMemorySection(m: WatcherMemoryResult): string[] {
  const limit =
    'bytes' in m.limit
      ? `under the memory limit of ${WATCHER_MANIFEST} (${mib(m.limit.bytes)}, ${m.limit.enforcedBy})`
      : `**without its memory limit** (${m.limit.unconstrained}): V8 sizes its heap from the whole machine, so the figures overstate what a pod costs`;
  return [
    '## Plugin-watcher memory per stream',
    `The compiled watcher on Node ${m.node}${m.nodeOptions === undefined ? '' : ` (${m.nodeOptions})`}, ${limit}. Per stream: what the second ${m.streams - Math.floor(m.streams / 2)} streams added, each (the marginal cost); on average: since before the first stream, fixed costs included.`,
    table(
      ['streams', 'when', 'RSS', 'RSS / stream', 'heap used / stream', 'time to stream'],
      [
        [0, 'before', mib(m.rssBeforeBytes), '', '', ''],
        [Math.floor(m.streams / 2), 'half, settled', mib(m.rssHalfwayBytes), '', '', ''],
        [
          m.streams,
          'right after connecting',
          mib(m.connected.rssBytes),
          kib(m.connected.rssBytesPerStream),
          kib(m.connected.heapUsedBytesPerStream),
          `${m.secondsToStream} s`,
        ],
        [
          m.streams,
          `settled (${m.settleSeconds} s later)`,
          mib(m.settled.rssBytes),
          kib(m.settled.rssBytesPerStream),
          kib(m.settled.heapUsedBytesPerStream),
          '',
        ],
        [
          m.streams,
          'settled, on average',
          mib(m.average.rssBytes),
          kib(m.average.rssBytesPerStream),
          kib(m.average.heapUsedBytesPerStream),
          '',
        ],
      ],
    ),
  ];
}

/** The results of `BENCH_ONLY=watcher-memory` as markdown. */
export function watcherMemoryMarkdown(results: WatcherMemoryBenchResults): string {
  return onePartMarkdown(
    results,
    'plugin-watcher memory',
    watcherMemorySection(results.watcherMemory),
  );
}

/** The results as markdown tables. */
export function markdown(results: BenchResults): string {
  const { floor } = results;
  const sections = [
    ...heading(results, 'slicekeeper system benchmark'),
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
    '## API reads per change, resync and repair',
    `${readsLine(results.apiReads)}.`,
    table(
      [
        'phase',
        'counted',
        'list/get resourceslices',
        'list/get nodes',
        'reads per unit',
        'watch requests (not reads)',
        'slice writes',
        'syncs run',
      ],
      results.apiReads.map((r) => [
        r.phase,
        `${r.count} ${r.count === 1 ? r.unit : PLURALS[r.unit]}`,
        r.sliceReads,
        r.nodeReads,
        r.readsPerUnit,
        r.watches,
        r.writes,
        r.syncs ?? '',
      ]),
    ),
    '## External-delete repair: DELETE answered → a slice of the pool seen again through a watch',
    table(
      ['deletes', 'p50', 'p99', 'max', 'API reads', 'slicekeeper writes', 'wall s'],
      [
        [
          results.repair.deletes,
          ms(results.repair.p50ms),
          ms(results.repair.p99ms),
          ms(results.repair.maxMs),
          results.repair.api.reads,
          results.repair.syncerWrites,
          results.repair.wallSeconds,
        ],
      ],
    ),
    '## Slice-syncer cache memory (fresh process, VmRSS from /proc, heap used from /metrics)',
    syncerMemoryTable(results.syncerMemory),
    '## CPU seconds per process and phase (from /proc; the bench hosts the in-process drivers)',
    cpuTable(results),
    '## CPU per unit, ms (own = watcher + syncer + API; on the floor rows, the bench as client)',
    cpuPerUnitTable(results.cpuPerUnit),
    ...watcherMemorySection(results.watcherMemory),
    ...prioritiesSection(results.priorities),
    '## Goals',
    goalsTable(results.goals),
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
    ['repair', results.repair.cpuSeconds, results.repair.wallSeconds],
    [
      'cold ×1 with priority probes',
      results.priorities.cold.cpuSeconds,
      results.priorities.cold.seconds,
    ],
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

export function syncerMemoryTable(m: SyncerMemoryResult): string {
  return [
    table(
      ['syncer', 'slices / Nodes cached', 'RSS', 'of it file-backed', 'heap used'],
      [
        [
          'fresh, empty cluster (idle)',
          '0 / 0',
          mib(m.idle.rssBytes),
          mib(m.idle.rssFileBytes),
          mib(m.idle.heapUsedBytes),
        ],
        [
          `fresh, after a restart (ready in ${m.secondsToReady} s)`,
          `${m.slices} / ${m.nodes}`,
          mib(m.loaded.rssBytes),
          mib(m.loaded.rssFileBytes),
          mib(m.loaded.heapUsedBytes),
        ],
        [
          'the one that ran every phase, before that restart',
          `${m.slices} / ${m.nodes}`,
          mib(m.afterPhases.rssBytes),
          mib(m.afterPhases.rssFileBytes),
          mib(m.afterPhases.heapUsedBytes),
        ],
        [
          '**per 1,000 slices** (fresh, cached − idle)',
          `1000 / ${round((m.nodes / m.slices) * 1000, 0)}`,
          kib(m.rssBytesPer1000Slices),
          '',
          kib(m.heapUsedBytesPer1000Slices),
        ],
      ],
    ),
    `Each anti-entropy relist (RELIST_INTERVAL) costs what the restart's first lists cost: ${m.startApi.sliceReads} list pages of resourceslices and ${m.startApi.nodeReads} of nodes.`,
  ].join('\n\n');
}

function summaryCells(s: FloorResult['apiWrite']): (string | number)[] {
  return [s.samples, ms(s.p50), ms(s.p99), ms(s.max)];
}

/**
 * Writes `bench/results/<date><suffix>.json` at the repository root; returns its path. A run of
 * some parts only has a suffix, so that it never overwrites a whole run's file.
 */
export async function writeResults(results: BenchRun, suffix = ''): Promise<string> {
  const dir = join(repoRoot, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${results.date}${suffix}.json`);
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}
