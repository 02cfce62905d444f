/**
 * A rolling restart of every driver, as a DaemonSet update does it: a batch of nodes at a time,
 * each of their drivers deregisters (DELETE /v1/plugins/{node}/{driver}, as a driver does on
 * SIGTERM: the key's removal is recorded and its slices go after the API's REMOVAL_GRACE unless
 * it registers again), is away for a while (its pod is replaced), then registers again
 * (POST /v1/plugins, probed over gRPC) and sends the same inventory on the stream the watcher
 * opens. The next batch starts once the previous one is registered again and streaming (ready).
 *
 * Both API calls go to the real registration API; each driver name is served by one in-process
 * gRPC server that every node's registration dials. The watcher's part (store the snapshot the
 * re-opened stream brings, ask for the sync it owes, record the stream state) is played with its
 * own libs (`Producer.reopenStream`): the plugin-watcher is stopped, and as many gRPC streams as
 * keys do not fit the machine. A watch on every ResourceSlice times each key's slices gone →
 * back.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import { inParallel } from '../src/harness';
import type { System } from '../src/harness';
import { SliceWatch } from './latency';
import type { WatchEvent } from './latency';
import { round, summarize } from './stats';
import type { Summary } from './stats';
import { progress, startCounting } from './support';
import type { ApiCalls, RedisCommandStats } from './support';
import { DRIVERS, readStatuses, untilDrained } from './sync-throughput';
import type { Producer } from './sync-throughput';

export interface RollingRestartOptions {
  system: System;
  producer: Producer;
  /** Every key, all published and synced. */
  keys: readonly SliceKey[];
  syncerMetrics: readonly string[];
  /** Nodes restarted at once, a share of all (a DaemonSet's maxUnavailable). */
  batchShare: number;
  /** From a driver's deregistration answered to its registration again, ms (pod replacement). */
  restartGapMs: number;
  /**
   * The registration API's REMOVAL_GRACE, ms: after the last batch the watch stays open this
   * long and 5 s more, so that a withdrawal the grace would cause is seen.
   */
  removalGraceMs: number;
  /** API requests in flight at once. @defaultValue 32 */
  parallel?: number;
}

export interface RollingRestartResult {
  nodes: number;
  keys: number;
  batches: number;
  nodesPerBatch: number;
  restartGapMs: number;
  removalGraceMs: number;
  /** First DELETE → the last batch registered again and streaming, s. */
  rolloutSeconds: number;
  /** First DELETE → every key synced after its registration again and the queue drained, s. */
  settledSeconds: number;
  /** Per batch: deregistrations, away time, registrations, s. */
  batchSeconds: Summary;
  deregisterSeconds: Summary;
  registerSeconds: Summary;
  /**
   * Per key, its DELETE answered → its POST answered, ms: the restart gap plus the wait for the
   * registration API, which serves the batch's requests one after another.
   */
  awayMs: Summary;
  /** Keys away longer than the REMOVAL_GRACE: their slices are withdrawn, by design. */
  keysAwayBeyondGrace: number;
  /** The registration API's pace over the batches' request stages (DELETE and POST), per s. */
  apiRequestsPerSecond: number;
  /** Whether the slice watch ran (its list of every slice may time out). */
  watched: boolean;
  /** The watch's list of every slice and its start, s. */
  watchOpenSeconds: number;
  /** Keys with no slice when the run ended (after the grace had passed). Goal: 0. */
  keysWithoutSlices: number;
  /** Keys whose last sync status names no slice, at the end. */
  statusWithoutSlices: number;
  /** Keys whose every slice was deleted at some moment, and the nodes they are on. */
  keysEverUnpublished: number;
  nodesEverUnpublished: number;
  /**
   * The longest time a key had no slice, ms; 0 when none was ever unpublished; NaN when not
   * watched and some slice was written.
   */
  longestUnpublishedMs: number;
  /** Slice watch events during the run, by type. */
  watchEvents: Record<string, number>;
  /** What the registration API answered, by status code (every try: 429 and 5xx are retried). */
  deregisterAnswers: Record<string, number>;
  registerAnswers: Record<string, number>;
  /** What the watcher's stores of the re-opened streams did (`unchanged`, `unsynced`, …). */
  storeResults: Record<string, number>;
  /** The keys' sync outcomes when the run ended. */
  outcomes: Record<string, number>;
  /** API calls from the first DELETE until the end (grace included). */
  api: ApiCalls;
  syncs: number;
  /** CPU seconds per process from the first DELETE until the end. */
  cpuSeconds: Record<string, number>;
  /** Wall time the CPU figures cover, s. */
  wallSeconds: number;
  redis: RedisCommandStats;
  /** What ran for real and what the bench played. */
  real: string[];
  simulated: string[];
}

