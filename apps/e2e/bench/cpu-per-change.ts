/**
 * CPU per change as a figure of its own (issue 29): the CPU seconds the bench reads from /proc
 * per process and phase, divided by what the phase did (changes sent, keys published or
 * resynced), beside the floor's CPU per round trip measured in the same run. CPU time moves far
 * less with the machine's load than latency does, and it is what an operator pays for.
 */
import type { FloorResult } from './floor';
import type { LatencyResult } from './latency';
import type { Goal } from './report';
import { round } from './stats';
import type { SyncRunResult } from './sync-throughput';

/** slicekeeper's own processes, as `cpuSeconds` names them (replicas summed). */
export const OWN_PROCESSES = ['plugin-watcher', 'slice-syncer', 'registration-api'] as const;
/** The servers slicekeeper uses, whose CPU a change also costs. */
export const SERVER_PROCESSES = ['redis', 'kube-emulator'] as const;

/** CPU ms per unit of one phase, per process. */
export interface CpuPerUnitRow {
  phase: string;
  /** What one unit is. */
  unit: 'change' | 'key published' | 'key resynced' | 'round trip';
  /** Units in the phase. */
  count: number;
  /**
   * CPU ms per unit by process; `own` sums {@link OWN_PROCESSES}. On the floor's rows `own` is
   * the bench process, which plays the client side (producer, Worker and HTTP client) there.
   */
  msPerUnit: Record<string, number>;
}

function perUnit(cpuSeconds: Record<string, number>, count: number): Record<string, number> {
  const ms: Record<string, number> = {};
  let own = 0;
  for (const name of OWN_PROCESSES) {
    const seconds = cpuSeconds[name] ?? 0;
    own += seconds;
    ms[name] = round((seconds * 1000) / count, 3);
  }
  ms.own = round((own * 1000) / count, 3);
  for (const name of SERVER_PROCESSES)
    ms[name] = round(((cpuSeconds[name] ?? 0) * 1000) / count, 3);
  return ms;
}

function floorRow(phase: string, cpuMs: Record<string, number>, samples: number): CpuPerUnitRow {
  return {
    phase,
    unit: 'round trip',
    count: samples,
    msPerUnit: {
      own: round(cpuMs.bench ?? 0, 3),
      ...Object.fromEntries(SERVER_PROCESSES.map((p) => [p, round(cpuMs[p] ?? 0, 3)])),
    },
  };
}

/** How a floor's rows name it: "floor", and how far apart its rounds were when paced. */
function floorName(floor: FloorResult): string {
  return floor.paceMs > 0 ? `floor, rounds ${floor.paceMs} ms apart` : 'floor';
}

/** The floor's rows: a BullMQ round trip, an API write, and both (the floor's round trip). */
export function floorCpuRows(floor: FloorResult): CpuPerUnitRow[] {
  const { queueRoundTrip, apiWrite } = floor.cpuMsPerRound;
  const both: Record<string, number> = {};
  for (const name of new Set([...Object.keys(queueRoundTrip), ...Object.keys(apiWrite)])) {
    both[name] = (queueRoundTrip[name] ?? 0) + (apiWrite[name] ?? 0);
  }
  const name = floorName(floor);
  return [
    floorRow(`${name}: bare BullMQ add → Worker job`, queueRoundTrip, floor.queueRoundTrip.samples),
    floorRow(`${name}: one keep-alive ResourceSlice write`, apiWrite, floor.apiWrite.samples),
    floorRow(`${name}: both (one round trip)`, both, floor.queueRoundTrip.samples),
  ];
}

/**
 * Every phase's CPU per unit, the floor's first; with `pacedFloor` (the floor measured with its
 * rounds 10 ms apart, as changes come at 100 changes/s), its rows after the floor's.
 */
