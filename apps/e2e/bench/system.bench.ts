/**
 * npm run bench — the whole system, each service its own process (the e2e harness's System):
 *
 * 1. the floor, measured in the same run against the same Redis and emulator process: a bare
 *    BullMQ round trip and a bare ResourceSlice write;
 * 2. end-to-end latency, driver sends → slice seen through a watch, at 100 and 1,000 changes/s
 *    over 100 in-process drivers, one syncer replica, each rate after 2 s of unmeasured warm-up
 *    at that rate (as the floor's first rounds are unmeasured);
 * 3. cold publish, warm resync (a forced resync of every key) and 10% churn of BENCH_KEYS keys
 *    (nodes × 2 drivers × 8 devices) with each replica count of BENCH_REPLICAS, a fresh System
 *    each, and Redis memory per key;
 * 4. in the 1-replica System, once churned: BENCH_DELETES managed slices deleted one at a time
 *    behind slicekeeper's back, each timed until its pool is back; then the syncer's memory with
 *    its caches holding every slice and Node against the same syncer idle in the empty cluster;
 * 5. the plugin-watcher's memory per stream over BENCH_STREAMS in-process drivers;
 * 6. sync priorities under a backlog, a fresh System with one syncer at its default write rate
 *    and concurrency: while a cold publish of BENCH_PRIORITY_KEYS keys (reason `snapshot`)
 *    drains, BENCH_PRIORITY_PROBES driver losses and as many new nodes' first publishes, each
 *    timed from its enqueue until a watch shows the taint or the new slice.
 *
 * API reads (list/get of resourceslices and nodes; watch requests are not reads) are counted in
 * every phase from the emulator's request counters.
 *
 * Progress goes to stderr, markdown tables to stdout, every figure to bench/results/<date>.json.
 * Environment: BENCH_KEYS (10000), BENCH_REPLICAS ("1,2,4", must include 1), BENCH_SECONDS per
 * latency rate (10), BENCH_DELETES (100), BENCH_STREAMS (1000), BENCH_WATCHER_NODE_OPTIONS (runtime
 * flags for the watcher of part 5; none), BENCH_PRIORITY_KEYS (10000),
 * BENCH_PRIORITY_PROBES (40 of each kind); BENCH_ONLY=priorities runs part 6 alone and writes
 * bench/results/<date>-priorities.json, BENCH_ONLY=watcher-memory part 5 alone and writes
 * bench/results/<date>-watcher-memory.json, BENCH_ONLY=syncer-memory part 3 with one replica run
 * compiled in a memory cgroup with its pod's limit (bench/results/<date>-syncer-memory.json),
 * BENCH_ONLY=cpu parts 1 and 3 with one syncer
 * replica (CPU per change, per key published and per key resynced, beside the floor's CPU per
 * round trip) and writes bench/results/<date>-cpu.json; with BENCH_TRACING=on it runs parts 1 and
 * 2 a second time in a fresh System whose services (OTEL_* settings, always_on sampling) export
 * every span to an OTLP/HTTP sink in the bench process, which counts and drops them, and prints
 * slicekeeper's CPU per change with tracing off and on beside the floor, and spans per change
 * (bench/results/<date>-cpu-tracing.json). BENCH_CPU_PROF=<dir> runs the watcher,
 * the syncers and the API with `--cpu-prof` into that directory (profiles are written when a
 * service exits; profiling costs CPU, so its run's CPU figures are not the bench's), and records
 * the latency rates' windows beside them for `cpu-profile-summary.ts --phase`. The CPU modes
 * run the services compiled, as the images run them; BENCH_SERVICES=sources runs them from their
 * TypeScript sources through tsx instead.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { keyId } from '@slicekeeper/contracts';
import { freePort } from '@slicekeeper/testing';
import { OtlpReceiver } from '@slicekeeper/testing';
import { gpuInventory, inParallel, ProductionTree } from '../src/harness';
import type { InProcessDriver } from '../src/harness';
import {
  cpuGoals,
  cpuPerUnitRows,
  pacedFloorLine,
  cpuPerUnitTable,
  tracingCostRows,
  tracingCostTable,
} from './cpu-per-change';
import type { TracingRun } from './cpu-per-change';
import { measureFloor } from './floor';
import type { FloorResult } from './floor';
import { SliceWatch, measureLatency } from './latency';
import type { LatencyResult } from './latency';
import { measurePriorities } from './priorities';
import type { PrioritiesResult } from './priorities';
import { measureRepair } from './repair';
import type { RepairResult } from './repair';
import {
  apiReadRows,
  evaluateGoals,
  goalsTable,
  heading,
  machineInfo,
  markdown,
  prioritiesMarkdown,
  priorityGoal,
  readsLine,
  watcherMemoryGoal,
  watcherMemoryMarkdown,
  writeResults,
  syncerMemoryTable,
} from './report';
import type {
  BenchResults,
  CpuBenchResults,
  PrioritiesBenchResults,
  TracingCpuBenchResults,
  WatcherMemoryBenchResults,
} from './report';
import { podCgroups, SYNCER_POD } from './pod-limits';
import { round } from './stats';
import { runSyncThroughput } from './sync-throughput';
import type { SyncRunOptions, SyncRunResult } from './sync-throughput';
import { measureLoadedSyncer, readSyncerMemory } from './syncer-memory';
import type { MemoryReading, SyncerMemoryResult } from './syncer-memory';
import { recordProfilePhases } from './profile-phases';
import { closeSystemsOnSignal, cpuProfileFlags, progress, withSystem } from './support';
import { measureWatcherMemory } from './watcher-memory';

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

const KEYS = positiveInt('BENCH_KEYS', 10_000);
const SECONDS = positiveInt('BENCH_SECONDS', 10);
const STREAMS = positiveInt('BENCH_STREAMS', 1000);
const DELETES = positiveInt('BENCH_DELETES', 100);
const REPLICAS = (process.env.BENCH_REPLICAS ?? '1,2,4').split(',').map((r) => {
  const value = Number(r.trim());
  if (!Number.isInteger(value) || value <= 0) throw new Error('BENCH_REPLICAS: e.g. "1,2,4"');
  return value;
});
if (!REPLICAS.includes(1)) throw new Error('BENCH_REPLICAS must include 1 (repair and memory)');
const PRIORITY_KEYS = positiveInt('BENCH_PRIORITY_KEYS', 10_000);
const PRIORITY_PROBES = positiveInt('BENCH_PRIORITY_PROBES', 40);
const ONLY = process.env.BENCH_ONLY ?? '';
const ONLY_MODES = ['', 'priorities', 'watcher-memory', 'syncer-memory', 'cpu'];
if (!ONLY_MODES.includes(ONLY)) {
  throw new Error('BENCH_ONLY: "priorities", "watcher-memory", "syncer-memory", "cpu" or unset');
}
const TRACING = process.env.BENCH_TRACING ?? 'off';
if (TRACING !== 'off' && TRACING !== 'on') throw new Error('BENCH_TRACING: "on", "off" or unset');
if (TRACING === 'on' && ONLY !== 'cpu')
  throw new Error('BENCH_TRACING=on runs with BENCH_ONLY=cpu');
const SERVICES = process.env.BENCH_SERVICES ?? 'compiled';
if (SERVICES !== 'compiled' && SERVICES !== 'sources') {
  throw new Error('BENCH_SERVICES: "compiled", "sources" or unset');
}
if (process.env.BENCH_SERVICES !== undefined && ONLY !== 'cpu') {
  throw new Error('BENCH_SERVICES runs with BENCH_ONLY=cpu');
}
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ?? '';
/** Settings that have a service write a CPU profile on exit (BENCH_CPU_PROF), or none. */
const PROFILING: Record<string, string> =
  CPU_PROF_DIR === '' ? {} : { NODE_OPTIONS: cpuProfileFlags(CPU_PROF_DIR) };
