/**
 * The soak's arithmetic and pictures, without I/O: least-squares slopes, flatness, the verdict
 * of each goal and one SVG line chart per series.
 */
import { round } from './stats';

/** One reading of one process. */
export interface ProcessSample {
  /** Resident set, bytes. */
  rssBytes?: number;
  /** V8 heap used, bytes (Node processes only). */
  heapUsedBytes?: number;
  /**
   * V8 heap committed (used, garbage and free pages it keeps), bytes. With heap used and
   * external memory it tells where an RSS that grows while the heap used does not has gone.
   */
  heapTotalBytes?: number;
  /**
   * V8's committed size of each heap space (new, old, code, large_object, …), bytes: where in
   * the heap committed a step after a storm of reconnects is.
   */
  heapSpacesBytes?: Record<string, number>;
  /** Memory of ArrayBuffers and other objects outside the heap that V8 knows of, bytes. */
  externalBytes?: number;
  /** p99 of the event-loop delay over the 10 s since the previous reading, ms. */
  lagP99Ms?: number;
  /**
   * The longest event-loop delay over the same 10 s, ms: one pause (a full collection, a long
   * task), which a p99 of the window's thousand or so readings does not show.
   */
  lagMaxMs?: number;
  /**
   * When the process started, seconds since the soak started (negative: before it). A service
   * started again (the soak's SIGKILL of a syncer) is a new process with a warm-up of its own.
   */
  startedAtT?: number;
}

/** BullMQ's counts of one queue. */
export interface QueueCounts {
  waiting: number;
  prioritized: number;
  delayed: number;
  active: number;
  completed: number;
  failed: number;
}

/** Everything read at one moment of the soak; a part that could not be read is absent. */
export interface SoakSample {
  /** Seconds since the soak started. */
  t: number;
  /** The machine's 1-minute load average. */
  load: number;
  processes: Record<string, ProcessSample>;
  /**
   * Redis's used_memory with its dataset and its normal clients' buffers, its key count, and of
   * those the keys without a TTL (a key with one cannot outlive it, e.g. the API's rate-limit
   * counters: only the others can pile up).
   */
  redis?: {
    usedMemoryBytes: number;
    datasetBytes?: number;
    clientsBytes?: number;
    keys: number;
    persistentKeys?: number;
    /**
     * When this Redis started, seconds since the soak started: one restarted from its
     * append-only file loads a compact dataset and regrows it, so its memory is judged after its
     * own warm-up, as a service's RSS is.
     */
    startedAtT?: number;
  };
  queues?: Record<string, QueueCounts>;
  /** Registered plugins (node, driver) whose last sync outcome is not `synced`. */
  notSynced?: number;
  /** Registered plugins (node, driver). */
  plugins?: number;
}

/** Something the soak did to the system, and when. */
export interface SoakEvent {
  t: number;
  what: string;
}

/**
 * The least-squares line through the points: its slope per unit of x and the slope's standard
 * error, how far the slope of a series as noisy as this one strays by chance (the API's RSS,
 * sawing by ±8 MiB around its line, gave 2 MiB/h over 50 minutes; readings that follow each
 * other, as a sawtooth's do, stray further). NaN under three points, or when every x is the same.
 */
export function leastSquaresFit(points: readonly (readonly [number, number])[]): {
  slope: number;
  standardError: number;
} {
  const n = points.length;
  if (n < 3) return { slope: Number.NaN, standardError: Number.NaN };
  let sx = 0;
  let sy = 0;
  for (const [x, y] of points) {
    sx += x;
    sy += y;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  if (sxx === 0) return { slope: Number.NaN, standardError: Number.NaN };
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  let residuals = 0;
  for (const [x, y] of points) residuals += (y - intercept - slope * x) ** 2;
  return { slope, standardError: Math.sqrt(residuals / (n - 2) / sxx) };
}

/**
 * The least reading in each interval between two events (and before the first, after the
 * last): what the series comes back to once a restart's or a fault's in-flight work is done.
 */
export function baselines(
  readings: readonly { t: number; value: number }[],
  events: readonly SoakEvent[],
): number[] {
  const cuts = events.map((e) => e.t).sort((a, b) => a - b);
  const least = new Map<number, number>();
  for (const { t, value } of readings) {
    const interval = cuts.filter((cut) => cut <= t).length;
    least.set(interval, Math.min(value, least.get(interval) ?? Number.POSITIVE_INFINITY));
  }
  return [...least.entries()].sort(([a], [b]) => a - b).map(([, value]) => value);
}

/** Largest relative distance of a value from the median of the values; NaN for none. */
export function spreadAroundMedian(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[mid] ?? 0)
      : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  if (median === 0) return values.every((v) => v === 0) ? 0 : Number.POSITIVE_INFINITY;
  return Math.max(...values.map((v) => Math.abs(v - median) / median));
}