export function cpuPerUnitRows(
  floor: FloorResult,
  latency: readonly LatencyResult[],
  sync: readonly SyncRunResult[],
  pacedFloor?: FloorResult,
): CpuPerUnitRow[] {
  return [
    ...floorCpuRows(floor),
    ...(pacedFloor === undefined ? [] : floorCpuRows(pacedFloor)),
    ...latency.map(
      (l): CpuPerUnitRow => ({
        phase: `${l.rate} changes/s (end to end, watcher on)`,
        unit: 'change',
        count: l.sent,
        msPerUnit: perUnit(l.cpuSeconds, l.sent),
      }),
    ),
    ...sync.flatMap((run) => [
      {
        phase: `cold publish ×${run.replicas}`,
        unit: 'key published' as const,
        count: run.cold.keys,
        msPerUnit: perUnit(run.cold.cpuSeconds, run.cold.keys),
      },
      {
        phase: `warm resync ×${run.replicas}`,
        unit: 'key resynced' as const,
        count: run.warm.keys,
        msPerUnit: perUnit(run.warm.cpuSeconds, run.warm.keys),
      },
      {
        phase: `churn ×${run.replicas}`,
        unit: 'change' as const,
        count: run.churn.keys,
        msPerUnit: perUnit(run.churn.cpuSeconds, run.churn.keys),
      },
    ]),
  ];
}

/**
 * Own CPU per change at 100 changes/s against both floors: back to back (the goal's) and
 * paced, as the changes come.
 */
export function pacedFloorLine(rows: readonly CpuPerUnitRow[], pacedFloor: FloorResult): string {
  const own = rows.find((r) => r.phase.startsWith('100 changes/s'))?.msPerUnit.own;
  const both = (name: string) =>
    rows.find((r) => r.phase === `${name}: both (one round trip)`)?.msPerUnit.own;
  const floor = both('floor');
  const paced = both(floorName(pacedFloor));
  if (own === undefined || floor === undefined || paced === undefined) {
    return 'own CPU per change at 100 changes/s against a paced floor: not measured';
  }
  return `own CPU per change at 100 changes/s: ${own} ms, ${round(own / floor, 2)} × the floor back to back (${floor} ms), ${round(own / paced, 2)} × the ${floorName(pacedFloor)} (${paced} ms)`;
}

const COLUMNS = ['own', ...OWN_PROCESSES, ...SERVER_PROCESSES] as const;

/** The rows as a markdown table, ms of CPU per unit. */
export function cpuPerUnitTable(rows: readonly CpuPerUnitRow[]): string {
  const line = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
  const header = ['phase', 'unit', 'units', ...COLUMNS.map((c) => `${c} ms`)];
  return [
    line(header),
    line(header.map(() => '---')),
    ...rows.map((r) =>
      line([r.phase, r.unit, r.count, ...COLUMNS.map((c) => r.msPerUnit[c] ?? '–')]),
    ),
  ].join('\n');
}

/**
 * Issue 29's CPU goals: own CPU per change at 100 changes/s ≤ 3 × the floor's client-side CPU
 * per round trip (the bench process plays producer, Worker and HTTP client there, as the
 * watcher and the syncer do for a change); with one syncer, warm resync ≤ 0.3 ms and cold
 * publish ≤ 1 ms of syncer CPU per key.
 */
const NOT_MEASURED = 'not measured: no CPU was read from the services';

export function cpuGoals(rows: readonly CpuPerUnitRow[]): Goal[] {
  const goals: Goal[] = [];
  const floor = rows.find((r) => r.phase.startsWith('floor: both'));
  const at100 = rows.find((r) => r.phase.startsWith('100 changes/s'));
  if (floor !== undefined && at100 !== undefined) {
    const floorMs = floor.msPerUnit.own ?? Number.NaN;
    const ownMs = at100.msPerUnit.own ?? Number.NaN;
    goals.push({
      name: "own CPU per change at 100 changes/s (watcher + syncer + API), against the floor's client CPU per round trip",
      goal: `≤ 3 × ${round(floorMs, 3)} ms = ${round(3 * floorMs, 3)} ms`,
      actual: ownMs > 0 ? `${ownMs} ms (${round(ownMs / floorMs, 2)} × floor)` : NOT_MEASURED,
      // No CPU at all means the services' processes were not found, not that they were free.
      met: ownMs > 0 && ownMs <= 3 * floorMs,
    });
  }
  for (const [phase, limit] of [
    ['warm resync ×1', 0.3],
    ['cold publish ×1', 1],
  ] as const) {
    const row = rows.find((r) => r.phase === phase);
    if (row === undefined) continue;
    const syncerMs = row.msPerUnit['slice-syncer'] ?? Number.NaN;
    goals.push({
      name: `${phase.replace(' ×1', '')}: slice-syncer CPU per key, one replica`,
      goal: `≤ ${limit} ms`,
      actual:
        syncerMs > 0
          ? `${syncerMs} ms (${row.count} keys; Redis ${row.msPerUnit.redis ?? '–'} ms)`
          : NOT_MEASURED,
      met: syncerMs > 0 && syncerMs <= limit,
    });
  }
  return goals;
}

