/**
 * Sync priorities under a backlog: while a cold publish of many keys (reason `snapshot`, a
 * change: priority 3) drains through one slice-syncer at its default write rate, drivers are
 * lost (`unreachable`, lifecycle: priority 1) and new nodes publish for the first time
 * (`first-snapshot`, priority 2). Each is timed from its enqueue until a watch on ResourceSlices
 * shows it: the key's slice carrying the `driver-unreachable` taint, or the new key's slice.
 * Registrations, snapshots, stream states and sync jobs are written with the libs the
 * registration API and the plugin-watcher write them with; the watcher is stopped, as in the
 * cold publish of sync-throughput.ts.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { keyId } from '@slicekeeper/contracts';
import type { SliceKey, SyncReason } from '@slicekeeper/contracts';
import { createRedisConnection } from '@slicekeeper/queue';
import type { ResourceSlice, System } from '../src/harness';
import { SliceWatch } from './latency';
import type { WatchEvent } from './latency';
import { round, summarize } from './stats';
import { progress, withSystem } from './support';
import { DRIVERS, Producer, clusterKeys, phase } from './sync-throughput';
import type { SyncPhaseResult } from './sync-throughput';

/** One injected event, timed through the watch. */
export interface PriorityProbe {
  event: 'driver-loss' | 'first-publish';
  key: string;
  /** When it was enqueued, seconds after the backlog's first enqueue. */
  atSeconds: number;
  /** Sync jobs ready and not yet taken (waiting + prioritized) just before its enqueue. */
  backlog: number;
  /** Enqueue → seen through the watch, ms; unset when never seen. */
  latencyMs?: number;
}

/** The probes of one kind. */
export interface PriorityEventResult {
  injected: number;
  /** Seen through the watch before the timeout; the percentiles are over these. */
  seen: number;
  p50ms: number;
  p99ms: number;
  maxMs: number;
  /** The backlog when each was enqueued (waiting + prioritized sync jobs). */
  backlog: { min: number; median: number; max: number };
}

export interface PrioritiesResult {
  /** Keys of the backlog: a cold publish with reason `snapshot`. */
  keys: number;
  nodes: number;
  /** Published keys whose stream is lost during the backlog, one each. */
  victims: number;
  /** The backlog's cold publish, the probes' syncs included. */
  cold: SyncPhaseResult;
  driverLoss: PriorityEventResult;
  firstPublish: PriorityEventResult;
  /**
   * The bench process's event-loop delay while the probes were in flight, ms: how late a watch
   * event may have been timestamped (the bench also polls every key's status meanwhile).
   */
  benchEventLoopDelay: { p99ms: number; maxMs: number };
  probes: PriorityProbe[];
}

export interface PrioritiesOptions {
  /** Keys of the cold publish behind which the probes are injected. */
  keys: number;
  /** Driver losses, and as many new nodes' first publishes. */
  probes: number;
  /** How long a probe may take to show before it counts as not seen, ms. @defaultValue 60000 */
  timeoutMs?: number;
}

/**
 * The slice-syncer's default SYNC_WRITE_RATE, writes/s. Only spreads the probes over the
 * expected drain; the System runs the syncer's own defaults.
 */
const DEFAULT_WRITE_RATE = 200;
/** The probes are spread over this share of the expected drain, so that all meet a backlog. */
const SPREAD = 0.8;