/** The soak's goals, as the issue states them. */
export interface SoakGoals {
  /** Samples before this are not judged (start-up, caches filling), s. @defaultValue 600 */
  warmupSeconds: number;
  /** Highest RSS slope of any process after the warm-up, MiB per hour. */
  rssSlopeMiBPerHour: number;
  /**
   * Largest spread of Redis memory and key counts around their median, a fraction: of their
   * baselines, the least reading between two events (restarts, faults). A restart's in-flight
   * jobs and counters come and go within it; growth raises the baselines.
   */
  redisSpread: number;
  /** Largest p99 event-loop delay of any process in any 10 s window, ms. */
  lagP99Ms: number;
  /** Configured most jobs kept in the completed and failed sets, per queue. */
  queueBounds: Record<string, { completed: number; failed: number }>;
}

/** The keys once the churn stopped and they had time to settle. */
export interface KeysAtEnd {
  keys: number;
  /** Keys whose slices carry the last inventory their driver sent. */
  carryingLast: number;
  /** Plugins the registration API reports not `synced`; absent if it could not be read. */
  notSynced?: number;
}

/** A goal with what was measured and whether it was met. */
export interface SoakVerdict {
  goal: string;
  actual: string;
  met: boolean;
}

const MIB = 1024 * 1024;

/** Every process named in any sample, sorted. */
export function processNames(samples: readonly SoakSample[]): string[] {
  return [...new Set(samples.flatMap((s) => Object.keys(s.processes)))].sort();
}

/** The RSS line of one process (one start of a service) over the part of it that is judged. */
export interface RssFit {
  name: string;
  /** When it started, seconds since the soak started; absent for a process never seen to start. */
  startedAtT?: number;
  /** Its first and last reading judged, seconds since the soak started. */
  from: number;
  to: number;
  readings: number;
  /** MiB per hour, with its standard error; NaN under three readings. */
  slope: number;
  standardError: number;
}

/** The judged readings of one process (one start of a service). */
interface JudgedProcess {
  name: string;
  startedAtT?: number;
  /** When its judged part begins, seconds since the soak started. */
  judgedFrom: number;
  readings: { t: number; reading: ProcessSample }[];
}

/**
 * The readings of every process that are judged: per service, and per start of it where a
 * service was started again. Each process is judged after the warm-up of the run and after its
 * own first `warmupSeconds`, as the goal reads ("after the first 10 minutes"): a syncer the soak
 * SIGKILLed and started again at 27 minutes is judged from 37, not on its start-up beside its
 * predecessor's last readings.
 */
function judgedProcesses(samples: readonly SoakSample[], warmupSeconds: number): JudgedProcess[] {
  const judged: JudgedProcess[] = [];
  for (const name of processNames(samples)) {
    const starts = new Map<number | undefined, { t: number; reading: ProcessSample }[]>();
    for (const s of samples) {
      const reading = s.processes[name];
      if (reading?.rssBytes === undefined) continue;
      const startedAtT =
        reading.startedAtT === undefined ? undefined : Math.round(reading.startedAtT);
      const readings = starts.get(startedAtT) ?? [];
      readings.push({ t: s.t, reading });
      starts.set(startedAtT, readings);
    }
    for (const [startedAtT, all] of starts) {
      const judgedFrom = Math.max(warmupSeconds, (startedAtT ?? 0) + warmupSeconds);
      judged.push({
        name,
        ...(startedAtT === undefined ? {} : { startedAtT }),
        judgedFrom,
        readings: all.filter(({ t }) => t >= judgedFrom),
      });
    }
  }
  return judged;
}

