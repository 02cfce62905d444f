/**
 * npm run bench:soak — slicekeeper under churn and faults for an hour, its memory, Redis and
 * queues sampled throughout (issue 29):
 *
 * - SOAK_KEYS (1000) plugins (nodes × 2 drivers, in-process drivers), SOAK_RATE (50) inventory
 *   changes a second round-robin over them, two syncer replicas, Redis append-only;
 * - every SOAK_RESTART_MINUTES (10) a rolling restart of every driver, a tenth of them at a time
 *   (each stops serving, comes back a second later and registers again, as a DaemonSet update
 *   replaces its pods);
 * - once each, at 25 %, 45 % and 65 % of the run: every watch cut by the emulator (its hook
 *   cannot pick one client, so both syncers' watches go; the watcher holds none), slice-syncer-2
 *   SIGKILLed and started again 5 s later (a Deployment's restart), Redis SIGKILLed and started
 *   again from its append-only file;
 * - every SOAK_SAMPLE_SECONDS (10): RSS, heap and event-loop delay (p99 and longest) of every
 *   process, Redis used_memory and key count, BullMQ's counts per queue, plugins not `synced`,
 *   the load average; one progress line each.
 *
 * The services run as their images run them (compiled, the images' `ENV`, production
 * dependencies only), each in a memory cgroup with its pod's limit from its manifest: Node sizes
 * V8's heap from that limit, and without it an unconstrained heap grows for want of a reason to
 * collect, which reads as a slope that no pod shows.
 *
 * At the end the churn stops and every key must be `synced` with its last inventory. Samples,
 * events and verdicts go to bench/results/<date>-soak.json, one SVG chart per series beside it
 * (bench/results/<date>-soak-<series>.svg), verdicts to stdout. SOAK_MINUTES (60) shortens the
 * run; SOAK_WARMUP_MINUTES (10) is the part not judged, of the run and of every process (the
 * syncer started again after its SIGKILL, and Redis's memory after its restart, are judged from
 * their own 10th minute). SOAK_SERVICE_ENV adds settings to the services (space-separated
 * `NAME=value` for every service, `app:NAME=value` for one app's, e.g. `MALLOC_ARENA_MAX=2` or
 * `slice-syncer:MALLOC_CONF=prof:true`), over their images' `ENV`, to try a runtime or allocator
 * setting, or to read one, against the same churn. SOAK_CPU_PROF=<dir> has every service write a
 * V8 CPU profile there when it exits (a SIGKILLed one writes none), which
 * `apps/e2e/bench/cpu-profile-summary.ts` ranks and splits into the longest tasks.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  MAINTENANCE_JOB_OPTIONS,
  nodeConditionJobOptions,
  syncJobOptions,
} from '@slicekeeper/queue';
import { freePort, repoRoot } from '@slicekeeper/testing';
import { deviceRevs, gpuInventory, inParallel, ProductionTree } from '../src/harness';
import type { InProcessDriver, System } from '../src/harness';
import { API_POD, podCgroups, SYNCER_POD, WATCHER_POD } from './pod-limits';
import type { PodLimits } from './pod-limits';
import { machineInfo } from './report';
import { SOAK_QUEUES, SoakSampler } from './soak-sampler';
import {
  memoryGrowth,
  memoryGrowthLines,
  rssSlopes,
  soakCharts,
  soakVerdicts,
} from './soak-report';
import type {
  KeysAtEnd,
  MemoryGrowth,
  SoakEvent,
  SoakGoals,
  SoakSample,
  SoakVerdict,
} from './soak-report';
import { round } from './stats';
import { closeSystemsOnSignal, cpuProfileFlags, progress, withSystem } from './support';

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const MINUTES = positiveNumber('SOAK_MINUTES', 60);
const KEYS = positiveNumber('SOAK_KEYS', 1000);
const RATE = positiveNumber('SOAK_RATE', 50);
const RESTART_MINUTES = positiveNumber('SOAK_RESTART_MINUTES', 10);
const SAMPLE_SECONDS = positiveNumber('SOAK_SAMPLE_SECONDS', 10);
const WARMUP_MINUTES = positiveNumber('SOAK_WARMUP_MINUTES', 10);
/** The apps SOAK_SERVICE_ENV can name. */
const SERVICE_APPS = ['registration-api', 'plugin-watcher', 'slice-syncer'] as const;
type ServiceApp = (typeof SERVICE_APPS)[number];
/** SOAK_SERVICE_ENV's settings: under `'*'` every service's, under an app's name that app's. */
type ServiceEnv = Partial<Record<'*' | ServiceApp, Record<string, string>>>;

