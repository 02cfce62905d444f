/**
 * The figures of `npm run bench:scale` and their markdown: per-key CPU costs per process, the
 * Redis work per sync and where one Redis core runs out, memory at the full key count, the
 * rolling restart.
 */
import type { RollingRestartResult } from './rolling-restart';
import type { BenchRun, Goal } from './report';
import { goalsTable, heading, table } from './report';
import { round } from './stats';
import type { SyncPhaseResult, SyncRunResult } from './sync-throughput';
import type { SyncerMemoryResult } from './syncer-memory';

/** The processes whose CPU the scale run reports, as `cpuSeconds` names them. */
export const SCALE_PROCESSES = [
  'slice-syncer',
  'kube-emulator',
  'redis',
  'registration-api',
  'bench',
] as const;

/** The services a sync costs CPU in (the bench and the idle API are not). */
const SYNC_PROCESSES = ['slice-syncer', 'kube-emulator', 'redis'] as const;

/** What one phase cost, per key and per sync. */
export interface PhaseCost {
  replicas: number;
  phase: SyncPhaseResult['phase'];
  keys: number;
  syncs: number;
  seconds: number;
  writesPerKey: number;
  /** Node status writes (the `DRAResourcesPublished` condition) per key. */
  nodeWritesPerKey: number;
  /** CPU ms per key synced, per process. */
  cpuMsPerKey: Record<string, number>;
  /** slice-syncer + kube-emulator + redis CPU ms per key synced. */
  serviceCpuMsPerKey: number;
  /** CPU seconds / wall seconds per process: 1 is one core busy all phase long. */
  coresBusy: Record<string, number>;
  /** redis-server CPU (from /proc: commands, network, parsing) per sync, ms. */
  redisCpuMsPerSync: number;
  /** Commands Redis ran per sync, those run by scripts included (INFO commandstats). */
  redisCommandsPerSync: number;
  /** Scripts (evalsha) per sync: requests of clients, each running several commands. */
  redisScriptsPerSync: number;
  /** Time in scripts (evalsha, their commands included) per sync, µs. */
  redisScriptUsecPerSync: number;
  /** 1,000 / redisCpuMsPerSync: syncs/s at which this work fills one Redis core. */
  redisSaturationSyncsPerSecond: number;
  /** Status reads by the bench (to see the phase end), part of the Redis figures. */
  benchStatusesRead: number;
}

export function phaseCost(run: SyncRunResult, p: SyncPhaseResult): PhaseCost {
  const perKey = (seconds = 0): number => round((seconds * 1000) / p.keys, 3);
  const cpuMsPerKey: Record<string, number> = {};
  const coresBusy: Record<string, number> = {};
  for (const name of SCALE_PROCESSES) {
    cpuMsPerKey[name] = perKey(p.cpuSeconds[name]);
    coresBusy[name] = round((p.cpuSeconds[name] ?? 0) / (p.nodeConditionsSeconds ?? p.seconds), 2);
  }
  const syncs = Math.max(1, p.syncs);
  const redisCpuMsPerSync = ((p.cpuSeconds.redis ?? 0) * 1000) / syncs;
  return {
    replicas: run.replicas,
    phase: p.phase,
    keys: p.keys,
    syncs: p.syncs,
    seconds: p.seconds,
    writesPerKey: p.writesPerKey,
    nodeWritesPerKey: round(p.api.nodeWrites / p.keys, 3),
    cpuMsPerKey,
    serviceCpuMsPerKey: round(
      SYNC_PROCESSES.reduce((sum, name) => sum + (cpuMsPerKey[name] ?? 0), 0),
      3,
    ),
    coresBusy,
    redisCpuMsPerSync: round(redisCpuMsPerSync, 3),
    redisCommandsPerSync: round(p.redis.calls / syncs, 1),
    redisScriptsPerSync: round(p.redis.scriptCalls / syncs, 2),
    redisScriptUsecPerSync: round((p.redis.byCommand.evalsha?.usec ?? 0) / syncs, 1),
    redisSaturationSyncsPerSecond: redisCpuMsPerSync > 0 ? Math.round(1000 / redisCpuMsPerSync) : 0,
    benchStatusesRead: p.polling.statusesRead,
  };
}