/** One RSS line per process over the part of it that is judged ({@link judgedProcesses}). */
export function rssFits(samples: readonly SoakSample[], warmupSeconds: number): RssFit[] {
  return judgedProcesses(samples, warmupSeconds).map(
    ({ name, startedAtT, judgedFrom, readings }) => {
      const fit = leastSquaresFit(
        readings.map(({ t, reading }) => [t / 3600, (reading.rssBytes ?? 0) / MIB]),
      );
      return {
        name,
        ...(startedAtT === undefined ? {} : { startedAtT }),
        from: readings[0]?.t ?? judgedFrom,
        to: readings.at(-1)?.t ?? judgedFrom,
        readings: readings.length,
        slope: round(fit.slope, 2),
        standardError: round(fit.standardError, 2),
      };
    },
  );
}

/** Where one Node process's memory went: its means over two windows of its judged part, MiB. */
export interface MemoryGrowth {
  name: string;
  startedAtT?: number;
  /** The windows: the first `windowSeconds` judged and the last, seconds since the soak started. */
  first: readonly [number, number];
  last: readonly [number, number];
  /**
   * RSS, V8's heap committed and used, memory outside V8's heap (RSS less heap committed: the
   * allocator's, files mapped, stacks, V8's mappings beyond its spaces), and the heap committed
   * per V8 space; each the mean over the first window and over the last (NaN where no reading of
   * a window has the part).
   */
  parts: Record<string, { first: number; last: number }>;
}

/**
 * Per Node process, its memory over the first `windowSeconds` of its judged part against the last
 * `windowSeconds` (5 minutes by default): which part of a rising RSS rose (V8's old space, its
 * code space, or memory outside the heap), for the soak's table beside its verdicts.
 */
export function memoryGrowth(
  samples: readonly SoakSample[],
  warmupSeconds: number,
  windowSeconds = 300,
): MemoryGrowth[] {
  const growth: MemoryGrowth[] = [];
  for (const { name, startedAtT, readings } of judgedProcesses(samples, warmupSeconds)) {
    const withHeap = readings.filter(({ reading }) => reading.heapTotalBytes !== undefined);
    const start = withHeap[0]?.t;
    const end = withHeap.at(-1)?.t;
    if (start === undefined || end === undefined || end - start < 2 * windowSeconds) continue;
    const first = withHeap.filter(({ t }) => t < start + windowSeconds).map((r) => r.reading);
    const last = withHeap.filter(({ t }) => t > end - windowSeconds).map((r) => r.reading);
    // Over the readings that have the part: a reading without a space is not a space at zero.
    const mean = (window: ProcessSample[], part: (p: ProcessSample) => number | undefined) => {
      const values = window.map(part).filter((v): v is number => v !== undefined);
      return values.length === 0
        ? Number.NaN
        : round(values.reduce((sum, v) => sum + v, 0) / values.length / MIB, 1);
    };
    const parts: MemoryGrowth['parts'] = {};
    const add = (label: string, part: (p: ProcessSample) => number | undefined) => {
      parts[label] = { first: mean(first, part), last: mean(last, part) };
    };
    add('RSS', (p) => p.rssBytes);
    add('heap committed', (p) => p.heapTotalBytes);
    add('heap used', (p) => p.heapUsedBytes);
    add('outside the heap', (p) =>
      p.rssBytes === undefined || p.heapTotalBytes === undefined
        ? undefined
        : p.rssBytes - p.heapTotalBytes,
    );
    // The spaces V8 committed anything to (most of its 13 stay empty in a service).
    const spaces = new Set(
      withHeap.flatMap(({ reading }) =>
        Object.entries(reading.heapSpacesBytes ?? {})
          .filter(([, bytes]) => bytes > 0)
          .map(([space]) => space),
      ),
    );
    for (const space of [...spaces].sort())
      add(`${space} space`, (p) => p.heapSpacesBytes?.[space]);
    growth.push({
      name,
      ...(startedAtT === undefined ? {} : { startedAtT }),
      first: [start, start + windowSeconds],
      last: [end - windowSeconds, end],
      parts,
    });
  }
  return growth;
}