/** `NAME=value app:NAME=value …`: settings added to every service's, or to one app's, environment. */
function serviceEnv(raw: string | undefined): ServiceEnv {
  const env: ServiceEnv = {};
  for (const pair of (raw ?? '').split(/\s+/).filter((part) => part !== '')) {
    const match = /^(?:([a-z-]+):)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(pair);
    if (match?.[2] === undefined || match[3] === undefined) {
      throw new Error(`SOAK_SERVICE_ENV: "${pair}" is not NAME=value or app:NAME=value`);
    }
    const app = match[1] ?? '*';
    if (app !== '*' && !(SERVICE_APPS as readonly string[]).includes(app)) {
      throw new Error(
        `SOAK_SERVICE_ENV: "${pair}" names the app "${app}"; the apps are ${SERVICE_APPS.join(', ')}`,
      );
    }
    env[app as keyof ServiceEnv] = { ...env[app as keyof ServiceEnv], [match[2]]: match[3] };
  }
  return env;
}

const SERVICE_ENV = serviceEnv(process.env.SOAK_SERVICE_ENV);
const CPU_PROF_DIR = process.env.SOAK_CPU_PROF ?? '';
/** An app's own settings: SOAK_SERVICE_ENV's for it, with SOAK_CPU_PROF's profiler flags. */
function appEnv(app: ServiceApp): Record<string, string> {
  const env = { ...SERVICE_ENV[app] };
  if (CPU_PROF_DIR === '') return env;
  // As without profiling, an app's NODE_OPTIONS replace those given to every service.
  const options = env.NODE_OPTIONS ?? SERVICE_ENV['*']?.NODE_OPTIONS;
  const flags = cpuProfileFlags(CPU_PROF_DIR);
  return { ...env, NODE_OPTIONS: options === undefined ? flags : `${options} ${flags}` };
}
const DRIVERS = ['gpu.example.com', 'nic.example.com'] as const;
/** The processes the RSS and event-loop goals judge: slicekeeper's own. */
const JUDGED = ['registration-api', 'plugin-watcher', 'slice-syncer-1', 'slice-syncer-2'];

/** The bounds the queues are configured with (libs/queue), read from the same options. */
function queueBounds(): SoakGoals['queueBounds'] {
  const kept = (options: { removeOnComplete?: unknown; removeOnFail?: unknown }) => {
    const bound = (value: unknown): number => {
      if (value === true) return 0;
      if (typeof value === 'number') return value;
      if (typeof value === 'object' && value !== null && 'count' in value) {
        return Number(value.count);
      }
      return Number.POSITIVE_INFINITY;
    };
    return { completed: bound(options.removeOnComplete), failed: bound(options.removeOnFail) };
  };
  return {
    sync: kept(syncJobOptions({ node: 'node-0', driver: DRIVERS[0] }, 'snapshot')),
    'node-status': kept(nodeConditionJobOptions('node-0')),
    maintenance: kept(MAINTENANCE_JOB_OPTIONS),
  };
}

interface SoakResults {
  date: string;
  startedAt: string;
  machine: ReturnType<typeof machineInfo> & { loadAverageAtEnd: number[] };
  /** The services ran compiled, as the images run them, under these memory limits (or none, and why). */
  limits: PodLimits;
  settings: Record<string, number>;
  /** SOAK_SERVICE_ENV: settings added to every service (`'*'`) or to one app's. */
  serviceEnv: ServiceEnv;
  /** SOAK_CPU_PROF was set: the services ran under V8's profiler, which costs them CPU. */
  profiled: boolean;
  goals: SoakGoals;
  events: SoakEvent[];
  samples: SoakSample[];
  /** Once the churn stopped and the keys had settled. */
  keysAtEnd: KeysAtEnd;
  rssSlopesMiBPerHour: { afterWarmup: Record<string, number>; wholeRun: Record<string, number> };
  /** Per Node process, its memory in its first 5 judged minutes against its last 5. */
  memoryGrowth: MemoryGrowth[];
  verdicts: SoakVerdict[];
  durationSeconds: number;
}

