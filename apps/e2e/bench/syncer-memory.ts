/**
 * What the slice-syncer's watch-fed caches cost in memory: a freshly started syncer in an empty
 * cluster (idle) against one freshly started once the cluster holds the bench's slices and Nodes
 * (its caches hold them all, it has synced nothing yet), per 1,000 slices. Resident set from
 * /proc/<pid>/status (VmRSS, and RssFile for its file-backed part), heap used from the syncer's
 * /metrics.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { readMetric } from '@slicekeeper/testing';
import type { ServiceName, System } from '../src/harness';
import { round } from './stats';
import { apiCalls, callsSince, residentSet } from './support';
import type { ApiCalls } from './support';

/** A process's memory: the least of a few readings a second apart. */
export interface MemoryReading {
  rssBytes: number;
  /** The file-backed part of `rssBytes` (the node binary's and other mapped files' pages). */
  rssFileBytes: number;
  heapUsedBytes: number;
}

export interface SyncerMemoryResult {
  /** Slices and Nodes in the cluster (so in the loaded syncer's caches). */
  slices: number;
  nodes: number;
  /** A fresh syncer, empty cluster. */
  idle: MemoryReading;
  /** A fresh syncer (restarted) whose caches hold every slice and Node. */
  loaded: MemoryReading;
  /** The syncer that ran every phase, just before that restart (caches plus its working set). */
  afterPhases: MemoryReading;
  /** (loaded − idle) / slices × 1,000. */
  rssBytesPer1000Slices: number;
  heapUsedBytesPer1000Slices: number;
  /** API calls of the restarted syncer's first lists: what each anti-entropy relist costs. */
  startApi: ApiCalls;
  /** Restart until ready (its first lists in), s. */
  secondsToReady: number;
}

/** Settling time before the readings (startup garbage, the last sync's writes). */
const SETTLE_MS = 2000;
const READINGS = 5;

/** The system's one syncer replica (the memory readings are of a single process). */
function onlySyncer(system: System): ServiceName {
  const [syncer, ...others] = system.syncers;
  if (syncer === undefined || others.length !== 0) {
    throw new Error('syncer memory: one syncer replica expected');
  }
  return syncer;
}

/**
 * The syncer's memory after `SETTLE_MS`: the least of `READINGS` readings a second apart (heap
 * used includes garbage until a collection runs).
 */
export async function readSyncerMemory(system: System, probePort: number): Promise<MemoryReading> {
  const pid = system.servicePid(onlySyncer(system));
  if (pid === undefined) throw new Error('syncer memory: the syncer is not running');
  const metricsUrl = `http://127.0.0.1:${probePort}/metrics`;
  await sleep(SETTLE_MS);
  const readings: MemoryReading[] = [];
  for (let i = 0; i < READINGS; i++) {
    if (i > 0) await sleep(1000);
    readings.push({
      ...(await residentSet(pid)),
      heapUsedBytes: await readMetric(metricsUrl, 'nodejs_heap_size_used_bytes'),
    });
  }
  return {
    rssBytes: Math.min(...readings.map((r) => r.rssBytes)),
    rssFileBytes: Math.min(...readings.map((r) => r.rssFileBytes)),
    heapUsedBytes: Math.min(...readings.map((r) => r.heapUsedBytes)),
  };
}

/**
 * Reads the working syncer, restarts it, counts the API calls of its first lists and reads the
 * fresh one; `idle` was read from the same service in the same System before any Node existed.
 */
export async function measureLoadedSyncer(options: {
  system: System;
  probePort: number;
  idle: MemoryReading;
  nodes: number;
}): Promise<SyncerMemoryResult> {
  const { system, probePort, idle } = options;
  const syncer = onlySyncer(system);
  const slices = (await system.emulator.slices()).length;
  const afterPhases = await readSyncerMemory(system, probePort);
  await system.stopService(syncer);
  const before = await apiCalls(system.emulator);
  const started = Date.now();
  // Ready (its `started` line) only once both first lists are in.
  await system.startService(syncer);
  const secondsToReady = (Date.now() - started) / 1000;
  const loaded = await readSyncerMemory(system, probePort);
  const startApi = callsSince(before, await apiCalls(system.emulator));
  const per1000 = (bytes: number): number => Math.round((bytes / slices) * 1000);
  return {
    slices,
    nodes: options.nodes,
    idle,
    loaded,
    afterPhases,
    rssBytesPer1000Slices: per1000(loaded.rssBytes - idle.rssBytes),
    heapUsedBytesPer1000Slices: per1000(loaded.heapUsedBytes - idle.heapUsedBytes),
    startApi,
    secondsToReady: round(secondsToReady, 1),
  };
}
