/**
 * Memory per stream in the plugin-watcher: in-process drivers registered through the API, the
 * watcher's resident set (its /metrics) before, right after it streams from all of them, and
 * once it has settled. Connecting a thousand streams at once leaves garbage that V8 returns to
 * the system only after a while (its memory reducer, once allocation is quiet): the settled
 * figure is what holding the streams costs, the one right after connecting the peak a memory
 * limit must also allow.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, readMetric } from '@slicekeeper/testing';
import { gpuInventory, inParallel } from '../src/harness';
import { round } from './stats';
import { progress, withSystem } from './support';

export interface WatcherMemoryResult {
  streams: number;
  /** Seconds from the first registration until the watcher streamed from every driver. */
  secondsToStream: number;
  /** Least of 5 readings a second apart, before the first registration. */
  rssBeforeBytes: number;
  /** Right after the last stream opened (2 s later, least of 5 readings). */
  connected: MemoryPerStream;
  /** After SETTLE_SECONDS more without new streams (least of 5 readings). */
  settled: MemoryPerStream;
  settleSeconds: number;
}

export interface MemoryPerStream {
  rssBytes: number;
  rssBytesPerStream: number;
  heapUsedBytesPerStream: number;
}

/** How long the watcher is left alone before the settled reading, seconds. */
const SETTLE_SECONDS = 60;

const DRIVERS = ['gpu.example.com', 'nic.example.com'] as const;

export async function measureWatcherMemory(streams: number): Promise<WatcherMemoryResult> {
  const nodes = Array.from({ length: Math.ceil(streams / DRIVERS.length) }, (_, i) => `node-${i}`);
  const plugins = nodes
    .flatMap((node) => DRIVERS.map((driver) => ({ node, driver })))
    .slice(0, streams);
  const probePort = await freePort();
  const metricsUrl = `http://127.0.0.1:${probePort}/metrics`;
  // No syncer: only the watcher's memory is measured, and the machine is small.
  return withSystem(
    {
      name: 'bench-watcher-memory',
      nodes,
      syncerReplicas: 0,
      watcherEnv: { PROBE_PORT: String(probePort) },
    },
    async (system) => {
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
      await sleep(2000);
      const before = await memory();
      progress(`watcher memory: registering ${plugins.length} in-process drivers…`);
      const started = Date.now();
      let registered = 0;
      await inParallel(plugins, 16, async (plugin) => {
        await system.inProcessDriver({ ...plugin, inventory: gpuInventory({ rev: 0 }) });
        registered++;
        if (registered % 500 === 0) progress(`watcher memory: ${registered} registered`);
      });
      await system.until(
        `the watcher to stream from ${plugins.length} drivers`,
        async () => (await streaming()) >= plugins.length,
        300_000,
      );
      const secondsToStream = (Date.now() - started) / 1000;
      const perStream = (after: { rss: number; heap: number }): MemoryPerStream => ({
        rssBytes: after.rss,
        rssBytesPerStream: Math.round((after.rss - before.rss) / plugins.length),
        heapUsedBytesPerStream: Math.round((after.heap - before.heap) / plugins.length),
      });
      // Let the last snapshot writes land before reading the resident set.
      await sleep(2000);
      const connected = perStream(await memory());
      progress(`watcher memory: ${SETTLE_SECONDS} s for the watcher to settle…`);
      await sleep(SETTLE_SECONDS * 1000);
      const settled = perStream(await memory());
      return {
        streams: plugins.length,
        secondsToStream: round(secondsToStream, 1),
        rssBeforeBytes: before.rss,
        connected,
        settled,
        settleSeconds: SETTLE_SECONDS,
      };
    },
  );
}