/** One run of the latency phases, tracing off or on (`BENCH_TRACING=on`). */
export interface TracingRun {
  tracing: 'off' | 'on';
  /** 1, 5 and 15 minute load averages when the run's System started. */
  loadAverage: number[];
  floor: FloorResult;
  latency: LatencyResult[];
}

/** What tracing costs per change at one rate: own CPU off and on, beside the floor. */
export interface TracingCostRow {
  rate: number;
  /** The floor's client CPU per round trip of each run, ms (off, on). */
  floorMs: [number, number];
  /** slicekeeper's own CPU per change (watcher + syncer + API), ms. */
  offMs: number;
  onMs: number;
  /** on − off, ms and % of off. */
  costMs: number;
  costPercent: number;
  /** By process, ms per change, off → on. */
  byProcess: Record<string, [number, number]>;
  /**
   * Syncs run per change, off and on: changes to one key coalesce, more so on a slower run, so
   * the CPU per change of two runs compares only where these match (at 100 changes/s, 1).
   */
  syncsPerChange: [number, number];
  spansPerChange: number;
}

/** The floor's client-side CPU per round trip (BullMQ round trip + API write), ms. */
function floorClientMs(floor: FloorResult): number {
  const { queueRoundTrip, apiWrite } = floor.cpuMsPerRound;
  return round((queueRoundTrip.bench ?? 0) + (apiWrite.bench ?? 0), 3);
}

function ownMsPerChange(latency: LatencyResult): Record<string, number> {
  return perUnit(latency.cpuSeconds, latency.sent);
}

/** Tracing off against on, rate by rate (the runs' latency phases). */
export function tracingCostRows(off: TracingRun, on: TracingRun): TracingCostRow[] {
  return off.latency.flatMap((l): TracingCostRow[] => {
    const traced = on.latency.find((t) => t.rate === l.rate);
    if (traced === undefined) return [];
    const offMs = ownMsPerChange(l);
    const onMs = ownMsPerChange(traced);
    const own = [offMs.own ?? Number.NaN, onMs.own ?? Number.NaN] as const;
    return [
      {
        rate: l.rate,
        floorMs: [floorClientMs(off.floor), floorClientMs(on.floor)],
        offMs: own[0],
        onMs: own[1],
        costMs: round(own[1] - own[0], 3),
        costPercent: round(((own[1] - own[0]) / own[0]) * 100, 1),
        byProcess: Object.fromEntries(
          OWN_PROCESSES.map((p) => [p, [offMs[p] ?? Number.NaN, onMs[p] ?? Number.NaN]]),
        ),
        syncsPerChange: [round(l.syncs / l.sent, 3), round(traced.syncs / traced.sent, 3)],
        spansPerChange: traced.spans?.perChange ?? 0,
      },
    ];
  });
}

/** The rows as a markdown table. */
export function tracingCostTable(rows: readonly TracingCostRow[]): string {
  const line = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
  const header = [
    'rate',
    'floor ms (off / on run)',
    'own ms off',
    'own ms on',
    'cost ms',
    'cost %',
    ...OWN_PROCESSES.map((p) => `${p} ms off → on`),
    'syncs per change off / on',
    'spans per change',
  ];
  return [
    line(header),
    line(header.map(() => '---')),
    ...rows.map((r) =>
      line([
        `${r.rate} changes/s`,
        `${r.floorMs[0]} / ${r.floorMs[1]}`,
        r.offMs,
        r.onMs,
        r.costMs,
        r.costPercent,
        ...OWN_PROCESSES.map(
          (p) => `${r.byProcess[p]?.[0] ?? '–'} → ${r.byProcess[p]?.[1] ?? '–'}`,
        ),
        `${r.syncsPerChange[0]} / ${r.syncsPerChange[1]}`,
        r.spansPerChange,
      ]),
    ),
  ].join('\n');
}