/** The soak proper, against a started System. */
async function soak(
  system: System,
  watcherMetricsUrl: string,
  limits: PodLimits,
): Promise<SoakResults> {
  const startedAt = new Date();
  const machine = machineInfo();
  const nodes = Array.from({ length: Math.ceil(KEYS / DRIVERS.length) }, (_, i) => `node-${i}`);
  const plugins = nodes.flatMap((node) => DRIVERS.map((driver) => ({ node, driver })));
  const keys = plugins.slice(0, KEYS);
  const drivers: InProcessDriver[] = [];
  progress(`registering ${keys.length} in-process drivers…`);
  await inParallel(keys, 16, async (key) => {
    drivers.push(await system.inProcessDriver({ ...key, inventory: gpuInventory({ rev: 0 }) }));
  });
  drivers.sort((a, b) => `${a.node}/${a.driver}`.localeCompare(`${b.node}/${b.driver}`));
  const revs = new Map<InProcessDriver, number>(drivers.map((d) => [d, 0]));
  const restarting = new Set<InProcessDriver>();
  const start = Date.now();
  const elapsed = (): number => round((Date.now() - start) / 1000, 1);
  const events: SoakEvent[] = [];
  const event = (what: string): void => {
    events.push({ t: elapsed(), what });
    progress(`event at ${round(elapsed() / 60, 1)} min: ${what}`);
  };
  const sampler = new SoakSampler(system, watcherMetricsUrl, start);
  const samples: SoakSample[] = [];
  const endAt = start + MINUTES * 60_000;
  // An object, not a let: the loops read it after their awaits.
  const run = { stopping: false };

  const churn = async (): Promise<void> => {
    let sent = 0;
    let skipped = 0;
    const began = performance.now();
    while (!run.stopping) {
      const due = Math.floor(((performance.now() - began) / 1000) * RATE);
      for (; sent < due; sent++) {
        const driver = drivers[sent % drivers.length];
        if (driver === undefined) throw new Error('no drivers');
        if (restarting.has(driver)) {
          skipped++;
          continue;
        }
        const rev = (revs.get(driver) ?? 0) + 1;
        revs.set(driver, rev);
        driver.publish(gpuInventory({ rev }));
      }
      await sleep(Math.max(1, began + ((sent + 1) / RATE) * 1000 - performance.now()));
    }
    progress(`churn: ${sent - skipped} changes sent, ${skipped} skipped (driver restarting)`);
  };

  const rollingRestart = async (round_: number): Promise<void> => {
    event(`rolling restart ${round_} of every driver`);
    const batch = Math.ceil(drivers.length / 10);
    for (let i = 0; i < drivers.length && !run.stopping; i += batch) {
      const group = drivers.slice(i, i + batch);
      for (const d of group) restarting.add(d);
      await Promise.all(group.map((d) => d.stop()));
      await sleep(1000);
      await inParallel(group, 16, async (d) => {
        await d.start();
        restarting.delete(d);
      });
    }
    progress(`rolling restart ${round_} done`);
  };

  /** The faults, once each, at a share of the run; the restarts every RESTART_MINUTES. */
  const schedule: { at: number; run: () => Promise<void> }[] = [
    {
      at: 0.25 * MINUTES * 60_000,
      run: async () => {
        event(`every watch cut (${await system.emulator.cutWatches()} watches)`);
      },
    },
    {
      at: 0.45 * MINUTES * 60_000,
      run: async () => {
        event('slice-syncer-2 SIGKILLed');
        await system.killService('slice-syncer-2');
        await sleep(5000);
        await system.startService('slice-syncer-2');
        event('slice-syncer-2 started again');
      },
    },
    {
      at: 0.65 * MINUTES * 60_000,
      run: async () => {
        event('Redis SIGKILLed');
        await system.redis.kill();
        await system.redis.restart();
        event('Redis started again from its append-only file');
      },
    },
  ];
  for (let m = RESTART_MINUTES, n = 1; m < MINUTES; m += RESTART_MINUTES, n++) {
    const round_ = n;
    schedule.push({ at: m * 60_000, run: () => rollingRestart(round_) });
  }
  schedule.sort((a, b) => a.at - b.at);

  const faults = (async () => {
    for (const step of schedule) {
      const wait = start + step.at - Date.now();
      if (wait > 0) await sleep(wait);
      if (run.stopping) return;
      await step.run();
    }
  })();

  const sampling = async (): Promise<void> => {
    let next = start;
    while (!run.stopping) {
      const sample = await sampler.sample();
      samples.push(sample);
      progress(progressLine(sample));
      next += SAMPLE_SECONDS * 1000;
      // A reading that overran the next one's time is followed by a whole interval, not a
      // catch-up: each service's lag p99 is over the time between two readings, and the window
      // of 0.7 s after one of 21.8 s (2026-12-03) made that p99 the worst pause in it.
      if (next < Date.now()) next = Date.now() + SAMPLE_SECONDS * 1000;
      const wait = next - Date.now();
      if (wait > 0) await sleep(Math.min(wait, Math.max(0, endAt - Date.now())));
      if (Date.now() >= endAt) run.stopping = true;
    }
  };

  progress(
    `soak: ${keys.length} keys, ${RATE} changes/s, ${MINUTES} min, load ${os
      .loadavg()
      .map((l) => round(l))
      .join(' ')}`,
  );
  const churning = churn();
  try {
    await sampling();
  } finally {
    run.stopping = true;
    await churning;
    await faults;
  }
  progress('churn stopped: waiting for every key to be synced with its last inventory…');
  const synced = await untilSynced(system, sampler, drivers, revs, 180_000);
  const last = await sampler.sample();
  samples.push(last);
  progress(progressLine(last));
  await sampler.close();
  const goals: SoakGoals = {
    warmupSeconds: WARMUP_MINUTES * 60,
    rssSlopeMiBPerHour: 2,
    redisSpread: 0.05,
    lagP99Ms: 50,
    queueBounds: queueBounds(),
  };
  return {
    date: startedAt.toISOString().slice(0, 10),
    startedAt: startedAt.toISOString(),
    machine: { ...machine, loadAverageAtEnd: os.loadavg().map((l) => round(l)) },
    limits,
    settings: {
      minutes: MINUTES,
      keys: keys.length,
      rate: RATE,
      restartMinutes: RESTART_MINUTES,
      sampleSeconds: SAMPLE_SECONDS,
      warmupMinutes: WARMUP_MINUTES,
      syncerReplicas: 2,
    },
    serviceEnv: SERVICE_ENV,
    profiled: CPU_PROF_DIR !== '',
    goals,
    events,
    samples,
    keysAtEnd: synced,
    rssSlopesMiBPerHour: {
      afterWarmup: rssSlopes(samples, goals.warmupSeconds),
      wholeRun: rssSlopes(samples, 0),
    },
    memoryGrowth: memoryGrowth(samples, goals.warmupSeconds),
    verdicts: soakVerdicts(samples, goals, JUDGED, synced, events),
    durationSeconds: round((Date.now() - start) / 1000, 1),
  };
}

