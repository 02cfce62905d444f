import type { Clock } from '@slicekeeper/time';

export interface ExpiringCacheOptions {
  /** Most entries kept; the least recently used one goes first. */
  maxEntries: number;
  clock: Pick<Clock, 'now'>;
}

interface Entry<V> {
  readonly value: V;
  /** Epoch ms after which the entry is gone. */
  readonly expiresAt: number;
}

/**
 * A map bounded in size (least recently used out first) whose entries expire at a time each is
 * given. The bound keeps a flood of distinct keys (forged tokens) from growing the heap; the
 * expiry keeps an answer from outliving what it was about (a token's `exp`, a revoked grant).
 */
export class ExpiringCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly maxEntries: number;
  private readonly clock: Pick<Clock, 'now'>;

  constructor(options: ExpiringCacheOptions) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 0) {
      throw new RangeError(`maxEntries: must be a non-negative integer, got ${options.maxEntries}`);
    }
    this.maxEntries = options.maxEntries;
    this.clock = options.clock;
  }

  /** Entries held, expired ones not yet dropped included. */
  get size(): number {
    return this.entries.size;
  }

  /** The value of `key` unless absent or expired; a hit becomes the most recently used. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (this.clock.now() >= entry.expiresAt) return undefined;
    // Map keeps insertion order: re-inserting makes it the most recently used.
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Keeps `value` until `expiresAt` (epoch ms); one already expired is not kept. */
  set(key: string, value: V, expiresAt: number): void {
    this.entries.delete(key);
    if (this.maxEntries === 0 || expiresAt <= this.clock.now()) return;
    this.entries.set(key, { value, expiresAt });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldest);
    }
  }
}