export function measurePriorities(options: PrioritiesOptions): Promise<PrioritiesResult> {
  const { nodes, keys } = clusterKeys(options.keys);
  const victims: SliceKey[] = Array.from({ length: options.probes }, (_, i) => ({
    node: `victim-${i}`,
    driver: DRIVERS[i % DRIVERS.length] ?? DRIVERS[0],
  }));
  const joining: SliceKey[] = Array.from({ length: options.probes }, (_, i) => ({
    node: `joining-${i}`,
    driver: DRIVERS[i % DRIVERS.length] ?? DRIVERS[0],
  }));
  return withSystem(
    {
      name: 'bench-priorities',
      nodes: [],
      syncerReplicas: 1,
      // The write rate, burst and concurrency are the syncer's defaults: the backlog drains as
      // it would in production.
      syncerEnv: { RESYNC_INTERVAL: '1h', RELIST_INTERVAL: '1h' },
      // Without the gate the emulator drops device taints, as kube-apiserver does.
      emulatorEnv: { FEATURE_GATES: 'DRADeviceTaints=true' },
    },
    async (system) => {
      await system.stopService('plugin-watcher');
      const metrics = await system.syncerMetricsUrls();
      const redis = createRedisConnection({
        target: { kind: 'server', url: system.redis.url },
        connectionName: 'bench',
      });
      const producer = new Producer(redis);
      let watch: SliceWatch | undefined;
      try {
        progress(`priorities: publishing ${victims.length} keys that will lose their driver…`);
        await system.emulator.createNodes(
          victims.map((k) => k.node),
          32,
        );
        await producer.register(victims);
        await phase(system, metrics, producer, 'cold', victims, 'snapshot');
        progress(`priorities: creating ${nodes.length} nodes, registering ${keys.length} keys…`);
        await system.emulator.createNodes(nodes, 32);
        await producer.register(keys);
        watch = await SliceWatch.open(system.emulator.url);
        progress(
          `priorities: cold publish of ${keys.length} keys (reason snapshot) with ${victims.length} driver losses and ${joining.length} first publishes behind it…`,
        );
        const probes = new Probes(system, producer, watch, options.timeoutMs ?? 60_000);
        const cold = await phase(system, metrics, producer, 'cold', keys, 'snapshot', () =>
          probes.inject(victims, joining),
        );
        const driverLoss = summarizeProbes(probes.done, 'driver-loss');
        const firstPublish = summarizeProbes(probes.done, 'first-publish');
        const result: PrioritiesResult = {
          keys: keys.length,
          nodes: nodes.length,
          victims: victims.length,
          cold,
          driverLoss,
          firstPublish,
          benchEventLoopDelay: {
            p99ms: round(probes.delay.percentile(99) / 1e6, 1),
            maxMs: round(probes.delay.max / 1e6, 1),
          },
          probes: [...probes.done].sort((a, b) => a.atSeconds - b.atSeconds),
        };
        progress(
          `priorities: cold publish ${cold.seconds} s; driver-loss taint p50 ${driverLoss.p50ms} ms, p99 ${driverLoss.p99ms} ms, max ${driverLoss.maxMs} ms (${driverLoss.seen}/${driverLoss.injected} seen); first publish p50 ${firstPublish.p50ms} ms, p99 ${firstPublish.p99ms} ms, max ${firstPublish.maxMs} ms (${firstPublish.seen}/${firstPublish.injected} seen); backlog ${Math.min(driverLoss.backlog.min, firstPublish.backlog.min)}–${Math.max(driverLoss.backlog.max, firstPublish.backlog.max)} jobs`,
        );
        return result;
      } finally {
        watch?.close();
        await producer.close();
        redis.disconnect();
      }
    },
  );
}

interface Pending {
  probe: PriorityProbe;
  sentAt: number;
  shows: (slice: ResourceSlice) => boolean;
}