/**
 * Waits until every key's slices carry its last inventory and the API reports every plugin
 * `synced`; returns how many keys carried it, at the end or at `timeoutMs`.
 */
async function untilSynced(
  system: System,
  sampler: SoakSampler,
  drivers: readonly InProcessDriver[],
  revs: ReadonlyMap<InProcessDriver, number>,
  timeoutMs: number,
): Promise<KeysAtEnd> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = new Map<string, number | undefined>();
    for (const slice of await system.emulator.slices()) {
      const [rev] = deviceRevs([slice]).values();
      seen.set(`${slice.spec.nodeName ?? ''}/${slice.spec.driver}`, rev);
    }
    const current = drivers.filter((d) => seen.get(`${d.node}/${d.driver}`) === revs.get(d));
    const outcomes = await sampler.pluginOutcomes().catch(() => undefined);
    const end: KeysAtEnd = {
      keys: drivers.length,
      carryingLast: current.length,
      ...(outcomes === undefined ? {} : { notSynced: outcomes.notSynced }),
    };
    if (
      (current.length === drivers.length && outcomes?.notSynced === 0) ||
      Date.now() >= deadline
    ) {
      return end;
    }
    await sleep(2000);
  }
}

function progressLine(s: SoakSample): string {
  const mib = (bytes: number | undefined): string =>
    bytes === undefined ? '–' : String(Math.round(bytes / 1024 / 1024));
  const procs = Object.entries(s.processes)
    .map(
      ([name, p]) =>
        `${name} ${mib(p.rssBytes)}M${p.lagP99Ms === undefined ? '' : `/${p.lagP99Ms}ms`}`,
    )
    .join(', ');
  const sync = s.queues?.sync;
  const queue =
    sync === undefined
      ? 'queue –'
      : `sync queue w${sync.waiting + sync.prioritized} d${sync.delayed} a${sync.active} c${sync.completed} f${sync.failed}`;
  const redis =
    s.redis === undefined
      ? 'redis –'
      : `redis ${mib(s.redis.usedMemoryBytes)}M ${s.redis.keys} keys`;
  return `t ${round(s.t / 60, 1)} min, load ${s.load}: ${procs}; ${redis}; ${queue}; not synced ${s.notSynced ?? '–'}/${s.plugins ?? '–'}`;
}