/** Tracks every key's slices through the watch: when a key has none, and for how long. */
class PublishedTracker {
  /** Key id → names of its slices. */
  private readonly live = new Map<string, Set<string>>();
  /** Key id → since when it has no slice (performance.now()). */
  private readonly emptySince = new Map<string, number>();
  readonly gapsMs = new Map<string, number>();
  readonly events: Record<string, number> = {};

  constructor(initial: Map<string, Set<string>>) {
    for (const [id, names] of initial) {
      this.live.set(id, new Set(names));
      if (names.size === 0) this.emptySince.set(id, performance.now());
    }
  }

  onEvent(event: WatchEvent, at: number): void {
    this.events[event.type] = (this.events[event.type] ?? 0) + 1;
    const { spec, metadata } = event.object;
    if (spec.nodeName === undefined) return;
    const id = keyId({ node: spec.nodeName, driver: spec.driver });
    const names = this.live.get(id) ?? new Set<string>();
    this.live.set(id, names);
    if (event.type === 'DELETED') {
      names.delete(metadata.name);
      if (names.size === 0 && !this.emptySince.has(id)) this.emptySince.set(id, at);
    } else if (event.type === 'ADDED' || event.type === 'MODIFIED') {
      names.add(metadata.name);
      this.closeGap(id, at);
    }
  }

  /** Keys without a slice now; their gaps so far count as gaps. */
  finish(at: number): string[] {
    const empty = [...this.emptySince.keys()];
    for (const id of empty) this.closeGap(id, at);
    return empty;
  }

  private closeGap(id: string, at: number): void {
    const since = this.emptySince.get(id);
    if (since === undefined) return;
    this.emptySince.delete(id);
    this.gapsMs.set(id, Math.max(this.gapsMs.get(id) ?? 0, at - since));
  }
}

const count = (tally: Record<string, number>, key: string): void => {
  tally[key] = (tally[key] ?? 0) + 1;
};

