/**
 * One reading of the whole system for the soak: every service's RSS, heap and event-loop delay
 * (its /metrics), Redis's and the emulator's RSS (/proc), Redis memory and keys, BullMQ's
 * counts per queue, and how many plugins the registration API reports not `synced`.
 */
import os from 'node:os';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  MAINTENANCE_QUEUE_NAME,
  NODE_STATUS_QUEUE_NAME,
  SYNC_QUEUE_NAME,
  queuePrefix,
} from '@slicekeeper/contracts';
import type { System } from '../src/harness';
import type { ProcessSample, QueueCounts, SoakSample } from './soak-report';
import { round } from './stats';
import { redisMemory, rssBytes } from './support';

/** The queues the soak watches, by the name its charts and verdicts use. */
export const SOAK_QUEUES = {
  sync: SYNC_QUEUE_NAME,
  'node-status': NODE_STATUS_QUEUE_NAME,
  maintenance: MAINTENANCE_QUEUE_NAME,
} as const;

/** How long any one part of a reading may take before it is left out, ms. */
const PART_TIMEOUT_MS = 5000;

/** `promise`'s value, or undefined if it fails or takes longer than {@link PART_TIMEOUT_MS}. */
async function within<T>(promise: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, PART_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise.catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The value of an unlabelled (or default-labelled) metric in Prometheus' text format. */
export function metricValue(text: string, name: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) {
      const value = Number(line.split(' ').at(-1));
      return Number.isFinite(value) ? value : undefined;
    }
  }
  return undefined;
}

/**
 * The values of metric `name` by the value of its label `label`, e.g. V8's committed size per
 * heap space from `nodejs_heap_space_size_total_bytes{space="old",…}`.
 */
