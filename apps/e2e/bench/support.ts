import { readFile, readdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '@slicekeeper/errors';
import type { RedisClient } from '@slicekeeper/queue';
import { System } from '../src/harness';
import type { EmulatorClient, SystemOptions } from '../src/harness';

/** A progress line on stderr (stdout carries only the results). */
export function progress(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** The Node flags that have a service write a V8 CPU profile into `dir` when it exits. */
export function cpuProfileFlags(dir: string): string {
  return `--cpu-prof --cpu-prof-dir=${dir}`;
}

/** API calls counted by the emulator, as the benchmarks report them. */
export interface ApiCalls {
  /** get and list of resourceslices and nodes (`reads` = `sliceReads` + `nodeReads`). */
  reads: number;
  /** get and list of resourceslices. */
  sliceReads: number;
  /** get and list of nodes. */
  nodeReads: number;
  /** Watch requests opened on resourceslices and nodes: not reads, counted apart. */
  watches: number;
  /** create, update, patch and delete of resourceslices. */
  writes: number;
  /** Writes of Nodes and their status (the syncer's `DRAResourcesPublished` condition). */
  nodeWrites: number;
}

const READ_VERBS = new Set(['get', 'list']);
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** The emulator's request counters, summed into reads, watches and writes. */
export async function apiCalls(emulator: EmulatorClient): Promise<ApiCalls> {
  const calls: ApiCalls = {
    reads: 0,
    sliceReads: 0,
    nodeReads: 0,
    watches: 0,
    writes: 0,
    nodeWrites: 0,
  };
  for (const c of await emulator.counters()) {
    const slices = c.resource === 'resourceslices';
    const nodes = c.resource === 'nodes';
    if (READ_VERBS.has(c.verb) && slices) calls.sliceReads += c.count;
    if (READ_VERBS.has(c.verb) && nodes) calls.nodeReads += c.count;
    if (c.verb === 'watch' && (slices || nodes)) calls.watches += c.count;
    if (WRITE_VERBS.has(c.verb) && slices) calls.writes += c.count;
    if (WRITE_VERBS.has(c.verb) && (nodes || c.resource === 'nodes/status')) {
      calls.nodeWrites += c.count;
    }
  }
  calls.reads = calls.sliceReads + calls.nodeReads;
  return calls;
}

export function callsSince(before: ApiCalls, after: ApiCalls): ApiCalls {
  return {
    reads: after.reads - before.reads,
    sliceReads: after.sliceReads - before.sliceReads,
    nodeReads: after.nodeReads - before.nodeReads,
    watches: after.watches - before.watches,
    writes: after.writes - before.writes,
    nodeWrites: after.nodeWrites - before.nodeWrites,
  };
}

/**
 * Syncs run so far by every replica (`slicekeeper_syncs_total`, all outcomes summed): more syncs
 * than changes means syncs that found nothing to do.
 */
export async function syncsRun(metricsUrls: readonly string[]): Promise<number> {
  let total = 0;
  for (const url of metricsUrls) {
    const text = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
    for (const line of text.split('\n')) {
      if (line.startsWith('slicekeeper_syncs_total{')) total += Number(line.split(' ').at(-1));
    }
  }
  return total;
}

/**
 * Waits until the replicas' sync count has not moved for `quietMs` (the syncs a phase's last
 * writes asked for through the watch have run), at most `timeoutMs`; returns the count.
 */
export async function settledSyncs(
  metricsUrls: readonly string[],
  quietMs = 500,
  timeoutMs = 15_000,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = await syncsRun(metricsUrls);
  let stableSince = Date.now();
  while (Date.now() - stableSince < quietMs && Date.now() < deadline) {
    await sleep(100);
    const now = await syncsRun(metricsUrls);
    if (now !== last) {
      last = now;
      stableSince = Date.now();
    }
  }
  return last;
}

/** `used_memory` from Redis's `INFO memory`, bytes. */
export async function redisUsedMemory(redis: RedisClient): Promise<number> {
  return (await redisMemory(redis)).usedMemoryBytes;
}

/**
 * Redis's memory from `INFO memory`: `used_memory` and two of its parts, the dataset (keys and
 * values) and the normal clients' buffers (query and output buffers of every connection).
 */
export interface RedisMemory {
  usedMemoryBytes: number;
  datasetBytes: number;
  clientsBytes: number;
}

export async function redisMemory(redis: RedisClient): Promise<RedisMemory> {
  const info = await redis.info('memory');
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:(\\d+)`, 'm').exec(info);
    if (match?.[1] === undefined) throw new Error(`INFO memory has no ${name}`);
    return Number(match[1]);
  };
  return {
    usedMemoryBytes: field('used_memory'),
    datasetBytes: field('used_memory_dataset'),
    clientsBytes: field('mem_clients_normal'),
  };
}

/**
 * Redis's `INFO commandstats`, summed and per command. Redis counts a command a script runs as a
 * command of its own, and its time both there and in the script's (`evalsha`) time.
 */
export interface RedisCommandStats {
  /** Commands run, those run by scripts included. */
  calls: number;
  /** Scripts run (`eval`, `evalsha`, `fcall`): each one request of a client. */
  scriptCalls: number;
  byCommand: Record<string, { calls: number; usec: number }>;
}

const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

function commandStats(byCommand: RedisCommandStats['byCommand']): RedisCommandStats {
  let calls = 0;
  let scriptCalls = 0;
  for (const [command, stats] of Object.entries(byCommand)) {
    calls += stats.calls;
    if (SCRIPT_COMMANDS.has(command)) scriptCalls += stats.calls;
  }
  return { calls, scriptCalls, byCommand };
}

/** Redis's `INFO commandstats` so far. */
export async function redisCommandStats(redis: RedisClient): Promise<RedisCommandStats> {
  const byCommand: RedisCommandStats['byCommand'] = {};
  const info = await redis.info('commandstats');
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    const [, command = '', calls = '0', usec = '0'] = match;
    byCommand[command] = { calls: Number(calls), usec: Number(usec) };
  }
  return commandStats(byCommand);
}

/** The commands run between two `redisCommandStats()` readings. */
export function commandStatsSince(
  before: RedisCommandStats,
  after: RedisCommandStats,
): RedisCommandStats {
  const byCommand: RedisCommandStats['byCommand'] = {};
  for (const [command, now] of Object.entries(after.byCommand)) {
    const then = before.byCommand[command] ?? { calls: 0, usec: 0 };
    if (now.calls === then.calls) continue;
    byCommand[command] = { calls: now.calls - then.calls, usec: now.usec - then.usec };
  }
  return commandStats(byCommand);
}

/** What a stretch of a run cost. */
export interface Spent {
  api: ApiCalls;
  /** Syncs run by every replica, those the stretch's writes asked for through the watch included. */
  syncs: number;
  /** CPU seconds per process (see {@link cpuSeconds}). */
  cpuSeconds: Record<string, number>;
  redis: RedisCommandStats;
}

/**
 * Starts counting what a stretch of a run costs: API calls, syncs, CPU per process and Redis
 * commands. The function it returns ends the stretch: CPU at once, the rest once the syncs
 * have settled.
 */
export async function startCounting(
  emulator: EmulatorClient,
  redis: RedisClient,
  syncerMetrics: readonly string[],
): Promise<() => Promise<Spent>> {
  const api = await apiCalls(emulator);
  const syncs = await syncsRun(syncerMetrics);
  const cpu = await cpuSeconds();
  const commands = await redisCommandStats(redis);
  return async () => {
    const cpuSpent = cpuSince(cpu, await cpuSeconds());
    const syncsSpent = (await settledSyncs(syncerMetrics)) - syncs;
    return {
      api: callsSince(api, await apiCalls(emulator)),
      syncs: syncsSpent,
      cpuSeconds: cpuSpent,
      redis: commandStatsSince(commands, await redisCommandStats(redis)),
    };
  };
}

const running = new Set<System>();

/**
 * Runs `body` against a fresh System and closes it afterwards, also when `body` fails or the
 * run is interrupted (the services run in their own process groups: a Ctrl-C does not reach
 * them).
 */
export async function withSystem<T>(
  options: SystemOptions,
  body: (system: System) => Promise<T>,
): Promise<T> {
  const system = await System.start(options);
  running.add(system);
  try {
    return await body(system);
  } finally {
    running.delete(system);
    await system.close();
  }
}

let interrupted = false;

/**
 * On SIGINT or SIGTERM: closes the running Systems, then exits. Meanwhile the bench's own loops
 * fail as the system goes away under them (the soak's churn publishing to a driver already
 * stopped); their errors are reported in one line each and do not end the process before the
 * Systems are closed, which would leave their services running.
 */
export function closeSystemsOnSignal(): void {
  const whileClosing = (error: unknown): void => {
    progress(`while stopping: ${errorMessage(error)}`);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) return;
    interrupted = true;
    process.on('uncaughtException', whileClosing);
    process.on('unhandledRejection', whileClosing);
    progress(`${signal}: stopping the system under test…`);
    void Promise.all([...running].map((system) => system.close())).finally(() => {
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const CLOCK_TICKS = 100;

/** A child process of the bench: its pid and name (see {@link cpuSeconds}). */
interface ChildProcess {
  pid: string;
  name: string;
  /** The fields of /proc/<pid>/stat after the command: state, ppid, … */
  stat: string[];
}

/**
 * The bench's child processes, from /proc on Linux; none elsewhere. A service is named by its app
 * (`slice-syncer`) whether it runs from its sources (tsx) or compiled (dist/main.js), as the
 * images run it.
 */
async function childProcesses(): Promise<ChildProcess[]> {
  let pids: string[] = [];
  try {
    pids = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  } catch {
    return [];
  }
  const children: ChildProcess[] = [];
  await Promise.all(
    pids.map(async (pid) => {
      try {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        // After the command in parentheses: state, ppid, …, utime (12th), stime (13th).
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[1]) !== process.pid) return;
        const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ');
        const app = /(?:^|[/ ])apps\/([^/]+)\/(?:src\/main\.ts|dist\/main\.js)/.exec(cmdline)?.[1];
        const name = app ?? (cmdline.includes('redis-server') ? 'redis' : 'other');
        children.push({ pid, name, stat: fields });
      } catch {
        // Gone meanwhile.
      }
    }),
  );
  return children;
}

/**
 * CPU seconds used so far by this process (`bench`) and by each service it started, by app name
 * (replicas summed; `redis` for redis-server), from /proc on Linux; only `bench` elsewhere.
 */
export async function cpuSeconds(): Promise<Record<string, number>> {
  const own = process.cpuUsage();
  const totals: Record<string, number> = { bench: (own.user + own.system) / 1e6 };
  for (const child of await childProcesses()) {
    const seconds = (Number(child.stat[11]) + Number(child.stat[12])) / CLOCK_TICKS;
    totals[child.name] = (totals[child.name] ?? 0) + seconds;
  }
  return totals;
}

/**
 * A process's resident set from /proc/<pid>/status, bytes: all of it (VmRSS) and its file-backed
 * part (RssFile: mapped files such as the node binary, clean pages that other processes mapping
 * the same file share and that the kernel drops under memory pressure).
 */
export async function residentSet(
  pid: number | string,
): Promise<{ rssBytes: number; rssFileBytes: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    if (match?.[1] === undefined) throw new Error(`/proc/${pid}/status has no ${field}`);
    return Number(match[1]) * 1024;
  };
  return { rssBytes: kib('VmRSS'), rssFileBytes: kib('RssFile') };
}

/**
 * Resident set (VmRSS) of this process (`bench`) and of each service it started, bytes, named
 * as by {@link cpuSeconds} (replicas summed).
 */
export async function rssBytes(): Promise<Record<string, number>> {
  const totals: Record<string, number> = { bench: process.memoryUsage.rss() };
  for (const child of await childProcesses()) {
    try {
      totals[child.name] = (totals[child.name] ?? 0) + (await residentSet(child.pid)).rssBytes;
    } catch {
      // Gone meanwhile.
    }
  }
  return totals;
}

/** CPU seconds per process between two `cpuSeconds()` readings. */
export function cpuSince(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(after))
    delta[name] = Math.round((seconds - (before[name] ?? 0)) * 100) / 100;
  return delta;
}