export async function measureRollingRestart(
  options: RollingRestartOptions,
): Promise<RollingRestartResult> {
  const { system, producer, keys } = options;
  const parallel = options.parallel ?? 32;
  const nodes = [...new Set(keys.map((k) => k.node))];
  const byNode = new Map<string, SliceKey[]>();
  for (const key of keys) byNode.set(key.node, [...(byNode.get(key.node) ?? []), key]);
  const nodesPerBatch = Math.max(1, Math.ceil(nodes.length * options.batchShare));
  const batches: SliceKey[][] = [];
  for (let i = 0; i < nodes.length; i += nodesPerBatch) {
    batches.push(nodes.slice(i, i + nodesPerBatch).flatMap((node) => byNode.get(node) ?? []));
  }

  // What each key has published, from its last sync: nothing writes until the first DELETE.
  const statuses = await readStatuses(producer.redis, keys);
  const initial = new Map<string, Set<string>>();
  keys.forEach((key, i) => initial.set(keyId(key), new Set(statuses[i]?.slices ?? [])));
  const tracker = new PublishedTracker(initial);
  progress(`rolling restart: watching ${keys.length} keys' slices…`);
  const opening = performance.now();
  let watch: SliceWatch | undefined;
  try {
    watch = await SliceWatch.open(system.emulator.url);
    watch.onEvent = (event, at) => {
      tracker.onEvent(event, at);
    };
  } catch (error) {
    // Its list of every slice has 10 s: without the watch, no write means no slice ever went.
    const reason = error instanceof Error ? error.message : String(error);
    progress(`rolling restart: no watch (${reason}); judged by the API writes alone`);
  }
  const watchOpenSeconds = round((performance.now() - opening) / 1000, 1);

  // One gRPC server per driver name, dialled by every node's registration of that driver.
  const servers = DRIVERS.map(
    (driver) =>
      new DriverServer({
        driverName: driver,
        endpoint: `unix://${join(system.stateDir, 'sockets', `rollout-${driver}.sock`)}`,
      }),
  );
  const endpoints = new Map<string, string>();
  try {
    for (const [i, server] of servers.entries()) {
      endpoints.set(DRIVERS[i] ?? '', await server.start());
    }
    const deregisterAnswers: Record<string, number> = {};
    const registerAnswers: Record<string, number> = {};
    const storeResults: Record<string, number> = {};
    const registeredAt = new Map<string, number>();
    const deregisteredAt = new Map<string, number>();
    const awayMs: number[] = [];
    const batchSeconds: number[] = [];
    const deregisterSeconds: number[] = [];
    const registerSeconds: number[] = [];

    const stop = await startCounting(system.emulator, producer.redis, options.syncerMetrics);
    const started = performance.now();
    const startedAt = Date.now();
    let lastDeregistration = startedAt;
    for (const [index, batch] of batches.entries()) {
      const batchStart = performance.now();
      await inParallel(batch, parallel, async (key) => {
        await deregister(system, deregisterAnswers, key);
        deregisteredAt.set(keyId(key), Date.now());
      });
      lastDeregistration = Date.now();
      const deregistered = performance.now();
      // Every driver of the batch is away at least `restartGapMs`.
      await sleep(options.restartGapMs);
      const away = performance.now();
      await inParallel(batch, parallel, async (key) => {
        const endpoint = endpoints.get(key.driver) ?? '';
        // Its `registered` sync may finish before the answer arrives.
        registeredAt.set(keyId(key), Date.now());
        await register(system, registerAnswers, key, endpoint);
        awayMs.push(Date.now() - (deregisteredAt.get(keyId(key)) ?? 0));
        count(storeResults, await producer.reopenStream(key, endpoint));
      });
      watch?.check();
      const done = performance.now();
      deregisterSeconds.push((deregistered - batchStart) / 1000);
      registerSeconds.push((done - away) / 1000);
      batchSeconds.push((done - batchStart) / 1000);
      progress(
        `rolling restart: batch ${index + 1}/${batches.length} (${batch.length} keys) ready in ${round((done - batchStart) / 1000, 1)} s; ${tracker.gapsMs.size} keys unpublished so far`,
      );
    }
    const rolloutSeconds = (performance.now() - started) / 1000;
    await untilSettled(producer, keys, registeredAt);
    const settledSeconds = (performance.now() - started) / 1000;
    const graceEnds = lastDeregistration + options.removalGraceMs + 5000;
    progress(
      `rolling restart: rolled out in ${round(rolloutSeconds, 1)} s, settled in ${round(settledSeconds, 1)} s; watching until the last removal's grace has passed…`,
    );
    while (Date.now() < graceEnds) {
      watch?.check();
      await sleep(Math.min(1000, graceEnds - Date.now()));
    }
    await untilDrained(() => producer.unfinishedNodeConditions());
    const wallSeconds = (performance.now() - started) / 1000;
    const { api, syncs, cpuSeconds: cpu, redis } = await stop();
    const withoutSlices = tracker.finish(performance.now());
    const outcomes: Record<string, number> = {};
    let statusWithoutSlices = 0;
    for (const status of await readStatuses(producer.redis, keys)) {
      count(outcomes, status?.outcome ?? 'none');
      if ((status?.slices.length ?? 0) === 0) statusWithoutSlices++;
    }
    const gaps = [...tracker.gapsMs.entries()];
    // Unwatched, only a run without a single write shows that no slice ever went.
    const longestUnpublishedMs =
      watch !== undefined || api.writes === 0
        ? round(Math.max(0, ...gaps.map(([, ms]) => ms)), 1)
        : Number.NaN;
    return {
      nodes: nodes.length,
      keys: keys.length,
      batches: batches.length,
      nodesPerBatch,
      restartGapMs: options.restartGapMs,
      removalGraceMs: options.removalGraceMs,
      rolloutSeconds: round(rolloutSeconds, 1),
      settledSeconds: round(settledSeconds, 1),
      batchSeconds: summarize(batchSeconds),
      awayMs: summarize(awayMs),
      keysAwayBeyondGrace: awayMs.filter((ms) => ms > options.removalGraceMs).length,
      apiRequestsPerSecond: round(
        (2 * keys.length) /
          [...deregisterSeconds, ...registerSeconds].reduce((sum, seconds) => sum + seconds, 0),
        1,
      ),
      deregisterSeconds: summarize(deregisterSeconds),
      registerSeconds: summarize(registerSeconds),
      watched: watch !== undefined,
      watchOpenSeconds,
      keysWithoutSlices: watch === undefined ? statusWithoutSlices : withoutSlices.length,
      statusWithoutSlices,
      keysEverUnpublished: gaps.length,
      nodesEverUnpublished: new Set(gaps.map(([id]) => id.split('/')[0])).size,
      longestUnpublishedMs,
      watchEvents: tracker.events,
      deregisterAnswers,
      registerAnswers,
      storeResults,
      outcomes,
      api,
      syncs,
      cpuSeconds: cpu,
      wallSeconds: round(wallSeconds, 1),
      redis,
      real: [
        'registration API: DELETE /v1/plugins/{node}/{driver} (RegistrationStore.remove with REMOVAL_GRACE, a `removed` sync) and POST /v1/plugins (GetInfo probe over gRPC, RegistrationStore.add, a `registered` sync, NotifyRegistrationStatus), over HTTP with the admin token',
        'slice-syncer, kube emulator, Redis: every sync, write and watch event',
      ],
      simulated: [
        `the drivers: one in-process gRPC server per driver name (${DRIVERS.length}), dialled by every node's registration of that driver, instead of one per key`,
        "the plugin-watcher's re-opened stream (stopped: one gRPC stream per key does not fit the machine): the bench stores the same inventory again with SnapshotWriter, asks for the sync the watcher owes (only when the store says `stored` or `unsynced`) and records the stream state, as the watcher does on its first message",
        `pod replacement: each driver is away ${options.restartGapMs} ms (at least) between its deregistration and its registration; the next batch starts when every driver of the batch is registered again and its stream re-opened; a request answered 429 or 5xx (e.g. 502 when the API's GetInfo probe of the bench-hosted driver server times out) is tried again after ${RETRY_DELAY_MS} ms, as a driver's registrar would`,
      ],
    };
  } finally {
    watch?.close();
    await Promise.all(servers.map((server) => server.close()));
  }
}

