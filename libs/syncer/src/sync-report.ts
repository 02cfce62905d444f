import type { Logger } from 'pino';
import type { InventorySnapshot, PublishedTaints, SyncStatus } from '@slicekeeper/contracts';
import { TAINT_CONDITIONS } from '@slicekeeper/slices';
import type { DroppedField } from '@slicekeeper/slices';
import type { SyncerMetrics } from './syncer-metrics';

/**
 * What a successful sync tells besides its status: metrics and the log lines said once per
 * change (a dropped field, a taint that could not be applied), compared with the key's previous
 * status so that a resync repeats nothing.
 */
export class SyncReport {
  constructor(
    private readonly metrics: SyncerMetrics | undefined,
    private readonly now: () => Date,
  ) {}

  /** Counts dropped fields and logs them once per key and snapshot generation. */
  dropped(
    log: Logger,
    dropped: readonly DroppedField[],
    text: readonly string[],
    previous: SyncStatus | undefined,
  ): void {
    for (const field of dropped) this.metrics?.droppedFields.inc({ gate: field.gate ?? 'unknown' });
    const known = previous?.droppedFields ?? [];
    if (text.some((line) => !known.includes(line))) {
      log.warn(
        { droppedFields: text },
        'the API server dropped fields of our writes (a feature gate is off)',
      );
    }
  }

  /**
   * The taints the sync leaves on the key's devices, for its status. A driver-unreachable
   * taint the server dropped (its DRADeviceTaints gate is off) falls back to what happens
   * without taints: the slices stay schedulable until the wipe. Said once per loss, in the
   * status, a metric and the log.
   */
  taints(
    log: Logger,
    summary: PublishedTaints | undefined,
    dropped: readonly string[] | undefined,
    previous: SyncStatus | undefined,
  ): PublishedTaints | undefined {
    this.countTaintsAdded(summary, previous?.taints);
    if (summary?.unreachable === undefined) return summary;
    if (!(dropped ?? []).some((field) => field.includes('.taints'))) return summary;
    if (previous?.taints?.unreachable !== 'dropped') {
      this.metrics?.unreachableTaintFallbacks.inc();
      log.warn(
        'driver unreachable, but the API server drops device taints (DRADeviceTaints off): ' +
          'its devices stay schedulable until its slices are withdrawn',
      );
    }
    return { ...summary, unreachable: 'dropped' };
  }

  /** The end-to-end latency of a snapshot generation's first publish. */
  published(snapshot: InventorySnapshot, previous: SyncStatus | undefined): void {
    if (previous?.outcome === 'synced' && previous.snapshotGeneration === snapshot.generation) {
      return;
    }
    const seconds = (this.now().getTime() - Date.parse(snapshot.receivedAt)) / 1000;
    this.metrics?.publishLatency.observe(Math.max(0, seconds));
  }

  private countTaintsAdded(
    now: PublishedTaints | undefined,
    before: PublishedTaints | undefined,
  ): void {
    const metric = this.metrics?.taintsAdded;
    if (metric === undefined || now === undefined) return;
    if (now.unhealthy > 0 && (before?.unhealthy ?? 0) === 0) {
      metric.inc({ condition: TAINT_CONDITIONS.unhealthy });
    }
    if (now.healthUnknown > 0 && (before?.healthUnknown ?? 0) === 0) {
      metric.inc({ condition: TAINT_CONDITIONS.healthUnknown });
    }
    if (now.unreachable !== undefined && before?.unreachable === undefined) {
      metric.inc({ condition: TAINT_CONDITIONS.driverUnreachable });
    }
  }
}
