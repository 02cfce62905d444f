import type { Logger } from 'pino';
import type { SliceKey, SyncReason } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { RegistrationPage } from '@slicekeeper/state';

/** A change the watch saw, as `ClusterCache` reports it. */
export interface WatchedChange {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  name: string;
  uid: string;
}

export interface ClusterTriggersOptions {
  syncQueue: { enqueue(key: SliceKey, reason: SyncReason): Promise<void> };
  /** The registered keys of a node (`RegistrationStore.list`). */
  registrations: { list(options: { node: string; after?: string }): Promise<RegistrationPage> };
  /**
   * The slices replicas are deleting (`DeletionMarks`): a deletion marked there is another
   * replica's, not a change to repair. Without it every deletion this replica did not make
   * syncs its key.
   */
  deletions?: { has(key: SliceKey, uid: string): Promise<boolean> };
  logger: Logger;
}

/**
 * Turns what the syncer's watches see into syncs, so that the cluster is repaired in about a
 * second instead of at the next resync:
 * - a managed slice changed or deleted by anyone but slicekeeper → its key is synced at once.
 *   What is ours is told in two steps, by what each can see: the cache filters this replica's
 *   writes and deletes and every replica's updates (managedFields); a deletion it reports is
 *   looked up in the marks replicas leave before they delete (`deletions`). Upstream's resourceslice controller waits 30 s
 *   (`SyncDelay`) before reacting, to let its own writes' events arrive first and avoid a
 *   redundant delete; the mutation cache already shows our own writes, so no delay is needed;
 * - a Node added, re-created under the same name with a new UID, or deleted → every registered
 *   key of that node is synced: a `node-missing` key is published for the new Node at once, and
 *   the keys of a deleted Node become `node-missing` without an API call (the garbage collector
 *   deletes their slices).
 * Enqueues are deduplicated per key by the queue, so a burst of events costs one sync per key.
 */
export class ClusterTriggers {
  constructor(private readonly options: ClusterTriggersOptions) {}

  readonly onForeignChange = (key: SliceKey, change: WatchedChange): void => {
    void this.repair(key, change).catch((error: unknown) => {
      // The periodic resync repairs the key if this is lost.
      this.options.logger.warn(
        { ...key, slice: change.name, err: errorMessage(error) },
        'repair failed',
      );
    });
  };

  private async repair(key: SliceKey, change: WatchedChange): Promise<void> {
    const fields = { node: key.node, driver: key.driver, slice: change.name, event: change.type };
    const deletions = this.options.deletions;
    if (change.type === 'DELETED' && (await deletions?.has(key, change.uid)) === true) {
      this.options.logger.debug(fields, 'managed slice deleted by another replica');
      return;
    }
    this.options.logger.info(fields, 'managed slice changed by someone else, syncing its key');
    this.enqueue(key, 'slice-changed');
  }

  /** A Node appeared, went, or came back with a new UID (the cache reports nothing else). */
  readonly onNode = (change: WatchedChange): void => {
    void this.syncNode(change.name).catch((error: unknown) => {
      this.options.logger.warn({ node: change.name, err: errorMessage(error) }, 'node sync failed');
    });
  };

  private async syncNode(node: string): Promise<void> {
    let after: string | undefined;
    do {
      const page = await this.options.registrations.list({ node, ...(after ? { after } : {}) });
      for (const registration of page.items) {
        this.enqueue({ node, driver: registration.driver }, 'node-changed');
      }
      after = page.next;
    } while (after !== undefined);
  }

  private enqueue(key: SliceKey, reason: SyncReason): void {
    void this.options.syncQueue.enqueue(key, reason).catch((error: unknown) => {
      // The periodic resync repairs the key if this enqueue is lost.
      this.options.logger.warn({ ...key, reason, err: errorMessage(error) }, 'enqueue failed');
    });
  }
}