/** Tries of a request answered 429 or 5xx (e.g. 502: the API's probe of the driver timed out). */
const TRIES = 10;
const RETRY_DELAY_MS = 1000;

/**
 * A request as a driver makes it, tried again after a second when the API answers 429 or 5xx;
 * every answer is counted in `answers` by status code. The admin token: the bench's nodes were
 * created after the System, without node tokens.
 */
async function apiRequest(
  system: System,
  answers: Record<string, number>,
  method: 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<void> {
  for (let tried = 1; ; tried++) {
    const response = await fetch(new URL(path, system.apiUrl), {
      method,
      headers: {
        authorization: `Bearer ${system.tokens.admin}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      signal: AbortSignal.timeout(30_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    count(answers, String(response.status));
    if (response.status < 300) return;
    const retryable = response.status === 429 || response.status >= 500;
    if (!retryable || tried === TRIES) {
      throw new Error(`${method} ${path}: ${response.status} ${text}`);
    }
    await sleep(RETRY_DELAY_MS);
  }
}

/** What a driver does on SIGTERM: removes its registration (the API's REMOVAL_GRACE applies). */
function deregister(system: System, answers: Record<string, number>, key: SliceKey): Promise<void> {
  return apiRequest(system, answers, 'DELETE', `/v1/plugins/${key.node}/${key.driver}`);
}

/** What a driver does when it starts: registers its endpoint for its node. */
function register(
  system: System,
  answers: Record<string, number>,
  key: SliceKey,
  endpoint: string,
): Promise<void> {
  return apiRequest(system, answers, 'POST', '/v1/plugins', {
    node: key.node,
    driver: key.driver,
    endpoint,
  });
}

/**
 * Waits until no sync job waits or runs and every key has a status recorded after its
 * registration again (whatever the outcome: the run counts outcomes, it does not insist).
 */
async function untilSettled(
  producer: Producer,
  keys: readonly SliceKey[],
  registeredAt: ReadonlyMap<string, number>,
  timeoutMs = 600_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = [...keys];
  while (pending.length > 0) {
    if ((await producer.unfinished()) === 0) {
      const statuses = await readStatuses(producer.redis, pending);
      pending = pending.filter((key, i) => {
        const finished = Date.parse(statuses[i]?.finishedAt ?? '') || 0;
        return finished < (registeredAt.get(keyId(key)) ?? 0);
      });
      if (pending.length === 0) return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `rolling restart: ${pending.length} keys not synced after their registration`,
      );
    }
    await sleep(200);
  }
}