/**
 * {@link rssFits}' slopes, MiB per hour, by process: a service's name, and for each later start
 * of it `<name> started at <m> min`.
 */
export function rssSlopes(
  samples: readonly SoakSample[],
  warmupSeconds: number,
): Record<string, number> {
  const slopes: Record<string, number> = {};
  for (const fit of rssFits(samples, warmupSeconds)) {
    const started = startedDuringRun(fit);
    slopes[started === undefined ? fit.name : `${fit.name} started at ${minutes(started)} min`] =
      fit.slope;
  }
  return slopes;
}

/** When a process started again during the run, seconds; undefined for one that ran from the start. */
function startedDuringRun(process: { startedAtT?: number }): number | undefined {
  return process.startedAtT !== undefined && process.startedAtT > 0
    ? process.startedAtT
    : undefined;
}

/** Seconds as minutes with one decimal. */
function minutes(seconds: number): number {
  return round(seconds / 60, 1);
}

/** The highest of a reading across samples, and when it was taken; none without readings. */
function worstReading(
  samples: readonly SoakSample[],
  read: (sample: SoakSample) => number | undefined,
): { value: number; t: number } | undefined {
  let worst: { value: number; t: number } | undefined;
  for (const s of samples) {
    const value = read(s);
    if (value !== undefined && (worst === undefined || value > worst.value)) {
      worst = { value, t: s.t };
    }
  }
  return worst;
}

/**
 * One verdict per goal. `keysAtEnd` is the final check (every key `synced` with its last
 * inventory); `judged` names the processes held to the RSS and lag goals (slicekeeper's own).
 */