/** Sync jobs per syncer replica at once, in every phase. */
const CONCURRENCY = 16;
/** Drivers (keys, one per node) of the latency phases. */
const LATENCY_DRIVERS = 100;
const LATENCY_RATES = [100, 1000];
const FLOOR_SAMPLES = 500;
/**
 * The floor once more with its rounds paced as changes come at the first latency rate (10 ms
 * apart at 100 changes/s), so that the change's CPU can also be read against a floor that
 * pays what a lone round pays (a cold path, a wake-up), not only against rounds back to back.
 */
const PACED_FLOOR_SAMPLES = 300;
const FLOOR_PACE_MS = 1000 / (LATENCY_RATES[0] ?? 100);
const LATENCY_SYSTEM = 'bench-latency';

type Latency = LatencyResult & { ratioToFloor: number };

/**
 * Floor and end-to-end latency share one System: same Redis, same emulator process. With a
 * `sink`, every service traces every change (always_on) and exports its spans there.
 */
function floorAndLatency(
  production: ProductionTree | undefined,
  sink?: OtlpReceiver,
): Promise<{ floor: FloorResult; pacedFloor: FloorResult; latency: Latency[] }> {
  const nodes = Array.from({ length: LATENCY_DRIVERS }, (_, i) => `node-${i}`);
  progress(
    `latency system, tracing ${sink === undefined ? 'off' : 'on'}: load ${os
      .loadavg()
      .map((l) => round(l))
      .join(' ')}`,
  );
  return withSystem(
    {
      name: sink === undefined ? LATENCY_SYSTEM : `${LATENCY_SYSTEM}-traced`,
      nodes,
      ...(sink === undefined ? {} : { commonEnv: sink.otelEnv() }),
      syncerReplicas: 1,
      syncerEnv: {
        SYNC_CONCURRENCY: String(CONCURRENCY),
        SYNC_WRITE_RATE: '1000000',
        SYNC_WRITE_BURST: '1000000',
        RESYNC_INTERVAL: '1h',
        RELIST_INTERVAL: '1h',
        ...PROFILING,
      },
      watcherEnv: PROFILING,
      apiEnv: PROFILING,
      ...(production === undefined ? {} : { production }),
    },
    async (system) => {
      progress(`floor: ${FLOOR_SAMPLES} BullMQ round trips and ${FLOOR_SAMPLES} API writes…`);
      const floor = await measureFloor({
        redisUrl: system.redis.url,
        emulatorUrl: system.emulator.url,
        node: 'node-0',
        samples: FLOOR_SAMPLES,
      });
      progress(
        `floor: ${floor.floorMs} ms (BullMQ round trip p50 ${floor.queueRoundTrip.p50} ms + API write p50 ${floor.apiWrite.p50} ms); again with rounds ${FLOOR_PACE_MS} ms apart…`,
      );
      const pacedFloor = await measureFloor({
        redisUrl: system.redis.url,
        emulatorUrl: system.emulator.url,
        node: 'node-0',
        samples: PACED_FLOOR_SAMPLES,
        paceMs: FLOOR_PACE_MS,
      });
      progress(`latency: registering ${LATENCY_DRIVERS} in-process drivers…`);
      const drivers: InProcessDriver[] = [];
      await inParallel(nodes, 8, async (node) => {
        drivers.push(
          await system.inProcessDriver({
            node,
            driver: 'gpu.example.com',
            inventory: gpuInventory({ rev: 0 }),
          }),
        );
      });
      drivers.sort((a, b) => a.node.localeCompare(b.node, 'en', { numeric: true }));
      const ids = drivers.map((d) => keyId({ node: d.node, driver: d.driver }));
      const syncerMetrics = await system.syncerMetricsUrls();
      const watch = await SliceWatch.open(system.emulator.url);
      try {
        await system.until(
          `all ${LATENCY_DRIVERS} keys published`,
          () => ids.every((id) => watch.latest.get(id) === 0),
          120_000,
        );
        const revs = new Map<string, number>();
        const latency: Latency[] = [];
        for (const rate of LATENCY_RATES) {
          progress(`latency: ${rate} changes/s for ${SECONDS} s…`);
          const result = await measureLatency({
            emulator: system.emulator,
            watch,
            drivers,
            revs,
            rate,
            seconds: SECONDS,
            syncerMetrics,
            ...(sink === undefined ? {} : { spans: () => sink.countsByName() }),
          });
          const ratioToFloor = round(result.p50ms / floor.floorMs, 2);
          latency.push({ ...result, ratioToFloor });
          progress(
            `latency ${rate}/s: p50 ${result.p50ms} ms (${ratioToFloor} × floor ${floor.floorMs} ms), p99 ${result.p99ms} ms, API reads per change ${result.readsPerChange} (watch requests not counted), ${result.syncs} syncs run${result.spans === undefined ? '' : `, ${result.spans.perChange} spans per change`}; load ${os
              .loadavg()
              .map((l) => round(l))
              .join(' ')}`,
          );
        }
        if (CPU_PROF_DIR !== '') {
          const traced = sink === undefined ? '' : ', traced';
          await recordProfilePhases(
            CPU_PROF_DIR,
            Object.fromEntries(latency.map((l) => [`${l.rate} changes/s${traced}`, l.window])),
          );
        }
        return { floor, pacedFloor, latency };
      } finally {
        watch.close();
      }
    },
  );
}

