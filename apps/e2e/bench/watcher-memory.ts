/**
 * Memory per stream in the plugin-watcher: in-process drivers registered through the API in two
 * halves, the watcher's resident set and heap (its /metrics) before, once the first half has
 * settled, right after it streams from all of them, and once that has settled. Per stream is the
 * difference the second half makes, divided by its streams: the marginal cost, free of what the
 * first streams pay once. Connecting streams at once leaves garbage that V8 returns to the
 * system only after a while (its memory reducer, once allocation is quiet): the settled figure
 * is what holding the streams costs, the one right after connecting the peak a memory limit
 * must also allow.
 *
 * The watcher runs as its image runs it in the shared deployment: compiled (`node
 * dist/main.js`, production dependencies) and under the memory limit of
 * {@link WATCHER_MANIFEST}, in a memory cgroup. Both change the figure several-fold: Node sizes
 * V8's young generation from the memory it may use (Node 24 on an unconstrained 24 GiB host
 * commits 128 MiB to it), and tsx's keep-names helper gives every closure of the TypeScript
 * sources a property array of its own. Where no cgroup can be made the limit is left out and
 * the results say so.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, readMetric } from '@slicekeeper/testing';
import { gpuInventory, inParallel, ProductionTree } from '../src/harness';
import { podCgroups, WATCHER_POD } from './pod-limits';
import { round } from './stats';
import type { System } from '../src/harness';
import { progress, withSystem } from './support';

export interface WatcherMemoryResult {
  streams: number;
  /** Node.js version the watcher ran on. */
  node: string;
  /** Runtime flags the watcher ran with (BENCH_WATCHER_NODE_OPTIONS), if any. */
  nodeOptions?: string;
  /**
   * The memory limit the watcher ran under (its manifest's), or why it ran without one.
   */
  limit: { bytes: number; enforcedBy: string } | { unconstrained: string };
  /** Seconds from registering the second half of the drivers until the watcher streamed from all. */
  secondsToStream: number;
  /** Least of 5 readings a second apart, before the first registration. */
  rssBeforeBytes: number;
  /** With half the streams open, settled (least of 5 readings). */
  rssHalfwayBytes: number;
  /**
   * Right after the second half of the streams opened (2 s later, least of 5 readings), per
   * stream of that half: the marginal cost of a stream at its peak.
   */
  connected: MemoryPerStream;
  /**
   * After SETTLE_SECONDS more without new streams (least of 5 readings), per stream of the
   * second half: the marginal cost of holding a stream. Costs paid once (code the first
   * streams run and the binary pages it touches, lazily made pools) fall in the first half.
   */
  settled: MemoryPerStream;
  /** The same reading per stream since before the first registration: fixed costs included. */
  average: MemoryPerStream;
  settleSeconds: number;
}

export interface MemoryPerStream {
  rssBytes: number;
  rssBytesPerStream: number;
  heapUsedBytesPerStream: number;
}

/**
 * Runtime flags for the watcher (BENCH_WATCHER_NODE_OPTIONS, e.g. `--max-semi-space-size=1`), to
 * see what a flag would change; none by default, as the image runs it.
 */
const NODE_OPTIONS = process.env.BENCH_WATCHER_NODE_OPTIONS ?? '';

/** How long the watcher is left alone before the settled reading, seconds. */
const SETTLE_SECONDS = 60;

const DRIVERS = ['gpu.example.com', 'nic.example.com'] as const;

/** The manifest whose memory limit the watcher runs under: the shared watcher's Deployment. */
export const WATCHER_MANIFEST = WATCHER_POD.manifest;