/** Memory of the 1-replica System once every phase ran (every key published). */
export interface ScaleMemory {
  keys: number;
  nodes: number;
  /** Redis `used_memory`, and per key after the cold publish (`SyncRunResult.redisBytesPerKey`). */
  redisUsedMemoryBytes: number;
  redisBytesPerKey: number;
  /** VmRSS per process, bytes (the syncer's with its caches holding every slice and Node). */
  rssBytes: Record<string, number>;
}

export interface ScaleBenchResults extends BenchRun {
  sync: SyncRunResult[];
  costs: PhaseCost[];
  memory: ScaleMemory;
  /** Unset when the syncer's restart failed (see `failures`). */
  syncerMemory?: SyncerMemoryResult;
  /** Unset when the rolling restart failed (see `failures`). */
  rollingRestart?: RollingRestartResult;
  /** Parts that failed, with why; the others' figures stand. */
  failures: string[];
}

const mib = (bytes: number): string => `${round(bytes / 2 ** 20, 1)} MiB`;
const n = (value: number): string => value.toLocaleString('en-US');

export function scaleGoals(results: Omit<ScaleBenchResults, 'goals'>): Goal[] {
  const r = results.rollingRestart;
  const goals: Goal[] = [];
  if (r !== undefined) {
    goals.push(
      {
        name: `rolling restart of ${n(r.keys)} drivers: keys without slices at the end`,
        goal: '0',
        actual: String(r.keysWithoutSlices),
        met: r.keysWithoutSlices === 0,
      },
      {
        name: 'rolling restart: longest time a key had no slice',
        goal: '0 (never unpublished)',
        actual: r.watched
          ? `${r.longestUnpublishedMs} ms (${r.keysEverUnpublished} keys ever unpublished)`
          : `${r.longestUnpublishedMs} ms (not watched; ${r.api.writes} writes)`,
        met: r.longestUnpublishedMs === 0,
      },
    );
  }
  for (const run of results.sync) {
    const reads = run.cold.reads + run.warm.reads + run.churn.reads;
    goals.push({
      name: `${n(run.keys)} keys, ${run.replicas} replica(s): warm resync writes, API reads in all phases`,
      goal: '0 and 0',
      actual: `${run.warm.writes} and ${reads}`,
      met: run.warm.writes === 0 && reads === 0,
    });
  }
  return goals;
}

function phasesTable(results: ScaleBenchResults): string {
  return table(
    [
      'replicas',
      'phase',
      'keys',
      'seconds',
      's until Node conditions written',
      'keys/s',
      'API writes (slices)',
      'Node status writes',
      'API reads / key',
      'syncs',
      ...SCALE_PROCESSES.map((p) => `CPU s ${p}`),
    ],
    results.sync.flatMap((run) =>
      [run.cold, run.warm, run.churn].map((p) => [
        run.replicas,
        p.phase,
        n(p.keys),
        p.seconds,
        p.nodeConditionsSeconds ?? '',
        n(p.keysPerSecond),
        n(p.writes),
        n(p.api.nodeWrites),
        p.readsPerKey,
        n(p.syncs),
        ...SCALE_PROCESSES.map((name) => round(p.cpuSeconds[name] ?? 0, 1)),
      ]),
    ),
  );
}

function costTable(costs: readonly PhaseCost[]): string {
  const busiest = (c: PhaseCost): string => {
    const [name, cores] = Object.entries(c.coresBusy)
      .filter(([process]) => process !== 'bench')
      .sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
    return `${name} (${cores})`;
  };
  return table(
    [
      'replicas',
      'phase',
      'syncer ms/key',
      'emulator ms/key',
      'redis ms/key',
      '**services ms/key**',
      'API writes/key',
      'cores busy: syncer / emulator / redis / bench',
      'busiest',
    ],
    costs.map((c) => [
      c.replicas,
      c.phase,
      c.cpuMsPerKey['slice-syncer'] ?? 0,
      c.cpuMsPerKey['kube-emulator'] ?? 0,
      c.cpuMsPerKey.redis ?? 0,
      `**${c.serviceCpuMsPerKey}**`,
      c.writesPerKey,
      ['slice-syncer', 'kube-emulator', 'redis', 'bench']
        .map((p) => c.coresBusy[p] ?? 0)
        .join(' / '),
      busiest(c),
    ]),
  );
}