/**
 * Cold, warm and churn with `replicas` syncers; with one, the repair and the syncer's memory
 * in the same System as well.
 */
async function syncRun(
  replicas: number,
  services: Pick<SyncRunOptions, 'production' | 'memoryCgroups'> = {},
): Promise<{
  run: SyncRunResult;
  repair?: RepairResult;
  memory?: SyncerMemoryResult;
}> {
  const label = `sync ×${replicas}`;
  if (replicas !== 1) {
    return {
      run: await runSyncThroughput({
        keys: KEYS,
        replicas,
        concurrency: CONCURRENCY,
        syncerEnv: PROFILING,
        apiEnv: PROFILING,
      }),
    };
  }
  // A fixed probe port: the memory readings find the syncer (and its /metrics) by it.
  const probePort = await freePort();
  let idle: MemoryReading | undefined;
  let repair: RepairResult | undefined;
  let memory: SyncerMemoryResult | undefined;
  const run = await runSyncThroughput({
    ...services,
    keys: KEYS,
    replicas,
    concurrency: CONCURRENCY,
    syncerEnv: { PROBE_PORT: String(probePort), ...PROFILING },
    apiEnv: PROFILING,
    beforeNodes: async (system) => {
      progress(`${label}: syncer memory, idle in an empty cluster…`);
      idle = await readSyncerMemory(system, probePort);
    },
    afterPhases: async (system, keys, syncerMetrics) => {
      progress(`${label}: external-delete repair, ${DELETES} slices one at a time…`);
      repair = await measureRepair({ system, keys, deletes: DELETES, syncerMetrics });
      progress(
        `${label}: repair p50 ${repair.p50ms} ms, p99 ${repair.p99ms} ms, ${repair.api.reads} API reads`,
      );
      if (idle === undefined) throw new Error('no idle reading');
      progress(`${label}: syncer memory, restarted with every slice and Node cached…`);
      memory = await measureLoadedSyncer({
        system,
        probePort,
        idle,
        nodes: Math.ceil(keys.length / 2),
      });
      progress(
        `${label}: cache memory per 1,000 slices: ${round(memory.rssBytesPer1000Slices / 1024, 1)} KiB RSS, ${round(memory.heapUsedBytesPer1000Slices / 1024, 1)} KiB heap`,
      );
    },
  });
  return { run, ...(repair ? { repair } : {}), ...(memory ? { memory } : {}) };
}