export function soakVerdicts(
  samples: readonly SoakSample[],
  goals: SoakGoals,
  judged: readonly string[],
  keysAtEnd: KeysAtEnd,
  events: readonly SoakEvent[],
): SoakVerdict[] {
  const after = samples.filter((s) => s.t >= goals.warmupSeconds);
  const window = `${after.length} samples after ${round(goals.warmupSeconds / 60, 1)} min`;
  const verdicts: SoakVerdict[] = [];
  const fits = rssFits(samples, goals.warmupSeconds);
  for (const name of judged) {
    const own = fits.filter((fit) => fit.name === name);
    const judgedFits = own.filter((fit) => fit.readings >= 3);
    const parts = own.map((fit) => {
      const startedAt = startedDuringRun(fit);
      const started =
        startedAt === undefined ? '' : `the process started at ${minutes(startedAt)} min: `;
      return fit.readings < 3
        ? `${started}too few samples after its warm-up to judge (${fit.readings})`
        : `${started}${fit.slope} ± ${fit.standardError} MiB/h, the slope ± its standard error (${fit.readings} samples, ${minutes(fit.from)}–${minutes(fit.to)} min)`;
    });
    verdicts.push({
      goal: `${name} RSS slope ≤ ${goals.rssSlopeMiBPerHour} MiB/h`,
      actual: parts.length === 0 ? `no readings (${window})` : parts.join('; '),
      // A shrinking process meets the goal. One started again too late for three readings after
      // its own warm-up is reported, not judged; a service with no process judged does not meet it.
      met:
        judgedFits.length > 0 && judgedFits.every((fit) => fit.slope <= goals.rssSlopeMiBPerHour),
    });
  }
  const redisReadings = (
    read: (redis: NonNullable<SoakSample['redis']>) => number | undefined,
    ofProcess = false,
  ) =>
    after.flatMap((s) => {
      const value = s.redis === undefined ? undefined : read(s.redis);
      // The process's own memory, not the keys it holds, waits for its own warm-up.
      const warm = !ofProcess || s.t >= (s.redis?.startedAtT ?? 0) + goals.warmupSeconds;
      return value === undefined || !warm ? [] : [{ t: s.t, value }];
    });
  // Minutes: Redis's start is read from its uptime, a second off from one reading to the next.
  const redisStarts = [
    ...new Set(
      after.flatMap((s) => {
        const started = s.redis === undefined ? undefined : startedDuringRun(s.redis);
        return started === undefined ? [] : [minutes(started)];
      }),
    ),
  ];
  const memoryReadings = redisReadings((r) => r.usedMemoryBytes, true);
  const memoryWindow =
    redisStarts.length === 0
      ? window
      : `${memoryReadings.length} samples after ${round(goals.warmupSeconds / 60, 1)} min, and after ${round(goals.warmupSeconds / 60, 1)} min of Redis started again at ${redisStarts.join(', ')} min`;
  for (const [what, readings, unit, of] of [
    ['Redis used_memory', memoryReadings, (v: number) => `${round(v / MIB, 1)} MiB`, memoryWindow],
    ['Redis key count', redisReadings((r) => r.keys), (v: number) => String(v), window],
    [
      'Redis keys without a TTL',
      redisReadings((r) => r.persistentKeys),
      (v: number) => String(v),
      window,
    ],
  ] as const) {
    const values = readings.map((r) => r.value);
    const floors = baselines(readings, events);
    const spread = spreadAroundMedian(floors);
    const range = (of: readonly number[]) => `${unit(Math.min(...of))}–${unit(Math.max(...of))}`;
    verdicts.push({
      goal: `${what} flat (baselines between events ± ${round(goals.redisSpread * 100, 0)} % of their median)`,
      actual:
        values.length === 0
          ? 'no readings'
          : `baselines ${range(floors)}, ± ${round(spread * 100, 1)} % (${floors.length} intervals); every sample ${range(values)}, ± ${round(spreadAroundMedian(values) * 100, 1)} % (${of})`,
      met: floors.length > 0 && spread <= goals.redisSpread,
    });
  }
  for (const [queue, bound] of Object.entries(goals.queueBounds)) {
    const counts = samples.flatMap((s) => {
      const c = s.queues?.[queue];
      return c === undefined ? [] : [c];
    });
    const completed = Math.max(0, ...counts.map((c) => c.completed));
    const failed = Math.max(0, ...counts.map((c) => c.failed));
    verdicts.push({
      goal: `${queue}: completed ≤ ${bound.completed}, failed ≤ ${bound.failed}`,
      actual: `at most ${completed} completed, ${failed} failed (${counts.length} samples)`,
      met: counts.length > 0 && completed <= bound.completed && failed <= bound.failed,
    });
  }
  verdicts.push({
    goal: 'every key synced at the end',
    actual: `${keysAtEnd.carryingLast} of ${keysAtEnd.keys} carry their last inventory, ${keysAtEnd.notSynced ?? 'unknown'} not synced`,
    met: keysAtEnd.carryingLast === keysAtEnd.keys && keysAtEnd.notSynced === 0,
  });
  for (const name of judged) {
    const worst = worstReading(after, (s) => s.processes[name]?.lagP99Ms);
    const longest = worstReading(after, (s) => s.processes[name]?.lagMaxMs);
    const pause =
      longest === undefined
        ? ''
        : `; its longest single delay ${round(longest.value, 1)} ms at ${minutes(longest.t)} min`;
    verdicts.push({
      goal: `${name} event-loop lag p99 ≤ ${goals.lagP99Ms} ms in every 10 s window`,
      actual:
        worst === undefined
          ? 'no readings'
          : `worst ${round(worst.value, 1)} ms at ${minutes(worst.t)} min (${window})${pause}`,
      met: worst !== undefined && worst.value <= goals.lagP99Ms,
    });
  }
  return verdicts;
}

/** One line of a chart: its name and its points (x seconds, y in the chart's unit). */
export interface ChartLine {
  name: string;
  points: readonly (readonly [number, number])[];
}

const COLOURS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A tick step of 1, 2 or 5 × a power of ten giving about `count` ticks over `span`. */
function tickStep(span: number, count: number): number {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const [step = 1] = [1, 2, 5, 10].filter((m) => m * power >= raw);
  return step * power;
}

/**
 * Where each Node process's memory went, a row per part (RSS, heap committed, each V8 space,
 * outside the heap): its mean over the first 5 judged minutes and over the last 5, MiB.
 */