function redisTable(costs: readonly PhaseCost[]): string {
  return table(
    [
      'replicas',
      'phase',
      'syncs',
      'redis CPU ms / sync',
      'commands / sync (script-run included)',
      'scripts / sync',
      'µs in scripts / sync',
      '**1 Redis core full at (syncs/s)**',
      'statuses read by the bench',
    ],
    costs.map((c) => [
      c.replicas,
      c.phase,
      n(c.syncs),
      c.redisCpuMsPerSync,
      c.redisCommandsPerSync,
      c.redisScriptsPerSync,
      c.redisScriptUsecPerSync,
      `**${n(c.redisSaturationSyncsPerSecond)}**`,
      n(c.benchStatusesRead),
    ]),
  );
}

function memoryTable(results: ScaleBenchResults): string {
  const { memory: m, syncerMemory: s } = results;
  const perKey = (bytes: number): string => `${n(Math.round(bytes / m.keys))} B`;
  const rows: (string | number)[][] = [
    [
      'Redis used_memory',
      `${n(m.keys)} keys`,
      mib(m.redisUsedMemoryBytes),
      `${n(m.redisBytesPerKey)} B (cold publish)`,
    ],
    ['redis-server RSS', `${n(m.keys)} keys`, mib(m.rssBytes.redis ?? 0), ''],
    [
      'kube-emulator RSS',
      `${n(m.keys)} slices, ${n(m.nodes)} Nodes`,
      mib(m.rssBytes['kube-emulator'] ?? 0),
      perKey(m.rssBytes['kube-emulator'] ?? 0),
    ],
    [
      'slice-syncer RSS after every phase (caches + working set)',
      `${n(m.keys)} slices, ${n(m.nodes)} Nodes cached`,
      mib(m.rssBytes['slice-syncer'] ?? 0),
      s === undefined
        ? ''
        : `${perKey((m.rssBytes['slice-syncer'] ?? 0) - s.idle.rssBytes)} over idle`,
    ],
  ];
  if (s !== undefined) {
    rows.push(
      [
        'slice-syncer RSS / heap used, fresh in the empty cluster',
        '0',
        `${mib(s.idle.rssBytes)} / ${mib(s.idle.heapUsedBytes)}`,
        '',
      ],
      [
        'slice-syncer RSS / heap used, after every phase (least of 5 readings)',
        `${n(s.slices)} slices, ${n(s.nodes)} Nodes cached`,
        `${mib(s.afterPhases.rssBytes)} / ${mib(s.afterPhases.heapUsedBytes)}`,
        '',
      ],
      [
        `slice-syncer RSS / heap used, restarted with every slice and Node cached (ready in ${s.secondsToReady} s)`,
        `${n(s.slices)} slices, ${n(s.nodes)} Nodes`,
        `${mib(s.loaded.rssBytes)} / ${mib(s.loaded.heapUsedBytes)}`,
        `${n(Math.round(s.rssBytesPer1000Slices / 1000))} B / ${n(Math.round(s.heapUsedBytesPer1000Slices / 1000))} B per slice over idle`,
      ],
      [
        'slice-syncer start (= each anti-entropy relist)',
        '',
        `${s.startApi.sliceReads} list pages of slices, ${s.startApi.nodeReads} of Nodes`,
        '',
      ],
    );
  }
  return table(['what', 'at', 'value', 'per key'], rows);
}