async function writeSoak(results: SoakResults): Promise<string> {
  const dir = join(repoRoot, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const base = join(dir, `${results.date}-soak`);
  await writeFile(`${base}.json`, `${JSON.stringify(results, null, 2)}\n`);
  for (const chart of soakCharts(results.samples, results.events, results.goals.warmupSeconds)) {
    await writeFile(`${base}-${chart.series}.svg`, chart.svg);
  }
  return `${base}.json`;
}

async function main(): Promise<void> {
  closeSystemsOnSignal();
  const nodes = Array.from({ length: Math.ceil(KEYS / DRIVERS.length) }, (_, i) => `node-${i}`);
  const watcherPort = await freePort();
  const began = performance.now();
  const production = await ProductionTree.prepare(progress);
  const pods = await podCgroups('bench-soak', {
    'registration-api': API_POD,
    'plugin-watcher': WATCHER_POD,
    'slice-syncer-1': SYNCER_POD,
    'slice-syncer-2': SYNCER_POD,
  });
  let results: SoakResults;
  try {
    results = await withSystem(
      {
        // Its own log directory (reports/e2e/<name>): the sampler finds the syncers' metrics in
        // their logs, and a second soak under the same name would wipe and overwrite them.
        name: `bench-soak-${process.pid}`,
        nodes,
        syncerReplicas: 2,
        redisAppendOnly: true,
        commonEnv: SERVICE_ENV['*'] ?? {},
        apiEnv: appEnv('registration-api'),
        watcherEnv: { ...appEnv('plugin-watcher'), PROBE_PORT: String(watcherPort) },
        syncerEnv: appEnv('slice-syncer'),
        production,
        memoryCgroups: pods.cgroups,
      },
      (system) => soak(system, `http://127.0.0.1:${watcherPort}/metrics`, pods.limits),
    );
  } finally {
    await production.close();
    await pods.close();
  }
  const path = await writeSoak(results);
  const lines = [
    `# Soak, ${results.settings.minutes} min, ${results.settings.keys} keys at ${results.settings.rate} changes/s`,
    '',
    `load average at start ${results.machine.loadAverage.join(' ')}, at end ${results.machine.loadAverageAtEnd.join(' ')}; ${round((performance.now() - began) / 1000, 0)} s in all`,
    '',
    'bytes' in results.limits
      ? `services compiled, each under its pod's memory limit (${results.limits.enforcedBy}): ${Object.entries(
          results.limits.bytes,
        )
          .map(([name, bytes]) => `${name} ${round(bytes / 1024 / 1024, 0)} MiB`)
          .join(', ')}`
      : `services compiled, WITHOUT memory limits (${results.limits.unconstrained})`,
    ...Object.entries(results.serviceEnv).map(
      ([app, env]) =>
        `${app === '*' ? 'every service' : app} with ${Object.entries(env)
          .map(([name, value]) => `${name}=${value}`)
          .join(' ')}`,
    ),
    '',
    '| goal | actual | verdict |',
    '| --- | --- | --- |',
    ...results.verdicts.map((v) => `| ${v.goal} | ${v.actual} | ${v.met ? 'met' : 'NOT met'} |`),
    '',
    `RSS slope over the whole run, MiB/h: ${Object.entries(results.rssSlopesMiBPerHour.wholeRun)
      .map(([name, slope]) => `${name} ${slope}`)
      .join(', ')}`,
    '',
    ...memoryGrowthLines(results.memoryGrowth),
  ];
  process.stdout.write(lines.join('\n'));
  progress(
    `results written to ${path} (charts beside it), queues ${Object.keys(SOAK_QUEUES).join(', ')}`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `soak failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
