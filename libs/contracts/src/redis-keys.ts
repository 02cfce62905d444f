import { keyId } from './key';
import type { SliceKey } from './key';

/** Prefix of every Redis key slicekeeper writes, unless configured otherwise. */
export const DEFAULT_REDIS_PREFIX = 'sk';

/**
 * The Redis key layout: the one place that names Redis keys. Per-key records share the hash tag
 * `{<node>/<driver>}`, so that a key's records live in one Redis Cluster slot and can be read
 * and written together in one MULTI or Lua script. The few global indexes live in their own slots
 * and are only ever written on their own.
 */
export interface RedisKeys {
  /** String: the key's latest inventory snapshot (JSON, {@link InventorySnapshot}). */
  snapshot(key: SliceKey): string;
  /** String: the latest snapshot generation handed out for the key (INCR). */
  snapshotGeneration(key: SliceKey): string;
  /** String: the syncer's last recorded status of the key (JSON). */
  syncStatus(key: SliceKey): string;
  /** String: the watcher's stream state for the key (JSON). */
  streamState(key: SliceKey): string;
  /** Hash: endpoint → registration (JSON), for every endpoint registered for the key. */
  registrations(key: SliceKey): string;
  /** Sorted set: key ids with at least one registration, scored by last change (ms). */
  readonly registrationIndex: string;
  /** Stream: registration changes (added, removed) for watchers to follow. */
  readonly registrationEvents: string;
  /** Sorted set: every key id slicekeeper has published for, scored by last sync (ms). */
  readonly knownKeys: string;
}

export function redisKeys(prefix: string = DEFAULT_REDIS_PREFIX): RedisKeys {
  const tagged = (key: SliceKey, record: string): string => `${prefix}:{${keyId(key)}}:${record}`;
  return {
    snapshot: (key) => tagged(key, 'snapshot'),
    snapshotGeneration: (key) => tagged(key, 'snapshot-generation'),
    syncStatus: (key) => tagged(key, 'status'),
    streamState: (key) => tagged(key, 'stream'),
    registrations: (key) => tagged(key, 'registrations'),
    registrationIndex: `${prefix}:registration-index`,
    registrationEvents: `${prefix}:registration-events`,
    knownKeys: `${prefix}:known-keys`,
  };
}
