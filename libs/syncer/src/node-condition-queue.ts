import { Queue } from 'bullmq';
import type { JobsOptions } from 'bullmq';
import type { RedisClient } from '@slicekeeper/queue';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { NODE_STATUS_QUEUE_NAME, queuePrefix, sliceKeySchema } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { NodeChange } from '@slicekeeper/kube';

/**
 * A node condition job names a node, never a condition (level-triggered): the evaluation reads
 * the node's keys when it runs. The cluster-scoped key's node, '', has no Node.
 */
export const nodeConditionJobSchema = sliceKeySchema
  .pick({ node: true })
  .strict()
  .refine((job) => job.node !== '', {
    message: 'a cluster-scoped key has no Node',
    path: ['node'],
  });
export type NodeConditionJob = z.infer<typeof nodeConditionJobSchema>;

/** The BullMQ job name of a node condition evaluation. Renaming it is a breaking change. */
export const NODE_CONDITION_JOB_NAME = 'evaluate';

/** The backoff type of node condition jobs, implemented by {@link NodeConditionWorker}. */
export const NODE_CONDITION_BACKOFF_TYPE = 'slicekeeper-node-status';

/**
 * Deduplication per node with `keepLastIfActive`: across all replicas at most one evaluation of
 * a node runs at a time, and asking while one runs yields exactly one follow-up. Transient
 * failures retry for ever with the syncer's backoff (BullMQ needs a number; this one is never
 * reached); a waiting retry absorbs new asks and reads the latest state when it runs.
 */
export function nodeConditionJobOptions(node: string): JobsOptions {
  return {
    deduplication: { id: node, keepLastIfActive: true },
    attempts: Number.MAX_SAFE_INTEGER,
    backoff: { type: NODE_CONDITION_BACKOFF_TYPE },
    removeOnComplete: true,
    removeOnFail: { count: 100 },
  };
}

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
    this.queue = new Queue<NodeConditionJob>(NODE_STATUS_QUEUE_NAME, {
      connection: options.connection,
      prefix: queuePrefix(options.prefix ?? 'sk'),
    });
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