function rolloutSection(r: RollingRestartResult | undefined): string[] {
  if (r === undefined) return ['## Rolling restart', '**Failed**: see the failures below.'];
  const tally = (t: Record<string, number>): string =>
    Object.entries(t)
      .map(([k, v]) => `${k} ${n(v)}`)
      .join(', ') || 'none';
  return [
    `## Rolling restart of every driver: ${n(r.nodes)} nodes, ${r.batches} batches of ${n(r.nodesPerBatch)} nodes (${n(r.keys)} keys)`,
    table(
      ['figure', 'value'],
      [
        ['keys without slices at the end (goal 0)', `**${r.keysWithoutSlices}**`],
        ['longest time a key had no slice (0: never)', `**${r.longestUnpublishedMs} ms**`],
        [
          'keys / nodes ever unpublished',
          r.watched
            ? `${n(r.keysEverUnpublished)} / ${n(r.nodesEverUnpublished)}`
            : 'not watched (the watch did not open)',
        ],
        ['keys whose last sync status names no slice, at the end', r.statusWithoutSlices],
        ['rollout (first DELETE → last batch registered and streaming)', `${r.rolloutSeconds} s`],
        ['until every key synced after its registration', `${r.settledSeconds} s`],
        [
          'per batch: total / deregister / register (p50, max)',
          `${r.batchSeconds.p50} s, ${r.batchSeconds.max} s / ${r.deregisterSeconds.p50} s, ${r.deregisterSeconds.max} s / ${r.registerSeconds.p50} s, ${r.registerSeconds.max} s`,
        ],
        ['restart gap (DELETE answered → POST sent), at least', `${r.restartGapMs} ms`],
        [
          'driver away (DELETE answered → POST answered), p50 / p99 / max',
          `${r.awayMs.p50} / ${r.awayMs.p99} / ${r.awayMs.max} ms`,
        ],
        [
          'keys away longer than REMOVAL_GRACE (withdrawn by design)',
          `**${n(r.keysAwayBeyondGrace)}**`,
        ],
        ['registration API pace over the request stages', `${r.apiRequestsPerSecond} requests/s`],
        [
          "REMOVAL_GRACE (the API default; the watcher's WIPE_DELAY equals it)",
          `${r.removalGraceMs} ms`,
        ],
        [
          'API writes of slices / of Node status / reads (whole run, grace included)',
          `**${n(r.api.writes)}** / ${n(r.api.nodeWrites)} / ${n(r.api.reads)}`,
        ],
        ['syncs run', `${n(r.syncs)} (${round(r.syncs / r.keys, 2)} per key)`],
        ['watch events', tally(r.watchEvents)],
        [
          'DELETE answers / POST answers',
          `${tally(r.deregisterAnswers)} / ${tally(r.registerAnswers)}`,
        ],
        ["the watcher's stores of the re-opened streams", tally(r.storeResults)],
        ['sync outcomes at the end', tally(r.outcomes)],
        [
          `CPU s over ${r.wallSeconds} s (${SCALE_PROCESSES.join(' / ')})`,
          SCALE_PROCESSES.map((p) => round(r.cpuSeconds[p] ?? 0, 1)).join(' / '),
        ],
        [
          `CPU ms per key restarted (${SCALE_PROCESSES.join(' / ')})`,
          SCALE_PROCESSES.map((p) => round(((r.cpuSeconds[p] ?? 0) * 1000) / r.keys, 2)).join(
            ' / ',
          ),
        ],
        [
          'Redis: commands / scripts per key restarted',
          `${round(r.redis.calls / r.keys, 1)} / ${round(r.redis.scriptCalls / r.keys, 1)}`,
        ],
      ],
    ),
    `Real: ${r.real.join('; ')}.`,
    `Simulated: ${r.simulated.join('; ')}.`,
  ];
}

/** The commands Redis spent most time in during a phase, per sync (scripts include theirs). */
function topCommands(run: SyncRunResult, p: SyncPhaseResult, most = 10): string {
  const syncs = Math.max(1, p.syncs);
  const top = Object.entries(p.redis.byCommand)
    .sort((a, b) => b[1].usec - a[1].usec)
    .slice(0, most)
    .map(
      ([command, c]) =>
        `${command} ${round(c.calls / syncs, 2)} × (${round(c.usec / syncs, 1)} µs)`,
    );
  return `Per sync in ${p.phase} ×${run.replicas}, the ${most} commands Redis spent most time in (a script's time includes the commands it runs, which are also listed on their own): ${top.join(', ')}.`;
}

