import type { IRedisTransaction, Queue, RedisClient } from 'bullmq';

/**
 * A Lua script of ours that runs on a BullMQ queue's own Redis client, registered there as a
 * command the way BullMQ registers its scripts, so that it can share a MULTI with them.
 *
 * `LuaScript` cannot do that: its answer to NOSCRIPT is to send the whole batch again, which
 * would repeat BullMQ's commands as well. A registered command does not meet NOSCRIPT after a
 * Redis restart or a failover: ioredis sends a script's text the first time on each connection
 * (EVAL) and its SHA after that. Only when Redis forgets its scripts while a connection lives
 * (SCRIPT FLUSH) does a MULTI answer NOSCRIPT, and ioredis does not recover from that inside a
 * MULTI as it does outside one: a caller that runs scripts in a MULTI handles it.
 */
export class QueueScript {
  private readonly registeredOn = new WeakSet<RedisClient>();

  /**
   * @param name - the command's name on the client, unique among the scripts registered there.
   * @param readOnly - the script only reads (ioredis may send it to a replica).
   */
  constructor(
    private readonly name: string,
    private readonly source: string,
    private readonly numberOfKeys: number,
    private readonly readOnly = false,
  ) {}

  /**
   * The queue's Redis client, this script registered on it. Transactions that run the script
   * must be made from this client after this call: a transaction knows the commands its client
   * had when it was made.
   */
  async clientOf(queue: Queue): Promise<RedisClient> {
    const client = await queue.getBackend().client;
    if (!this.registeredOn.has(client)) {
      client.defineCommand(this.name, {
        numberOfKeys: this.numberOfKeys,
        lua: this.source,
        readOnly: this.readOnly,
      });
      this.registeredOn.add(client);
    }
    return client;
  }

  async run(
    queue: Queue,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    const client = await this.clientOf(queue);
    return (await client.runCommand(this.name, [...keys, ...args])) as unknown;
  }

  /** Adds the script to a transaction made from {@link clientOf}'s client. */
  queue(
    transaction: IRedisTransaction,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): void {
    transaction.runCommand(this.name, [...keys, ...args]);
  }
}