export function metricValuesBy(text: string, name: string, label: string): Record<string, number> {
  const byLabel: Record<string, number> = {};
  const labelled = new RegExp(`[{,]${label}="([^"]*)"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const key = labelled.exec(line)?.[1];
    const value = Number(line.split(' ').at(-1));
    if (key !== undefined && Number.isFinite(value)) byLabel[key] = value;
  }
  return byLabel;
}

/**
 * A Node service's memory, event-loop delay and start from its /metrics; `soakStartedAt`, ms
 * since the epoch, is what its start is told relative to.
 */
async function serviceSample(
  url: string,
  soakStartedAt: number,
): Promise<ProcessSample | undefined> {
  const response = await fetch(url, { signal: AbortSignal.timeout(PART_TIMEOUT_MS) });
  if (!response.ok) return undefined;
  const text = await response.text();
  const rss = metricValue(text, 'process_resident_memory_bytes');
  const heap = metricValue(text, 'nodejs_heap_size_used_bytes');
  const heapTotal = metricValue(text, 'nodejs_heap_size_total_bytes');
  const external = metricValue(text, 'nodejs_external_memory_bytes');
  const lag = metricValue(text, 'nodejs_eventloop_lag_p99_seconds');
  const lagMax = metricValue(text, 'nodejs_eventloop_lag_max_seconds');
  const started = metricValue(text, 'process_start_time_seconds');
  const spaces = metricValuesBy(text, 'nodejs_heap_space_size_total_bytes', 'space');
  return {
    ...(rss === undefined ? {} : { rssBytes: rss }),
    ...(heap === undefined ? {} : { heapUsedBytes: heap }),
    ...(heapTotal === undefined ? {} : { heapTotalBytes: heapTotal }),
    ...(Object.keys(spaces).length === 0 ? {} : { heapSpacesBytes: spaces }),
    ...(external === undefined ? {} : { externalBytes: external }),
    ...(lag === undefined ? {} : { lagP99Ms: round(lag * 1000, 2) }),
    ...(lagMax === undefined ? {} : { lagMaxMs: round(lagMax * 1000, 2) }),
    ...(started === undefined ? {} : { startedAtT: round(started - soakStartedAt / 1000, 1) }),
  };
}

interface PluginPage {
  items: { sync?: { outcome?: string } }[];
  next?: string;
}

/** Reads the soak's system every time `sample()` is called; `close()` drops its connections. */
export class SoakSampler {
  private readonly redis: Redis;
  private readonly queues: Map<string, Queue>;
  private syncerUrls: string[] = [];

  constructor(
    private readonly system: System,
    private readonly watcherMetricsUrl: string,
    private readonly startedAt: number,
  ) {
    // No retries: a reading during Redis's restart leaves Redis's parts out instead of waiting.
    this.redis = new Redis(system.redis.url, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: false,
    });
    this.redis.on('error', () => undefined);
    const prefix = queuePrefix('sk');
    this.queues = new Map(
      Object.entries(SOAK_QUEUES).map(([label, name]) => {
        // Read-only: a Queue made without `skipMetasUpdate` writes its options into the queue's
        // meta hash, and BullMQ's default event-stream bound (10,000) would replace the one the
        // services set (libs/queue's QUEUE_EVENTS_KEPT) until a service made its Queue again.
        const queue = new Queue(name, { connection: this.redis, prefix, skipMetasUpdate: true });
        // Redis's restart is one of the soak's faults: a reading then leaves the queues out.
        queue.on('error', () => undefined);
        return [label, queue];
      }),
    );
  }

  async sample(): Promise<SoakSample> {
    const t = round((Date.now() - this.startedAt) / 1000, 1);
    const processes: Record<string, ProcessSample> = {};
    const services: [string, string][] = [
      ['registration-api', new URL('/metrics', this.system.apiUrl).href],
      ['plugin-watcher', this.watcherMetricsUrl],
      ...(await this.syncerMetricsUrls()).map(
        (url, i) => [`slice-syncer-${i + 1}`, url] as [string, string],
      ),
    ];
    const readings = await Promise.all(
      services.map(([, url]) => within(serviceSample(url, this.startedAt))),
    );
    services.forEach(([name], i) => {
      const reading = readings[i];
      if (reading !== undefined) processes[name] = reading;
    });
    // A syncer that did not answer may have been restarted on another port.
    if (services.some(([name], i) => name.startsWith('slice-syncer') && !readings[i])) {
      this.syncerUrls = [];
    }
    const rss = (await within(rssBytes())) ?? {};
    for (const name of ['redis', 'kube-emulator', 'bench']) {
      const bytes = rss[name];
      if (bytes !== undefined) processes[name] = { rssBytes: bytes };
    }
    processes.bench = {
      ...processes.bench,
      heapUsedBytes: process.memoryUsage().heapUsed,
    };
    const [redis, queues, plugins] = await Promise.all([
      within(this.redisReading(t)),
      within(this.queueCounts()),
      within(this.pluginOutcomes()),
    ]);
    return {
      t,
      load: round(os.loadavg()[0] ?? 0, 2),
      processes,
      ...(redis === undefined ? {} : { redis }),
      ...(queues === undefined ? {} : { queues }),
      ...(plugins === undefined ? {} : plugins),
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.redis.disconnect();
  }

  private async syncerMetricsUrls(): Promise<string[]> {
    if (this.syncerUrls.length === 0) {
      this.syncerUrls = (await within(this.system.syncerMetricsUrls())) ?? [];
    }
    return this.syncerUrls;
  }

  /** Redis's reading at `t`, seconds since the soak started. */
  private async redisReading(t: number): Promise<NonNullable<SoakSample['redis']>> {
    const info = await this.redis.info('keyspace', 'server');
    // `db0:keys=1234,expires=56,avg_ttl=…`; no line when the database is empty.
    const match = /^db0:keys=(\d+),expires=(\d+)/m.exec(info);
    const keys = Number(match?.[1] ?? 0);
    const uptime = /^uptime_in_seconds:(\d+)/m.exec(info)?.[1];
    if (uptime === undefined) throw new Error('INFO server has no uptime_in_seconds');
    return {
      ...(await redisMemory(this.redis)),
      keys,
      persistentKeys: keys - Number(match?.[2] ?? 0),
      startedAtT: round(t - Number(uptime), 0),
    };
  }

  private async queueCounts(): Promise<Record<string, QueueCounts>> {
    const counts: Record<string, QueueCounts> = {};
    for (const [label, queue] of this.queues) {
      const c = await queue.getJobCounts(
        'waiting',
        'prioritized',
        'delayed',
        'active',
        'completed',
        'failed',
      );
      counts[label] = {
        waiting: c.waiting ?? 0,
        prioritized: c.prioritized ?? 0,
        delayed: c.delayed ?? 0,
        active: c.active ?? 0,
        completed: c.completed ?? 0,
        failed: c.failed ?? 0,
      };
    }
    return counts;
  }

  /** Registered plugins and those whose last sync outcome is not `synced`, from the API's list. */
  async pluginOutcomes(): Promise<{ plugins: number; notSynced: number }> {
    let plugins = 0;
    let notSynced = 0;
    let after: string | undefined;
    do {
      const url = new URL('/v1/plugins', this.system.apiUrl);
      url.searchParams.set('limit', '500');
      if (after !== undefined) url.searchParams.set('after', after);
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${this.system.tokens.admin}` },
        signal: AbortSignal.timeout(PART_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`GET /v1/plugins: ${response.status}`);
      const page = (await response.json()) as PluginPage;
      plugins += page.items.length;
      notSynced += page.items.filter((p) => p.sync?.outcome !== 'synced').length;
      after = page.next;
    } while (after !== undefined);
    return { plugins, notSynced };
  }
}