export async function measureWatcherMemory(streams: number): Promise<WatcherMemoryResult> {
  const nodes = Array.from({ length: Math.ceil(streams / DRIVERS.length) }, (_, i) => `node-${i}`);
  const plugins = nodes
    .flatMap((node) => DRIVERS.map((driver) => ({ node, driver })))
    .slice(0, streams);
  const probePort = await freePort();
  const metricsUrl = `http://127.0.0.1:${probePort}/metrics`;
  const production = await ProductionTree.prepare(progress);
  const pod = await podCgroups('bench-watcher-memory', { 'plugin-watcher': WATCHER_POD });
  const limit =
    'bytes' in pod.limits
      ? { bytes: pod.limits.bytes['plugin-watcher'] ?? 0, enforcedBy: pod.limits.enforcedBy }
      : pod.limits;
  // No syncer: only the watcher's memory is measured, and the machine is small.
  try {
    return await withSystem(
      {
        name: 'bench-watcher-memory',
        nodes,
        syncerReplicas: 0,
        watcherEnv: {
          PROBE_PORT: String(probePort),
          ...(NODE_OPTIONS === '' ? {} : { NODE_OPTIONS }),
        },
        production,
        memoryCgroups: pod.cgroups,
      },
      (system) => measure(system),
    );
  } finally {
    await production.close();
    await pod.close();
  }

  async function measure(system: System): Promise<WatcherMemoryResult> {
    // The least of a few readings a second apart: heap used includes garbage until a GC runs.
    const memory = async (): Promise<{ rss: number; heap: number }> => {
      const readings: { rss: number; heap: number }[] = [];
      for (let i = 0; i < 5; i++) {
        if (i > 0) await sleep(1000);
        readings.push({
          rss: await readMetric(metricsUrl, 'process_resident_memory_bytes'),
          heap: await readMetric(metricsUrl, 'nodejs_heap_size_used_bytes'),
        });
      }
      return {
        rss: Math.min(...readings.map((r) => r.rss)),
        heap: Math.min(...readings.map((r) => r.heap)),
      };
    };
    // The series is absent until a stream is streaming.
    const streaming = (): Promise<number> =>
      readMetric(metricsUrl, 'slicekeeper_watcher_streams', 'state="streaming"').catch(() => 0);
    /** Registers `batch` and waits until the watcher streams from `streams` drivers in all. */
    const connect = async (batch: typeof plugins, streams: number): Promise<void> => {
      let registered = 0;
      await inParallel(batch, 16, async (plugin) => {
        await system.inProcessDriver({ ...plugin, inventory: gpuInventory({ rev: 0 }) });
        registered++;
        if (registered % 250 === 0) progress(`watcher memory: ${registered} registered`);
      });
      await system.until(
        `the watcher to stream from ${streams} drivers`,
        async () => (await streaming()) >= streams,
        300_000,
      );
    };
    const settle = async (): Promise<{ rss: number; heap: number }> => {
      progress(`watcher memory: ${SETTLE_SECONDS} s for the watcher to settle…`);
      await sleep(SETTLE_SECONDS * 1000);
      return memory();
    };
    await sleep(2000);
    const before = await memory();
    const half = Math.floor(plugins.length / 2);
    progress(`watcher memory: registering ${half} in-process drivers…`);
    await connect(plugins.slice(0, half), half);
    const halfway = await settle();
    progress(`watcher memory: registering ${plugins.length - half} more…`);
    const started = Date.now();
    await connect(plugins.slice(half), plugins.length);
    const secondsToStream = (Date.now() - started) / 1000;
    const perStream = (
      from: { rss: number; heap: number },
      after: { rss: number; heap: number },
      streams: number,
    ): MemoryPerStream => ({
      rssBytes: after.rss,
      rssBytesPerStream: Math.round((after.rss - from.rss) / streams),
      heapUsedBytesPerStream: Math.round((after.heap - from.heap) / streams),
    });
    // Let the last snapshot writes land before reading the resident set.
    await sleep(2000);
    const connected = perStream(halfway, await memory(), plugins.length - half);
    const full = await settle();
    const settled = perStream(halfway, full, plugins.length - half);
    const average = perStream(before, full, plugins.length);
    return {
      streams: plugins.length,
      node: process.version,
      ...(NODE_OPTIONS === '' ? {} : { nodeOptions: NODE_OPTIONS }),
      limit,
      secondsToStream: round(secondsToStream, 1),
      rssBeforeBytes: before.rss,
      rssHalfwayBytes: halfway.rss,
      connected,
      settled,
      average,
      settleSeconds: SETTLE_SECONDS,
    };
  }
}