/** Injects the probes on a schedule and times each through the watch. */
class Probes {
  /** `performance.now()` just before the backlog's first enqueue. */
  private readonly start = performance.now();
  readonly done: PriorityProbe[] = [];
  /** The bench's event-loop delay from the first probe until the last showed, ns. */
  readonly delay = monitorEventLoopDelay({ resolution: 10 });
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly system: System,
    private readonly producer: Producer,
    private readonly watch: SliceWatch,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Once every backlog job is enqueued: alternately a driver loss and a new node's first
   * publish, spread over most of the backlog's expected drain; then waits until each showed.
   */
  async inject(victims: readonly SliceKey[], joining: readonly SliceKey[]): Promise<void> {
    const order = victims.flatMap((victim, i) => {
      const node = joining[i];
      return node === undefined ? [victim] : [victim, node];
    });
    const backlog = await this.producer.backlog();
    const intervalMs = Math.max(
      20,
      ((backlog / DEFAULT_WRITE_RATE) * 1000 * SPREAD) / order.length,
    );
    progress(
      `priorities: backlog of ${backlog} jobs enqueued; a probe every ${Math.round(intervalMs)} ms…`,
    );
    this.watch.onEvent = (event, at) => {
      this.seen(event, at);
    };
    this.delay.enable();
    try {
      const begin = performance.now();
      for (const [i, key] of order.entries()) {
        await sleep(Math.max(0, begin + i * intervalMs - performance.now()));
        this.watch.check();
        if (i % 2 === 0) await this.loseDriver(key);
        else await this.joinNode(key);
        if ((i + 1) % 20 === 0) {
          progress(
            `priorities: ${i + 1}/${order.length} probes injected, ${this.pending.size} not seen yet`,
          );
        }
      }
      const deadline = performance.now() + this.timeoutMs;
      while (this.pending.size > 0 && performance.now() < deadline) {
        this.watch.check();
        await sleep(50);
      }
      for (const { probe } of this.pending.values()) this.done.push(probe);
      this.pending.clear();
    } finally {
      this.delay.disable();
      this.watch.onEvent = undefined;
    }
  }

  /** What the watcher does when a key's stream fails: records it unreachable, asks for a sync. */
  private async loseDriver(key: SliceKey): Promise<void> {
    await this.producer.loseStream(key, new Date());
    // The taint key of slicekeeper's driver-unreachable condition (libs/slices).
    const taint = `${key.driver}/driver-unreachable`;
    await this.enqueue(key, 'driver-loss', 'unreachable', (slice) =>
      (slice.spec.devices ?? []).some((d) => (d.taints ?? []).some((t) => t.key === taint)),
    );
  }

  /** A node joins: its Node, then its plugin's registration and first snapshot. */
  private async joinNode(key: SliceKey): Promise<void> {
    await this.system.emulator.createNodes([key.node]);
    await this.producer.register([key]);
    await this.producer.publish(key);
    await this.enqueue(key, 'first-publish', 'first-snapshot', () => true);
  }

  private async enqueue(
    key: SliceKey,
    event: PriorityProbe['event'],
    reason: SyncReason,
    shows: Pending['shows'],
  ): Promise<void> {
    const backlog = await this.producer.backlog();
    const sentAt = performance.now();
    const probe: PriorityProbe = {
      event,
      key: keyId(key),
      atSeconds: round((sentAt - this.start) / 1000, 2),
      backlog,
    };
    this.pending.set(probe.key, { probe, sentAt, shows });
    await this.producer.enqueue(key, reason);
  }

  private seen(event: WatchEvent, at: number): void {
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return;
    const slice = event.object;
    if (slice.spec.nodeName === undefined) return;
    const id = keyId({ node: slice.spec.nodeName, driver: slice.spec.driver });
    const pending = this.pending.get(id);
    if (pending === undefined || !pending.shows(slice)) return;
    this.pending.delete(id);
    pending.probe.latencyMs = round(at - pending.sentAt, 2);
    this.done.push(pending.probe);
  }
}

function summarizeProbes(
  probes: readonly PriorityProbe[],
  event: PriorityProbe['event'],
): PriorityEventResult {
  const of = probes.filter((p) => p.event === event);
  const latencies = of.flatMap((p) => (p.latencyMs === undefined ? [] : [p.latencyMs]));
  const summary = summarize(latencies);
  const backlogs = summarize(of.map((p) => p.backlog));
  return {
    injected: of.length,
    seen: latencies.length,
    p50ms: summary.p50,
    p99ms: summary.p99,
    maxMs: summary.max,
    backlog: {
      min: Math.min(...of.map((p) => p.backlog)),
      median: backlogs.p50,
      max: backlogs.max,
    },
  };
}
