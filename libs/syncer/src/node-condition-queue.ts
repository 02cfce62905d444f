import type { Queue } from 'bullmq';
import {
  NODE_CONDITION_JOB_NAME,
  createNodeConditionQueue,
  nodeConditionJobOptions,
} from '@slicekeeper/queue';
import type { NodeConditionJob, RedisClient } from '@slicekeeper/queue';
import type { Logger } from 'pino';
import type { SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { NodeChange } from '@slicekeeper/kube';

// The queue's job contract lives with its factory in @slicekeeper/queue.
export {
  NODE_CONDITION_BACKOFF_TYPE,
  NODE_CONDITION_JOB_NAME,
  nodeConditionJobOptions,
  nodeConditionJobSchema,
} from '@slicekeeper/queue';
export type { NodeConditionJob } from '@slicekeeper/queue';

export interface NodeConditionQueueOptions {
  connection: RedisClient;
  /** slicekeeper's Redis prefix; BullMQ's keys go under its hash-tagged form. @defaultValue `'sk'` */
  prefix?: string;
  logger: Logger;
}

/**
 * The producer side of the node condition queue: asks for a node's `DRAResourcesPublished`
 * condition to be evaluated. Its hooks plug into what already sees the changes: every status a
 * sync records (`SyncWorker`'s `onStatus`), a Node that appears or comes back under a new UID,
 * and a condition someone else (another replica included) wrote (`ClusterCache`'s `onNode` and
 * `onNodeCondition`). A lost ask is made good by the next sync of any of the node's keys (the
 * periodic resync syncs them all).
 */
export class NodeConditionQueue {
  readonly queue: Queue<NodeConditionJob>;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: NodeConditionQueueOptions) {
    this.queue = createNodeConditionQueue(options);
  }

  /** Asks for an evaluation of `node`; absorbed by one that waits already. */
  async enqueue(node: string): Promise<void> {
    await this.queue.add(NODE_CONDITION_JOB_NAME, { node }, nodeConditionJobOptions(node));
  }

  /** For `SyncWorker`'s `onStatus`: a node-local key's sync recorded a status. Never throws. */
  readonly onStatus = (key: SliceKey): void => {
    if (key.node !== '') this.ask(key.node);
  };

  /** For `ClusterCache`'s `onNode`: a Node appeared, or came back under a new UID. */
  readonly onNode = (change: NodeChange): void => {
    if (change.type !== 'DELETED') this.ask(change.name);
  };

  /** For `ClusterCache`'s `onNodeCondition`: the condition changed by someone else's write. */
  readonly onNodeCondition = (name: string): void => {
    this.ask(name);
  };

  close(): Promise<void> {
    this.closing ??= this.queue.close();
    return this.closing;
  }

  private ask(node: string): void {
    this.enqueue(node).catch((error: unknown) => {
      this.options.logger.warn({ node, err: errorMessage(error) }, 'node condition enqueue failed');
    });
  }
}