async function priorities(): Promise<PrioritiesResult> {
  progress(
    `priorities: fresh system, ${PRIORITY_KEYS}-key backlog, ${PRIORITY_PROBES} driver losses and ${PRIORITY_PROBES} first publishes…`,
  );
  return measurePriorities({ keys: PRIORITY_KEYS, probes: PRIORITY_PROBES });
}

/** `BENCH_ONLY=priorities`: part 6 alone, in a results file of its own. */
async function prioritiesOnly(): Promise<void> {
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  const result = await priorities();
  const results: PrioritiesBenchResults = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: { priorityKeys: PRIORITY_KEYS, priorityProbes: PRIORITY_PROBES },
    priorities: result,
    goals: [priorityGoal(result)],
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(results, '-priorities');
  process.stdout.write(prioritiesMarkdown(results));
  progress(`results written to ${path}`);
}

/** `BENCH_ONLY=watcher-memory`: part 5 alone, in a results file of its own. */
async function watcherMemoryOnly(): Promise<void> {
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  progress(`watcher memory: fresh system for ${STREAMS} streams…`);
  const watcherMemory = await measureWatcherMemory(STREAMS);
  const results: WatcherMemoryBenchResults = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: { streams: STREAMS },
    watcherMemory,
    goals: [watcherMemoryGoal(watcherMemory)],
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(results, '-watcher-memory');
  process.stdout.write(watcherMemoryMarkdown(results));
  progress(`results written to ${path}`);
}

