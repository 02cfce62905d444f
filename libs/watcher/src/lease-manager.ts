import type { RedisClient } from '@slicekeeper/queue';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { WatcherLeases } from '@slicekeeper/state';
import type { Clock, TimerHandle } from '@slicekeeper/time';

export interface LeaseManagerOptions {
  redis: RedisClient;
  /** slicekeeper's Redis prefix. @defaultValue `'sk'` */
  prefix?: string;
  /** This replica's id; unique among the replicas (e.g. the pod name plus a random suffix). */
  replicaId: string;
  /**
   * How long a lease (and a replica's membership) lives without renewal, ms: a surviving replica
   * takes over the keys of a dead one within about `leaseMs × 4/3`. @defaultValue 10000
   */
  leaseMs?: number;
  clock: Clock;
  logger: Logger;
  /** This replica now owns the key (id `<node>/<driver>`): open its streams. */
  onAcquired: (id: string) => void;
  /** This replica no longer owns the key: close its streams (the new owner publishes). */
  onLost: (id: string, reason: string) => void;
}

/**
 * Shared mode: spreads the registered keys over the live watcher replicas, each key owned by
 * exactly one replica through a Redis lease (`SET NX PX`, renewed every `leaseMs / 3`).
 *
 * Replicas announce themselves in a sorted set scored by heartbeat expiry (Redis server time, so
 * that clock skew between pods does not matter). Every replica ranks the live replicas for each
 * key by rendezvous hashing and only tries to take the keys it ranks itself first for, so keys
 * spread evenly without coordination; when a replica joins, the others hand over the keys that
 * now belong to it; when one dies, its membership and leases expire and the keys' new first
 * choices take them.
 */
export class LeaseManager {
  private readonly options: LeaseManagerOptions;
  private readonly leases: WatcherLeases;
  private readonly leaseMs: number;
  private readonly candidates = new Set<string>();
  private readonly held = new Set<string>();
  private timer: TimerHandle | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private started = false;
  private closing: Promise<void> | undefined;

  constructor(options: LeaseManagerOptions) {
    this.options = options;
    this.leases = new WatcherLeases({ redis: options.redis, prefix: options.prefix });
    this.leaseMs = options.leaseMs ?? 10_000;
  }

  /** Number of keys this replica owns. */
  get heldCount(): number {
    return this.held.size;
  }

  holds(id: string): boolean {
    return this.held.has(id);
  }

  /** Joins the replicas and takes this replica's share of the current candidates. */
  async start(): Promise<void> {
    this.started = true;
    await this.tick();
  }

  /** The registered keys (ids) this replica may own; a change is acted on at once. */
  setCandidates(ids: Iterable<string>): void {
    this.candidates.clear();
    for (const id of ids) this.candidates.add(id);
    this.schedule(0);
  }

  addCandidate(id: string): void {
    if (this.candidates.has(id)) return;
    this.candidates.add(id);
    this.schedule(0);
  }

  removeCandidate(id: string): void {
    if (!this.candidates.delete(id)) return;
    this.schedule(0);
  }

  /** Forgets a key a write found owned by another replica (the next tick sorts it out). */
  lost(id: string): void {
    if (this.held.delete(id)) this.options.onLost(id, 'lease taken over');
  }

  /** Releases every lease and leaves the replica set, so that others take over at once. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.timer !== undefined) this.options.clock.clearTimer(this.timer);
      this.timer = undefined;
      await this.ticking;
      const { replicaId } = this.options;
      try {
        await Promise.all([...this.held].map((id) => this.leases.release(id, replicaId)));
        await this.leases.leave(replicaId);
      } catch (error) {
        this.options.logger.warn({ err: errorMessage(error) }, 'lease release failed');
      }
      this.held.clear();
    })();
    return this.closing;
  }

  private schedule(delayMs: number): void {
    if (!this.started || this.closing !== undefined) return;
    if (this.ticking !== undefined) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) this.options.clock.clearTimer(this.timer);
    this.timer = this.options.clock.setTimer(() => {
      this.timer = undefined;
      void this.tick();
    }, delayMs);
  }

  private tick(): Promise<void> {
    this.ticking ??= this.renewAndBalance()
      .catch((error: unknown) => {
        this.options.logger.warn({ err: errorMessage(error) }, 'lease round failed');
      })
      .finally(() => {
        this.ticking = undefined;
        const again = this.again;
        this.again = false;
        this.schedule(again ? 0 : Math.max(1, Math.floor(this.leaseMs / 3)));
      });
    return this.ticking;
  }

  private async renewAndBalance(): Promise<void> {
    const { replicaId } = this.options;
    const members = await this.leases.heartbeat(replicaId, this.leaseMs);
    if (this.closing !== undefined) return;

    const work: Promise<void>[] = [];
    for (const id of new Set([...this.candidates, ...this.held])) {
      const mine = this.candidates.has(id) && firstChoice(id, members) === replicaId;
      if (this.held.has(id)) {
        if (mine) {
          work.push(
            this.leases.renew(id, replicaId, this.leaseMs).then((renewed) => {
              if (!renewed) this.lost(id);
            }),
          );
        } else {
          this.held.delete(id);
          const reason = this.candidates.has(id) ? 'handed over' : 'deregistered';
          this.options.onLost(id, reason);
          work.push(this.leases.release(id, replicaId));
        }
      } else if (mine) {
        work.push(
          this.leases.take(id, replicaId, this.leaseMs).then((taken) => {
            if (taken && this.closing === undefined && this.candidates.has(id)) {
              this.held.add(id);
              this.options.onAcquired(id);
            }
          }),
        );
      }
    }
    await Promise.all(work);
  }
}

/** Rendezvous (highest random weight) hashing: the member that ranks highest for `id`. */
export function firstChoice(id: string, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = fnv1a(`${member}\u0000${id}`);
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

/** 32-bit FNV-1a with a final avalanche, as an unsigned number. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  return hash >>> 0;
}
