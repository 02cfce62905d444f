import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { syncOutcomes } from '@slicekeeper/contracts';
import { TAINT_CONDITIONS } from '@slicekeeper/slices';

/** The slice-syncer's metrics. What to alert on is in the README's operations section. */
export class SyncerMetrics {
  /** Syncs by outcome. Alert when `retrying` or `failed` keep growing. */
  readonly syncs: Counter<'outcome'>;
  readonly duration: Histogram<'outcome'>;
  /** Kubernetes API requests by verb, resource and HTTP status ('error' = no response). */
  readonly kubeRequests: Counter<'verb' | 'resource' | 'code'>;
  /** ResourceSlice writes by operation. */
  readonly sliceWrites: Counter<'op'>;
  /** Syncs refused because another sync of the same key held its guard. Must stay 0. */
  readonly overlaps: Counter;
  /** Fields the API server dropped from our writes, by the feature gate that likely guards them. */
  readonly droppedFields: Counter<'gate'>;
  /**
   * Keys whose devices got a lifecycle taint they did not have, by condition (`unhealthy`,
   * `health-unknown`, `driver-unreachable`).
   */
  readonly taintsAdded: Counter<'condition'>;
  /** Driver losses the API server could not be told of with a taint (DRADeviceTaints off). */
  readonly unreachableTaintFallbacks: Counter;
  /** 1 for the resource.k8s.io version slices are written in, with the server's release. */
  readonly resourceApi: Gauge<'group_version' | 'release'>;
  /**
   * Occurrences of Events about Nodes by reason and what became of them: `created` (a new
   * Event), `series` (its count written), `counted` (a repeat kept for the next series write),
   * `failed` (not recorded: events are best effort).
   */
  readonly events: Counter<'reason' | 'outcome'>;
  /**
   * From the watcher storing a snapshot to its slices written, for the first sync that
   * publishes each snapshot generation: what a driver's change waits for end to end.
   */
  readonly publishLatency: Histogram;
  /** Each write token's wait for the cluster-wide write limit (the count is writes allowed). */
  readonly writeLimitWait: Histogram;
  /** The cluster-wide write limit, writes per second (`SYNC_WRITE_RATE`). */
  readonly writeLimit: Gauge;
  /**
   * Differences a periodic full relist found between the watch-fed cache and the API server
   * (`AntiEntropy`), by kind. Above 0 means a watch missed events.
   */
  readonly relistDifferences: Counter<'difference'>;
  /** ResourceSlices managed by slicekeeper, as last counted by the janitor (`Maintenance`). */
  readonly publishedSlices: Gauge;

  constructor(registry: Registry) {
    this.syncs = new Counter({
      name: 'slicekeeper_syncs_total',
      help: 'Syncs by outcome.',
      labelNames: ['outcome'],
      registers: [registry],
    });
    for (const outcome of syncOutcomes) this.syncs.inc({ outcome }, 0);
    this.duration = new Histogram({
      name: 'slicekeeper_sync_duration_seconds',
      help: 'Duration of one sync, from reading the snapshot to recording the status.',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.kubeRequests = new Counter({
      name: 'slicekeeper_kube_requests_total',
      help: 'Kubernetes API requests by verb, resource and status code.',
      labelNames: ['verb', 'resource', 'code'],
      registers: [registry],
    });
    this.sliceWrites = new Counter({
      name: 'slicekeeper_slice_writes_total',
      help: 'ResourceSlice writes by operation (create, update, delete).',
      labelNames: ['op'],
      registers: [registry],
    });
    this.events = new Counter({
      name: 'slicekeeper_events_total',
      help: 'Occurrences of Kubernetes Events about Nodes, by reason and outcome (created, series, counted, failed).',
      labelNames: ['reason', 'outcome'],
      registers: [registry],
    });
    this.publishLatency = new Histogram({
      name: 'slicekeeper_publish_latency_seconds',
      help: 'From the watcher storing a snapshot to its slices written (first sync of each snapshot generation that publishes it).',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    });
    this.writeLimitWait = new Histogram({
      name: 'slicekeeper_write_limit_wait_seconds',
      help: 'Wait of each API write for its token of the cluster-wide write limit (0 when a token was there).',
      buckets: [0, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [registry],
    });
    this.writeLimit = new Gauge({
      name: 'slicekeeper_write_limit_per_second',
      help: 'The cluster-wide API write limit, writes per second (SYNC_WRITE_RATE).',
      registers: [registry],
    });
    this.overlaps = new Counter({
      name: 'slicekeeper_sync_overlaps_total',
      help: 'Syncs refused because a sync of the same key was running. Must stay 0.',
      registers: [registry],
    });
    this.droppedFields = new Counter({
      name: 'slicekeeper_dropped_fields_total',
      help: 'Writes whose fields the API server dropped (a feature gate off), by gate.',
      labelNames: ['gate'],
      registers: [registry],
    });
    this.taintsAdded = new Counter({
      name: 'slicekeeper_taints_added_total',
      help: 'Keys whose devices got a lifecycle taint they did not have, by condition.',
      labelNames: ['condition'],
      registers: [registry],
    });
    for (const condition of Object.values(TAINT_CONDITIONS)) this.taintsAdded.inc({ condition }, 0);
    this.resourceApi = new Gauge({
      name: 'slicekeeper_resource_api_info',
      help: 'The resource.k8s.io version ResourceSlices are written in, and the API server release (value 1).',
      labelNames: ['group_version', 'release'],
      registers: [registry],
    });
    this.unreachableTaintFallbacks = new Counter({
      name: 'slicekeeper_unreachable_taint_fallbacks_total',
      help:
        'Driver losses whose driver-unreachable taint the API server dropped (DRADeviceTaints ' +
        'off): the devices stay schedulable until the wipe.',
      registers: [registry],
    });
    this.relistDifferences = new Counter({
      name: 'slicekeeper_relist_differences_total',
      help: 'Differences a periodic full relist found between the watch-fed cache and the API server, by kind. Above 0 means a watch missed events.',
      labelNames: ['difference'],
      registers: [registry],
    });
    this.publishedSlices = new Gauge({
      name: 'slicekeeper_published_slices',
      help: 'ResourceSlices managed by slicekeeper, as last counted by the janitor.',
      registers: [registry],
    });
  }
}
