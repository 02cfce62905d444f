import type { Logger } from 'pino';
import type { SliceKey } from '@slicekeeper/contracts';
import { SlicekeeperError } from '@slicekeeper/errors';
import { kubeErrorCode } from '@slicekeeper/kube';
import { droppedFields } from '@slicekeeper/slices';
import type {
  DroppedField,
  ResourceSlice,
  StoredResourceSlice,
  SyncPlan,
} from '@slicekeeper/slices';
import type { ClusterView, SliceApi } from './slice-api';
import type { SyncerMetrics } from './syncer-metrics';

export interface SliceApplierOptions {
  /** The watch-fed view; every object a write returns goes into it at once. */
  cluster: ClusterView;
  /** Where writes go. */
  api: SliceApi;
  /** Taken before every API write (the cluster-wide write limit). */
  writeLimiter?: { acquire(): Promise<void> };
  /**
   * Where a plan's deletes are marked before they are made (`DeletionMarks`), so that the other
   * replicas' watches know them as slicekeeper's own.
   */
  deletions?: { mark(key: SliceKey, uids: readonly string[]): Promise<void> };
  metrics?: SyncerMetrics;
  logger: Logger;
  /** Re-plan this many times after a 409 before giving up to the queue's backoff. @defaultValue 3 */
  conflictRetries?: number;
}

/** What applying a key's plan did. */
export type Applied =
  | {
      readonly ok: true;
      /** API writes made (creates + updates + deletes), re-plans included. */
      readonly writes: number;
      /** The plan last applied (a 409 re-plans from a fresh list). */
      readonly plan: SyncPlan;
      /** Names of the key's slices as the API server has them now, sorted. */
      readonly slices: string[];
      /** Fields the API server dropped from what was written (a feature gate is off). */
      readonly dropped: DroppedField[];
    }
  | {
      readonly ok: false;
      readonly writes: number;
      /** The classified failure of the write (or of the list a re-plan needed). */
      readonly error: SlicekeeperError;
    };

/**
 * Executes a key's plan in upstream order (deletes, updates, creates) and owns what makes that
 * safe: the write limit's tokens, the mutation cache (each object a write returns goes into the
 * cluster view at once; a delete is recorded before its call), and the re-plan after a stale
 * view. Updates and deletes carry UID and resourceVersion preconditions, so a view that lags
 * costs a 409 and a re-plan from a fresh list, never a wrong write.
 *
 * A write's classified failure is a value (`ok: false`); anything else thrown is a bug and
 * propagates.
 */
export class SliceApplier {
  constructor(private readonly options: SliceApplierOptions) {}

  /**
   * Applies `plan`, made from `existing`; after a 409 (or a 404 on an update: the garbage
   * collector was faster) lists the key's slices and applies `replan` of them. The first write
   * spends `prepaid`, a token taken with the sync's reads, whatever happens to that write.
   */
  async apply(input: {
    key: SliceKey;
    existing: readonly StoredResourceSlice[];
    plan: SyncPlan;
    replan: (existing: readonly StoredResourceSlice[]) => SyncPlan;
    prepaid?: Promise<void> | undefined;
  }): Promise<Applied> {
    const { api, logger } = this.options;
    const tokens = new WriteTokens(this.options.writeLimiter, input.prepaid);
    let { existing, plan } = input;
    let writes = 0;
    const dropped: DroppedField[] = [];
    for (let replans = 0; ; replans++) {
      const published = new Map(existing.map((s) => [s.metadata.name, s]));
      const step = await this.execute(input.key, plan, published, tokens);
      writes += step.writes;
      dropped.push(...step.dropped);
      if (step.error === undefined) {
        return { ok: true, writes, plan, slices: [...published.keys()].sort(), dropped };
      }
      if (!isStale(step.error) || replans >= (this.options.conflictRetries ?? 3)) {
        return { ok: false, writes, error: step.error };
      }
      logger.debug(
        { node: input.key.node, driver: input.key.driver, err: step.error.message },
        'stale view, re-planning from a list',
      );
      try {
        existing = await api.listSlices(input.key);
      } catch (error) {
        if (!(error instanceof SlicekeeperError)) throw error;
        return { ok: false, writes, error };
      }
      plan = input.replan(existing);
    }
  }

  /** One pass over a plan; stops at the first failed write. */
  private async execute(
    key: SliceKey,
    plan: SyncPlan,
    published: Map<string, StoredResourceSlice>,
    tokens: WriteTokens,
  ): Promise<{ writes: number; dropped: DroppedField[]; error?: SlicekeeperError }> {
    const { api, cluster, metrics } = this.options;
    let writes = 0;
    const dropped: DroppedField[] = [];
    const stored = (sent: ResourceSlice, back: StoredResourceSlice, op: 'create' | 'update') => {
      cluster.recordWrite(back);
      published.set(back.metadata.name, back);
      dropped.push(...droppedFields(sent, back));
      metrics?.sliceWrites.inc({ op });
      writes++;
    };
    if (plan.deletes.length > 0) {
      await this.options.deletions?.mark(
        key,
        plan.deletes.map((target) => target.uid),
      );
    }
    try {
      for (const target of plan.deletes) {
        await tokens.take();
        // Recorded first: the watch may deliver the deletion before the answer, and a deletion
        // not recorded as ours would count as someone else's (and cost a sync).
        cluster.recordDelete(target);
        try {
          await api.deleteSlice(target);
        } catch (error) {
          cluster.forgetDelete(target.name);
          throw error;
        }
        published.delete(target.name);
        metrics?.sliceWrites.inc({ op: 'delete' });
        writes++;
      }
      for (const slice of plan.updates) {
        await tokens.take();
        stored(slice, await api.updateSlice(slice), 'update');
      }
      for (const slice of plan.creates) {
        await tokens.take();
        stored(slice, await api.createSlice(slice), 'create');
      }
    } catch (error) {
      if (!(error instanceof SlicekeeperError)) throw error;
      return { writes, dropped, error };
    }
    return { writes, dropped };
  }
}

/** The write limit's tokens of one sync: the prepaid one first, then one taken per write. */
class WriteTokens {
  constructor(
    private readonly limiter: { acquire(): Promise<void> } | undefined,
    private prepaid: Promise<void> | undefined,
  ) {}

  async take(): Promise<void> {
    const next = this.prepaid ?? this.limiter?.acquire();
    this.prepaid = undefined;
    await next;
  }
}

/** A 409, or a 404 of a write (deletes treat 404 as done): the slices changed since read. */
function isStale(error: SlicekeeperError): boolean {
  switch (kubeErrorCode(error)) {
    case 'conflict':
    case 'not-found':
      return true;
    default:
      return false;
  }
}