export function memoryGrowthLines(growth: readonly MemoryGrowth[]): string[] {
  if (growth.length === 0) return [];
  const label = (g: MemoryGrowth) =>
    `${g.name}${g.startedAtT !== undefined && g.startedAtT > 0 ? ` (started at ${round(g.startedAtT / 60, 1)} min)` : ''}, ${round(g.first[0] / 60, 1)}–${round(g.first[1] / 60, 1)} → ${round(g.last[0] / 60, 1)}–${round(g.last[1] / 60, 1)} min`;
  const parts = [...new Set(growth.flatMap((g) => Object.keys(g.parts)))];
  return [
    "Where the memory went: each part's mean over a process's first 5 judged minutes → its last 5, MiB",
    '',
    `| part | ${growth.map(label).join(' | ')} |`,
    `| --- | ${growth.map(() => '---').join(' | ')} |`,
    ...parts.map(
      (part) =>
        `| ${part} | ${growth
          .map((g) => {
            const p = g.parts[part];
            if (p === undefined) return '';
            if (Number.isNaN(p.first) || Number.isNaN(p.last)) return `${p.first} → ${p.last}`;
            const change = round(p.last - p.first, 1);
            return `${p.first} → ${p.last} (${change >= 0 ? '+' : ''}${change})`;
          })
          .join(' | ')} |`,
    ),
    '',
  ];
}

/**
 * A line chart as SVG: x in minutes, one line per series, the soak's events as dashed
 * vertical lines, the warm-up shaded.
 */
export function lineChartSvg(options: {
  title: string;
  unit: string;
  lines: readonly ChartLine[];
  events: readonly SoakEvent[];
  warmupSeconds: number;
}): string {
  const width = 900;
  const height = 420;
  const left = 70;
  const right = 200;
  const top = 40;
  const bottom = 50;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const all = options.lines.flatMap((l) => l.points);
  const maxT = Math.max(60, ...all.map(([t]) => t));
  const ys = all.map(([, y]) => y);
  let minY = Math.min(0, ...ys);
  let maxY = Math.max(...ys, minY + 1e-9);
  if (maxY === minY) maxY = minY + 1;
  const yStep = tickStep(maxY - minY, 5);
  minY = Math.floor(minY / yStep) * yStep;
  maxY = Math.ceil(maxY / yStep) * yStep;
  const x = (t: number): number => left + (t / maxT) * plotW;
  const y = (v: number): number => top + plotH - ((v - minY) / (maxY - minY)) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${left}" y="22" font-size="15">${escapeXml(options.title)} (${escapeXml(options.unit)})</text>`,
    `<rect x="${x(0)}" y="${top}" width="${x(Math.min(options.warmupSeconds, maxT)) - x(0)}" height="${plotH}" fill="#f0f0f0"/>`,
  ];
  for (let v = minY; v <= maxY + yStep / 2; v += yStep) {
    parts.push(
      `<line x1="${left}" x2="${left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${round(v, 3)}</text>`,
    );
  }
  const tStep = tickStep(maxT / 60, 8) * 60;
  for (let t = 0; t <= maxT; t += tStep) {
    parts.push(
      `<line x1="${x(t)}" x2="${x(t)}" y1="${top + plotH}" y2="${top + plotH + 5}" stroke="#333"/>`,
      `<text x="${x(t)}" y="${top + plotH + 18}" text-anchor="middle">${round(t / 60, 1)}</text>`,
    );
  }
  parts.push(
    `<text x="${left + plotW / 2}" y="${height - 10}" text-anchor="middle">minutes</text>`,
    `<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
  );
  options.events.forEach((event, i) => {
    parts.push(
      `<line x1="${x(event.t)}" x2="${x(event.t)}" y1="${top}" y2="${top + plotH}" stroke="#999" stroke-dasharray="4 3"/>`,
      `<text x="${x(event.t) + 3}" y="${top + 12 + (i % 4) * 12}" font-size="10" fill="#666">${escapeXml(event.what)}</text>`,
    );
  });
  options.lines.forEach((line, i) => {
    const colour = COLOURS[i % COLOURS.length] ?? '#000';
    const path = line.points
      .map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${round(x(t), 1)},${round(y(v), 1)}`)
      .join(' ');
    if (path !== '') {
      parts.push(`<path d="${path}" fill="none" stroke="${colour}" stroke-width="1.5"/>`);
    }
    const ly = top + 10 + i * 16;
    parts.push(
      `<line x1="${left + plotW + 10}" x2="${left + plotW + 30}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${left + plotW + 35}" y="${ly + 4}">${escapeXml(line.name)}</text>`,
    );
  });
  parts.push('</svg>\n');
  return parts.join('\n');
}