/**
 * `BENCH_ONLY=syncer-memory`: part 3 with one replica, run as a pod runs it (compiled, in a memory
 * cgroup with slice-syncer's limit from its manifest); its cache memory in a results file of its
 * own. The whole bench's part 3 runs the syncer from its sources without a limit, whose heap V8
 * sizes from the whole machine.
 */
async function syncerMemoryOnly(): Promise<void> {
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  const production = await ProductionTree.prepare(progress);
  const pod = await podCgroups('bench-syncer-memory', { 'slice-syncer-1': SYNCER_POD });
  let memory: SyncerMemoryResult | undefined;
  try {
    ({ memory } = await syncRun(1, { production, memoryCgroups: pod.cgroups }));
  } finally {
    await production.close();
    await pod.close();
  }
  if (memory === undefined) throw new Error('the syncer memory was not measured');
  const results = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: { keys: KEYS, limits: pod.limits },
    syncerMemory: memory,
    goals: [],
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(results, '-syncer-memory');
  const limits =
    'bytes' in pod.limits
      ? `under its pod's memory limit (${SYNCER_POD.manifest}, ${pod.limits.enforcedBy})`
      : `WITHOUT its memory limit (${pod.limits.unconstrained})`;
  process.stdout.write(
    [
      ...heading(results, 'slice-syncer cache memory'),
      `The compiled syncer on Node ${process.version}, ${limits}.`,
      syncerMemoryTable(memory),
      '',
    ].join('\n\n'),
  );
  progress(`results written to ${path}`);
}

/**
 * `BENCH_ONLY=cpu`: the floor and the latency rates, then cold, warm and churn with one syncer
 * replica; CPU per change beside the floor's, in a results file of its own.
 */
async function cpuOnly(): Promise<void> {
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  progress(
    `cpu: ${KEYS} keys, one syncer replica, ${SECONDS} s per latency rate, load ${os
      .loadavg()
      .map((l) => round(l))
      .join(' ')}${CPU_PROF_DIR === '' ? '' : `, profiling into ${CPU_PROF_DIR}`}`,
  );
  const production = await cpuBenchServices();
  let floor: FloorResult;
  let pacedFloor: FloorResult;
  let latency: Latency[];
  let run: SyncRunResult;
  try {
    ({ floor, pacedFloor, latency } = await floorAndLatency(production));
    progress('sync: fresh system with 1 syncer replica…');
    run = await runSyncThroughput({
      keys: KEYS,
      replicas: 1,
      concurrency: CONCURRENCY,
      syncerEnv: PROFILING,
      apiEnv: PROFILING,
      // Each phase ends once the node conditions its syncs asked for are written: a cold
      // publish's condition writes are its own CPU, not the warm resync's that follows it.
      quietPolling: true,
      ...(production === undefined ? {} : { production }),
    });
  } finally {
    await production?.close();
  }
  if (CPU_PROF_DIR !== '') {
    await recordProfilePhases(CPU_PROF_DIR, {
      'cold publish ×1': run.cold.window,
      'warm resync ×1': run.warm.window,
      'churn ×1': run.churn.window,
    });
  }
  const cpuPerUnit = cpuPerUnitRows(floor, latency, [run], pacedFloor);
  const results: CpuBenchResults = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: {
      keys: KEYS,
      secondsPerRate: SECONDS,
      syncConcurrency: CONCURRENCY,
      latencyDrivers: LATENCY_DRIVERS,
      latencyRates: LATENCY_RATES,
      floorSamples: FLOOR_SAMPLES,
      pacedFloorSamples: PACED_FLOOR_SAMPLES,
      floorPaceMs: FLOOR_PACE_MS,
      profiled: CPU_PROF_DIR !== '',
      services: SERVICES,
    },
    floor,
    pacedFloor,
    latency,
    sync: [run],
    cpuPerUnit,
    goals: cpuGoals(cpuPerUnit),
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(results, CPU_PROF_DIR === '' ? '-cpu' : '-cpu-profiled');
  process.stdout.write(
    [
      ...heading(results, 'slicekeeper CPU per change'),
      servicesLine(),
      `floor ${floor.floorMs} ms; latency p50 ${latency.map((l) => `${l.rate}/s ${l.p50ms} ms`).join(', ')}; cold ${run.cold.seconds} s, warm ${run.warm.seconds} s for ${run.keys} keys`,
      '## CPU per unit, ms (own = watcher + syncer + API; on the floor rows, the bench as client)',
      cpuPerUnitTable(cpuPerUnit),
      pacedFloorLine(cpuPerUnit, pacedFloor),
      '## Goals',
      goalsTable(results.goals),
      '',
    ].join('\n\n'),
  );
  progress(`results written to ${path}`);
}

