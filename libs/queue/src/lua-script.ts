import { createHash } from 'node:crypto';
import { Cluster } from 'ioredis';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './redis-connection';

/** One command's outcome in a pipeline, as ioredis reports it. */
export type PipelineReply = [error: Error | null, result: unknown];

/** The scripts queued on each pipeline that {@link execPipeline} builds, to load on NOSCRIPT. */
const queuedScripts = new WeakMap<ChainableCommander, Set<LuaScript>>();

/**
 * A Lua script run by its SHA (EVALSHA), loaded on first use and again after a Redis restart
 * (NOSCRIPT), so that a hot path does not send the script text with every call.
 */
export class LuaScript {
  private readonly sha: string;

  constructor(
    private readonly source: string,
    private readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, this.numberOfKeys, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(this.source, this.numberOfKeys, ...keys, ...args);
    }
  }

  /**
   * Adds the script, by its SHA, to a pipeline built by {@link execPipeline}, which loads it
   * when Redis does not know it.
   */
  queue(
    pipeline: ChainableCommander,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): void {
    queuedScripts.get(pipeline)?.add(this);
    pipeline.evalsha(this.sha, this.numberOfKeys, ...keys, ...args);
  }

  /**
   * Makes Redis know the script (SCRIPT LOAD): on a Cluster every master, since SCRIPT LOAD has
   * no key to route it by and the script runs wherever its keys' slot lives.
   */
  async load(redis: RedisClient): Promise<void> {
    const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
    await Promise.all(servers.map((server) => server.script('LOAD', this.source)));
  }
}

/**
 * Sends the commands that `build` adds as one pipeline (one write, one batch of replies; not a
 * transaction) and returns each command's reply in order. When Redis does not know a script
 * added by {@link LuaScript.queue} (it restarted, or its scripts were flushed), the pipeline's
 * scripts are loaded and the whole batch is sent again: its commands must be safe to repeat.
 *
 * The pipelines asked for on one connection within one tick go out as one write, each caller's
 * commands kept together and in order (on one server; a Cluster's pipelines each keep to their
 * own slot). A socket write was a quarter of the slice-syncer's CPU per key of a warm resync,
 * whose concurrent syncs each sent two pipelines (issue 29's figure, ≤ 0.3 ms per key). `build`
 * only adds commands: it must not throw.
 */
export function execPipeline(
  redis: RedisClient,
  build: (pipeline: ChainableCommander) => void,
): Promise<PipelineReply[]> {
  if (redis instanceof Cluster) return execOne(redis, build);
  return new Promise((resolve, reject) => {
    let batch = batches.get(redis);
    if (batch === undefined) {
      const started: Batched[] = [];
      batches.set(redis, started);
      process.nextTick(() => {
        batches.delete(redis);
        sendBatch(redis, started);
      });
      batch = started;
    }
    batch.push({ build, resolve, reject });
  });
}

/**
 * Sends writes as {@link execPipeline} does (in the tick's batch) and throws the first error
 * among their replies.
 */
export async function execWrites(
  redis: RedisClient,
  build: (pipeline: ChainableCommander) => void,
): Promise<void> {
  for (const reply of await execPipeline(redis, build)) replyOf(reply);
}

/**
 * MGET of keys that share a hash slot, sent in the tick's pipeline batch ({@link execPipeline}):
 * the reads of many keys asked for at once (a status page, a node's keys) go out in one write
 * instead of one each.
 */
export async function batchedMget(redis: RedisClient, keys: string[]): Promise<(string | null)[]> {
  const [reply] = await execPipeline(redis, (pipeline) => pipeline.mget(...keys));
  if (reply === undefined) throw new Error('MGET got no reply');
  return replyOf(reply) as (string | null)[];
}

/** A pipeline waiting for its tick's write. */
interface Batched {
  build: (pipeline: ChainableCommander) => void;
  resolve: (replies: PipelineReply[]) => void;
  reject: (error: unknown) => void;
}

/** The pipelines of the current tick, per connection. */
const batches = new WeakMap<RedisClient, Batched[]>();

function sendBatch(redis: RedisClient, batch: readonly Batched[]): void {
  const sizes: number[] = [];
  execOne(redis, (pipeline) => {
    sizes.length = 0;
    for (const { build } of batch) {
      const before = pipeline.length;
      build(pipeline);
      sizes.push(pipeline.length - before);
    }
  }).then(
    (replies) => {
      let offset = 0;
      batch.forEach(({ resolve }, i) => {
        const size = sizes[i] ?? 0;
        resolve(replies.slice(offset, offset + size));
        offset += size;
      });
    },
    (error: unknown) => {
      for (const { reject } of batch) reject(error);
    },
  );
}

async function execOne(
  redis: RedisClient,
  build: (pipeline: ChainableCommander) => void,
): Promise<PipelineReply[]> {
  const scripts = new Set<LuaScript>();
  const send = async (): Promise<PipelineReply[]> => {
    const pipeline = redis.pipeline();
    queuedScripts.set(pipeline, scripts);
    build(pipeline);
    // Only a MULTI whose WATCH failed answers null; a plain pipeline always has replies.
    return (await pipeline.exec()) ?? [];
  };
  const replies = await send();
  if (!replies.some(([error]) => isNoScript(error))) return replies;
  await Promise.all([...scripts].map((script) => script.load(redis)));
  return send();
}

/** The reply's result; its error, thrown. */
export function replyOf([error, result]: PipelineReply): unknown {
  if (error !== null) throw error;
  return result;
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.includes('NOSCRIPT');
}