/** A chart of the soak: its file name's suffix and its SVG. */
export interface SoakChart {
  series: string;
  svg: string;
}

/** One chart per series the soak samples. */
export function soakCharts(
  samples: readonly SoakSample[],
  events: readonly SoakEvent[],
  warmupSeconds: number,
): SoakChart[] {
  const names = processNames(samples);
  const perProcess = (pick: (p: ProcessSample) => number | undefined): ChartLine[] =>
    names
      .map((name) => ({
        name,
        points: samples.flatMap((s) => {
          const p = s.processes[name];
          const v = p === undefined ? undefined : pick(p);
          return v === undefined ? [] : [[s.t, v] as const];
        }),
      }))
      .filter((l) => l.points.length > 0);
  const one = (name: string, pick: (s: SoakSample) => number | undefined): ChartLine => ({
    name,
    points: samples.flatMap((s) => {
      const v = pick(s);
      return v === undefined ? [] : [[s.t, v] as const];
    }),
  });
  const queueNames = [...new Set(samples.flatMap((s) => Object.keys(s.queues ?? {})))].sort();
  const queueLines = (states: readonly (keyof QueueCounts)[]): ChartLine[] =>
    queueNames.flatMap((q) =>
      states.map((state) => one(`${q} ${state}`, (s) => s.queues?.[q]?.[state])),
    );
  const chart = (series: string, title: string, unit: string, lines: ChartLine[]): SoakChart => ({
    series,
    svg: lineChartSvg({ title, unit, lines, events, warmupSeconds }),
  });
  return [
    chart(
      'rss',
      'RSS per process',
      'MiB',
      perProcess((p) => mib(p.rssBytes)),
    ),
    chart(
      'heap',
      'V8 heap used per process',
      'MiB',
      perProcess((p) => mib(p.heapUsedBytes)),
    ),
    chart(
      'heap-total',
      'V8 heap committed per process',
      'MiB',
      perProcess((p) => mib(p.heapTotalBytes)),
    ),
    chart(
      'external',
      'External memory (buffers) per process',
      'MiB',
      perProcess((p) => mib(p.externalBytes)),
    ),
    chart(
      'lag',
      'Event-loop delay p99 per 10 s',
      'ms',
      perProcess((p) => p.lagP99Ms),
    ),
    chart(
      'lag-max',
      'Longest event-loop delay per 10 s',
      'ms',
      perProcess((p) => p.lagMaxMs),
    ),
    chart('redis-memory', 'Redis used_memory, its dataset and its clients’ buffers', 'MiB', [
      one('used_memory', (s) => mib(s.redis?.usedMemoryBytes)),
      one('dataset', (s) => mib(s.redis?.datasetBytes)),
      one('clients', (s) => mib(s.redis?.clientsBytes)),
    ]),
    chart('redis-keys', 'Redis keys', 'keys', [
      one('dbsize', (s) => s.redis?.keys),
      one('without a TTL', (s) => s.redis?.persistentKeys),
    ]),
    chart(
      'queue-backlog',
      'BullMQ waiting + prioritized + delayed, active',
      'jobs',
      queueLines(['waiting', 'prioritized', 'delayed', 'active']),
    ),
    chart(
      'queue-kept',
      'BullMQ completed and failed sets',
      'jobs',
      queueLines(['completed', 'failed']),
    ),
    chart('not-synced', 'Plugins whose last outcome is not synced', 'keys', [
      one('not synced', (s) => s.notSynced),
    ]),
    chart('load', 'Load average (1 min)', 'load', [one('load', (s) => s.load)]),
  ];
}

function mib(bytes: number | undefined): number | undefined {
  return bytes === undefined ? undefined : round(bytes / MIB, 2);
}