/**
 * `BENCH_ONLY=cpu BENCH_TRACING=on`: the floor and the latency rates with tracing off, then the
 * same in a fresh System with tracing on (every span exported to a counting sink); slicekeeper's
 * CPU per change off and on beside the floor, and spans per change, in a results file of its own.
 */
async function cpuTracing(): Promise<void> {
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  progress(
    `cpu with tracing off, then on: ${SECONDS} s per latency rate${CPU_PROF_DIR === '' ? '' : `, profiling into ${CPU_PROF_DIR}`}`,
  );
  const production = await cpuBenchServices();
  const sink = await OtlpReceiver.start({ keep: 'count' });
  let off: TracingRun;
  let on: TracingRun;
  try {
    const loadOff = os.loadavg().map((l) => round(l));
    off = { tracing: 'off', loadAverage: loadOff, ...(await floorAndLatency(production)) };
    const loadOn = os.loadavg().map((l) => round(l));
    on = { tracing: 'on', loadAverage: loadOn, ...(await floorAndLatency(production, sink)) };
  } finally {
    await sink.close();
    await production?.close();
  }
  progress(
    `tracing sink: ${sink.spanCount} spans in ${sink.requests.accepted} exports, ${sink.requests.rejected} refused`,
  );
  const cost = tracingCostRows(off, on);
  const results: TracingCpuBenchResults = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: {
      secondsPerRate: SECONDS,
      syncConcurrency: CONCURRENCY,
      latencyDrivers: LATENCY_DRIVERS,
      latencyRates: LATENCY_RATES,
      floorSamples: FLOOR_SAMPLES,
      tracing: sinkSettings(sink),
      profiled: CPU_PROF_DIR !== '',
      services: SERVICES,
    },
    off,
    on,
    cost,
    goals: [],
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(
    results,
    CPU_PROF_DIR === '' ? '-cpu-tracing' : '-cpu-tracing-profiled',
  );
  const spansAt = (rate: number): string => {
    const byName = on.latency.find((l) => l.rate === rate)?.spans?.perChangeByName ?? {};
    return Object.entries(byName)
      .map(([name, perChange]) => `${name} ${perChange}`)
      .join(', ');
  };
  process.stdout.write(
    [
      ...heading(results, 'slicekeeper CPU per change, tracing off and on'),
      servicesLine(),
      `load when each run's System started: off ${off.loadAverage.join(' ')}, on ${on.loadAverage.join(' ')}`,
      '## CPU per change, ms (own = watcher + syncer + API; floor: the bench as client per round trip)',
      tracingCostTable(cost),
      ...LATENCY_RATES.map((rate) => `spans per change at ${rate}/s: ${spansAt(rate)}`),
      '',
    ].join('\n\n'),
  );
  progress(`results written to ${path}`);
}

/**
 * The compiled services the CPU modes run, as the images run them (BENCH_SERVICES=sources: none,
 * the services run from their TypeScript sources through tsx).
 */
