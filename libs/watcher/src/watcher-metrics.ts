import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

/** Live figures the gauges read when scraped. */
export interface WatcherGaugeSource {
  /** Number of streams per state (including the key state `wiped`). */
  streamsByState(): Record<string, number>;
  /** Seconds since the last message of the quietest live stream, 0 when none is live. */
  oldestMessageAgeSeconds(): number;
  /** Keys whose lease this replica holds (shared mode), else undefined. */
  leasesHeld(): number | undefined;
}

/**
 * The plugin-watcher's metrics. Per-stream series would be 10,000 series per replica, so streams
 * are counted by state and their message age is reported as the oldest.
 */
export class WatcherMetrics {
  /** Plugin streams by state, read from the source when scraped. */
  readonly streams: Gauge<'state'>;
  /** Seconds since the last message of the quietest streaming plugin. */
  readonly lastMessageAge: Gauge;
  /** Keys whose lease this replica holds (shared mode), 0 otherwise. */
  readonly leasesHeld: Gauge;
  readonly messages: Counter;
  readonly reconnects: Counter;
  /** Snapshot writes by result: `stored`, `unchanged` (nothing written), `withdrawn`. */
  readonly snapshots: Counter<'result'>;
  /** Size of stored inventory snapshots, bytes. */
  readonly snapshotBytes: Histogram;

  constructor(registry: Registry, source: WatcherGaugeSource) {
    this.streams = new Gauge({
      name: 'slicekeeper_watcher_streams',
      help: 'Plugin streams by state.',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [state, count] of Object.entries(source.streamsByState()))
          this.set({ state }, count);
      },
    });
    this.lastMessageAge = new Gauge({
      name: 'slicekeeper_watcher_last_message_age_seconds',
      help: 'Seconds since the last message of the quietest streaming plugin.',
      registers: [registry],
      collect() {
        this.set(source.oldestMessageAgeSeconds());
      },
    });
    this.leasesHeld = new Gauge({
      name: 'slicekeeper_watcher_leases_held',
      help: 'Keys whose watcher lease this replica holds (shared mode).',
      registers: [registry],
      collect() {
        this.set(source.leasesHeld() ?? 0);
      },
    });
    this.messages = new Counter({
      name: 'slicekeeper_watcher_messages_total',
      help: 'Inventory messages received from plugins.',
      registers: [registry],
    });
    this.reconnects = new Counter({
      name: 'slicekeeper_watcher_reconnects_total',
      help: 'Reconnects scheduled after a stream failed or its endpoint was unreachable.',
      registers: [registry],
    });
    this.snapshots = new Counter({
      name: 'slicekeeper_watcher_snapshots_total',
      help: 'Snapshot writes by result: stored (changed), unchanged (nothing written), withdrawn.',
      labelNames: ['result'],
      registers: [registry],
    });
    this.snapshotBytes = new Histogram({
      name: 'slicekeeper_watcher_snapshot_bytes',
      help: 'Size of stored inventory snapshots, bytes.',
      buckets: [1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304],
      registers: [registry],
    });
  }
}