/** The figures a README and a capacity model need, one line each. */
function summaryTable(results: ScaleBenchResults): string {
  const rows: (string | number)[][] = [];
  for (const c of results.costs) {
    rows.push([
      `${c.phase} ×${c.replicas}: keys/s; CPU ms per key syncer / emulator / redis; API writes per key (slices + Node status)`,
      `${n(Math.round(c.keys / c.seconds))}; ${c.cpuMsPerKey['slice-syncer']} / ${c.cpuMsPerKey['kube-emulator']} / ${c.cpuMsPerKey.redis}; ${c.writesPerKey} + ${c.nodeWritesPerKey}`,
    ]);
  }
  const cold = results.costs.find((c) => c.phase === 'cold' && c.replicas === 1);
  const churn = results.costs.find((c) => c.phase === 'churn' && c.replicas === 1);
  const warm = results.costs.find((c) => c.phase === 'warm' && c.replicas === 1);
  for (const c of [cold, churn, warm]) {
    if (c === undefined) continue;
    rows.push([
      `Redis per sync, ${c.phase} ×1 (${c.phase === 'warm' ? 'resync, no write' : 'change, one write'}): CPU ms, commands; one Redis core full at`,
      `${c.redisCpuMsPerSync} ms, ${c.redisCommandsPerSync} commands; **${n(c.redisSaturationSyncsPerSecond)} syncs/s**`,
    ]);
  }
  const { memory: m, syncerMemory: s, rollingRestart: r } = results;
  rows.push(
    ['Redis bytes per key', n(m.redisBytesPerKey)],
    [`Redis used_memory at ${n(m.keys)} keys`, mib(m.redisUsedMemoryBytes)],
    [`syncer RSS after every phase at ${n(m.keys)} keys`, mib(m.rssBytes['slice-syncer'] ?? 0)],
    [`emulator RSS at ${n(m.keys)} keys`, mib(m.rssBytes['kube-emulator'] ?? 0)],
  );
  if (s !== undefined) {
    rows.push(
      [
        'syncer cache per 1,000 slices (RSS / heap, restarted − idle)',
        `${mib(s.rssBytesPer1000Slices)} / ${mib(s.heapUsedBytesPer1000Slices)}`,
      ],
      [`syncer RSS restarted with ${n(s.slices)} slices cached`, mib(s.loaded.rssBytes)],
    );
  }
  if (r !== undefined) {
    rows.push([
      `rolling restart, ${n(r.keys)} keys: without slices / longest gap / slice writes / Node status writes / rollout`,
      `${r.keysWithoutSlices} / ${r.longestUnpublishedMs} ms / ${n(r.api.writes)} / ${n(r.api.nodeWrites)} / ${r.rolloutSeconds} s`,
    ]);
  }
  return table(['figure', 'value'], rows);
}

export function scaleMarkdown(results: ScaleBenchResults): string {
  const settings = results.settings;
  const sections = [
    ...heading(results, 'slicekeeper scale benchmark'),
    `${n(Number(settings.keys))} keys (${n(Number(settings.nodes))} nodes × ${Number(settings.driversPerNode)} drivers × 8 devices) against the kube emulator; ${Number(settings.syncConcurrency)} syncs at once per replica, write limit lifted; registrations, snapshots and jobs written with the API's and the watcher's libs (the watcher is stopped); a phase ends when the queue has drained and every key's status is current.`,
    '## Cold publish / warm resync / 10% churn',
    phasesTable(results),
    '## CPU per key synced, by process, and where it saturates',
    "CPU ms per key = the process's CPU over the phase (until its Node conditions were written too) / keys; cores busy = CPU s / those wall s (each Node.js process runs on one core; redis-server too).",
    costTable(results.costs),
    '## Redis: work per sync, and the sync rate one Redis core sustains',
    "All Redis work of the phase (snapshot stores and enqueues, as the watcher makes them; job fetch, guard, records and completion by the syncers; the bench's own status reads, counted apart) over the syncs run. One BullMQ queue lives in one hash slot, so on one node of a Redis Cluster: the rate at which one core is full bounds a single queue (the per-key records spread over the Cluster's nodes, so the queue's node does less than this; the figure is a floor).",
    redisTable(results.costs),
    ...results.sync
      .slice(0, 1)
      .flatMap((run) => [run.cold, run.warm].map((p) => topCommands(run, p))),
    `## Memory at ${n(results.memory.keys)} keys (1 replica, after every phase)`,
    memoryTable(results),
    ...rolloutSection(results.rollingRestart),
    '## Summary (raw figures for the README and a capacity model)',
    summaryTable(results),
    '## Goals',
    goalsTable(results.goals),
    ...(results.failures.length === 0
      ? []
      : ['## Failures', results.failures.map((f) => `- ${f}`).join('\n')]),
  ];
  return `${sections.join('\n\n')}\n`;
}