function servicesLine(): string {
  return SERVICES === 'compiled'
    ? "services compiled, as the images run them (node dist/main.js, each image's ENV: NODE_ENV=production, jemalloc, the watcher's MALLOC_CONF)"
    : 'services from their TypeScript sources, through tsx (BENCH_SERVICES=sources)';
}

async function cpuBenchServices(): Promise<ProductionTree | undefined> {
  if (SERVICES === 'sources') return undefined;
  return ProductionTree.prepare(progress);
}

/** The tracing settings the services ran with (the sink's URL left out). */
function sinkSettings(sink: OtlpReceiver): Record<string, string> {
  return Object.fromEntries(
    Object.entries(sink.otelEnv()).filter(([name]) => name !== 'OTEL_EXPORTER_OTLP_ENDPOINT'),
  );
}

async function main(): Promise<void> {
  closeSystemsOnSignal();
  if (ONLY === 'cpu' && TRACING === 'on') {
    await cpuTracing();
    return;
  }
  if (ONLY === 'cpu') {
    await cpuOnly();
    return;
  }
  if (ONLY === 'priorities') {
    await prioritiesOnly();
    return;
  }
  if (ONLY === 'watcher-memory') {
    await watcherMemoryOnly();
    return;
  }
  if (ONLY === 'syncer-memory') {
    await syncerMemoryOnly();
    return;
  }
  const startedAt = new Date();
  const machine = machineInfo();
  const start = performance.now();
  progress(
    `keys ${KEYS}, replicas ${REPLICAS.join(',')}, ${SECONDS} s per latency rate, ${DELETES} deletes, ${STREAMS} streams`,
  );
  const { floor, pacedFloor, latency } = await floorAndLatency(undefined);
  const sync: SyncRunResult[] = [];
  let repair: RepairResult | undefined;
  let syncerMemory: SyncerMemoryResult | undefined;
  for (const replicas of REPLICAS) {
    progress(`sync: fresh system with ${replicas} syncer replica(s)…`);
    const result = await syncRun(replicas);
    sync.push(result.run);
    repair ??= result.repair;
    syncerMemory ??= result.memory;
    const { cold, warm, churn } = result.run;
    progress(
      `sync ×${replicas}: cold ${cold.seconds} s, warm ${warm.seconds} s (${warm.writes} writes), reads per resync ${warm.readsPerKey}, per change ${churn.readsPerKey} (watch requests not counted); syncs run: cold ${cold.syncs}, warm ${warm.syncs}, churn ${churn.syncs}`,
    );
  }
  if (repair === undefined || syncerMemory === undefined) throw new Error('no 1-replica run');
  const apiReads = apiReadRows(latency, sync, repair, syncerMemory);
  progress(readsLine(apiReads));
  progress(`watcher memory: fresh system for ${STREAMS} streams…`);
  const watcherMemory = await measureWatcherMemory(STREAMS);
  const prioritiesResult = await priorities();
  const results: BenchResults = {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    settings: {
      keys: KEYS,
      replicas: REPLICAS,
      secondsPerRate: SECONDS,
      streams: STREAMS,
      deletes: DELETES,
      syncConcurrency: CONCURRENCY,
      latencyDrivers: LATENCY_DRIVERS,
      latencyRates: LATENCY_RATES,
      floorSamples: FLOOR_SAMPLES,
      priorityKeys: PRIORITY_KEYS,
      priorityProbes: PRIORITY_PROBES,
    },
    floor,
    latency,
    sync,
    cpuPerUnit: cpuPerUnitRows(floor, latency, sync, pacedFloor),
    apiReads,
    repair,
    syncerMemory,
    watcherMemory,
    priorities: prioritiesResult,
    goals: [
      ...evaluateGoals(floor, latency, sync, apiReads, prioritiesResult),
      ...cpuGoals(cpuPerUnitRows(floor, latency, sync)),
      watcherMemoryGoal(watcherMemory),
    ],
    durationSeconds: round((performance.now() - start) / 1000, 1),
  };
  const path = await writeResults(results);
  process.stdout.write(markdown(results));
  progress(`results written to ${path}`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
