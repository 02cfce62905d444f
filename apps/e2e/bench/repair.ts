/**
 * External-delete repair: managed slices deleted behind slicekeeper's back, one at a time,
 * through the emulator's HTTP API as `kubectl delete` deletes them; each is timed from the
 * DELETE's answer until a slice of the same pool is back, as a watch on ResourceSlices sees it.
 * The syncer learns of the delete from its own watch (no resync, no list).
 */
import { performance } from 'node:perf_hooks';
import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import type { ResourceSlice, System } from '../src/harness';
import { SliceWatch } from './latency';
import type { WatchEvent } from './latency';
import { summarize } from './stats';
import {
  apiCalls,
  callsSince,
  cpuSeconds,
  cpuSince,
  progress,
  settledSyncs,
  syncsRun,
} from './support';
import type { ApiCalls } from './support';

export interface RepairResult {
  /** Slices deleted, one at a time, each of another key. */
  deletes: number;
  /** DELETE answered → a slice of the same pool seen again through a watch, ms. */
  p50ms: number;
  p99ms: number;
  maxMs: number;
  /** Every API call while deleting and repairing, the bench's deletes included. */
  api: ApiCalls;
  /** Slice writes by slicekeeper: `api.writes` minus the bench's deletes. */
  syncerWrites: number;
  /** Syncs the syncer ran meanwhile. */
  syncs: number;
  wallSeconds: number;
  /** CPU seconds per process while deleting and repairing. */
  cpuSeconds: Record<string, number>;
}

export interface RepairOptions {
  system: System;
  /** The published keys; `deletes` of them, spread over the set, each lose one slice. */
  keys: readonly SliceKey[];
  deletes: number;
  /** The syncer replicas' /metrics. */
  syncerMetrics: readonly string[];
  /** How long one repair may take before the bench fails, ms. @defaultValue 30000 */
  timeoutMs?: number;
}

const COLLECTION = '/apis/resource.k8s.io/v1/resourceslices';

export async function measureRepair(options: RepairOptions): Promise<RepairResult> {
  const { system } = options;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const step = Math.max(1, Math.floor(options.keys.length / options.deletes));
  const chosen = new Set(
    options.keys
      .filter((_, i) => i % step === 0)
      .slice(0, options.deletes)
      .map(keyId),
  );
  // The victims' names, read before anything is counted: the bench reads nothing while timing.
  const victims = new Map<string, ResourceSlice>();
  for (const slice of await system.emulator.slices()) {
    const id = keyId({ node: slice.spec.nodeName ?? '', driver: slice.spec.driver });
    if (chosen.has(id) && !victims.has(id)) victims.set(id, slice);
  }
  if (victims.size < chosen.size) {
    throw new Error(`repair: ${chosen.size - victims.size} of the chosen keys have no slice`);
  }
  const watch = await SliceWatch.open(system.emulator.url);
  try {
    const before = await apiCalls(system.emulator);
    const syncsBefore = await syncsRun(options.syncerMetrics);
    const cpuBefore = await cpuSeconds();
    const start = performance.now();
    const samples: number[] = [];
    for (const victim of victims.values()) {
      samples.push(await deleteAndTime(system.emulator.url, watch, victim, timeoutMs));
      if (samples.length % 25 === 0) progress(`repair: ${samples.length} of ${victims.size}`);
    }
    const wallSeconds = (performance.now() - start) / 1000;
    const cpu = cpuSince(cpuBefore, await cpuSeconds());
    const syncs = (await settledSyncs(options.syncerMetrics)) - syncsBefore;
    const calls = callsSince(before, await apiCalls(system.emulator));
    const summary = summarize(samples);
    return {
      deletes: samples.length,
      p50ms: summary.p50,
      p99ms: summary.p99,
      maxMs: summary.max,
      api: calls,
      syncerWrites: calls.writes - samples.length,
      syncs,
      wallSeconds: Math.round(wallSeconds * 100) / 100,
      cpuSeconds: cpu,
    };
  } finally {
    watch.close();
  }
}

/** Deletes `victim`; resolves with the ms from the DELETE's answer until its pool is back. */
async function deleteAndTime(
  emulatorUrl: string,
  watch: SliceWatch,
  victim: ResourceSlice,
  timeoutMs: number,
): Promise<number> {
  const samePool = (slice: ResourceSlice): boolean =>
    slice.metadata.name !== victim.metadata.name &&
    slice.spec.driver === victim.spec.driver &&
    slice.spec.nodeName === victim.spec.nodeName &&
    slice.spec.pool.name === victim.spec.pool.name;
  let timer: NodeJS.Timeout | undefined;
  // Listening before the DELETE is sent: no event can be missed.
  const back = new Promise<number>((resolve, reject) => {
    watch.onEvent = (event: WatchEvent, at: number) => {
      if (event.type === 'ADDED' && samePool(event.object)) resolve(at);
    };
    timer = setTimeout(() => {
      reject(
        new Error(`repair: pool ${victim.spec.pool.name} not back after ${timeoutMs / 1000} s`),
      );
    }, timeoutMs);
  });
  try {
    const response = await fetch(new URL(`${COLLECTION}/${victim.metadata.name}`, emulatorUrl), {
      method: 'DELETE',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      // What `kubectl delete resourceslice <name>` sends.
      body: JSON.stringify({
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: 'Background',
      }),
      signal: AbortSignal.timeout(10_000),
    });
    await response.text();
    const answeredAt = performance.now();
    if (!response.ok) throw new Error(`DELETE ${victim.metadata.name}: ${response.status}`);
    const seenAt = await back;
    // The recreate cannot precede the delete; a watch chunk read before the answer was
    // handled would only show as ≤ 0.
    return Math.max(0, seenAt - answeredAt);
  } finally {
    clearTimeout(timer);
    watch.onEvent = undefined;
    watch.check();
  }
}
