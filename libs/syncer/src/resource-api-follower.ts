import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';
import { describeResourceApi, resourceGroupVersion } from '@slicekeeper/kube';
import type { ResourceApi, ResourceApiVersion } from '@slicekeeper/kube';
import { systemClock } from '@slicekeeper/time';
import type { Clock, TimerHandle } from '@slicekeeper/time';
import type { SyncerMetrics } from './syncer-metrics';

export interface ResourceApiFollowerOptions {
  /** What discovery found at start. */
  initial: ResourceApi;
  /** Asks the API server again (`discoverResourceApi`). */
  discover: () => Promise<ResourceApi>;
  /** Whatever speaks the version: the slice client and the cluster cache. */
  speakers: readonly { useApiVersion(version: ResourceApiVersion): unknown }[];
  /** Called once the speakers use a new version or the release changed: resync every key. */
  onChange: (api: ResourceApi) => Promise<void>;
  /** Time between discoveries, ms. */
  intervalMs: number;
  metrics?: Pick<SyncerMetrics, 'resourceApi'>;
  logger: Logger;
  /** @defaultValue the system clock */
  clock?: Clock;
}

/**
 * Follows the API server through upgrades without a restart: asks it again every
 * `intervalMs` (and at once when asked, e.g. after a 404 for the version in use) which
 * resource.k8s.io versions it serves and its release; when the newest served version or the
 * release changed, the slice client and the cache switch to it and every key is resynced, so
 * that pools are laid out again where the new release's rules differ (and nowhere else: the
 * planner writes nothing for a pool whose layout is unchanged).
 */
export class ResourceApiFollower {
  private api: ResourceApi;
  private timer: TimerHandle | undefined;
  private checking: Promise<void> | undefined;
  private closed = false;
  private readonly clock: Clock;

  constructor(private readonly options: ResourceApiFollowerOptions) {
    this.api = options.initial;
    this.clock = options.clock ?? systemClock;
    this.record();
  }

  /** The version in use and the server's release. */
  get current(): ResourceApi {
    return this.api;
  }

  /** e.g. `resource.k8s.io/v1 (Kubernetes v1.34.1)`. */
  describe(): string {
    return describeResourceApi(this.api);
  }

  start(): void {
    this.schedule();
  }

  /** Discovers now; concurrent calls share one discovery. Never rejects. */
  check(): Promise<void> {
    this.checking ??= this.run().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    await this.checking;
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = this.clock.setTimer(() => {
      void this.check().finally(() => {
        this.schedule();
      });
    }, this.options.intervalMs);
  }

  private async run(): Promise<void> {
    let found: ResourceApi;
    try {
      found = await this.options.discover();
    } catch (error) {
      this.options.logger.warn({ err: errorMessage(error) }, 'discovery failed, keeping the API');
      return;
    }
    const before = this.api;
    if (
      found.version === before.version &&
      found.release.gitVersion === before.release.gitVersion
    ) {
      return;
    }
    for (const speaker of this.options.speakers) await speaker.useApiVersion(found.version);
    this.api = found;
    this.record(before);
    this.options.logger.info(
      { from: describeResourceApi(before), to: describeResourceApi(found) },
      'the API server changed: resyncing every key',
    );
    await this.options.onChange(found);
  }

  private record(previous?: ResourceApi): void {
    const gauge = this.options.metrics?.resourceApi;
    if (gauge === undefined) return;
    if (previous !== undefined) {
      gauge.remove({
        group_version: resourceGroupVersion(previous.version),
        release: previous.release.gitVersion,
      });
    }
    gauge.set(
      {
        group_version: resourceGroupVersion(this.api.version),
        release: this.api.release.gitVersion,
      },
      1,
    );
  }
}
