import { keyId } from '@slicekeeper/contracts';
import type { SliceKey } from '@slicekeeper/contracts';

/** Prefix of every Redis key slicekeeper writes, unless configured otherwise. */
export const DEFAULT_REDIS_PREFIX = 'sk';

/**
 * The Redis key layout: the one place that names Redis keys (lint keeps it so: nothing outside
 * this lib imports it, and no other production code builds a hash-tagged key by hand). Per-key records share the hash tag
 * `{<node>/<driver>}`, so that a key's records live in one Redis Cluster slot and can be read
 * and written together in one MULTI or Lua script. The few global indexes live in their own slots
 * and are only ever written on their own.
 */
export interface RedisKeys {
  /** String: the key's latest inventory snapshot (JSON, `InventorySnapshot`). */
  snapshot(key: SliceKey): string;
  /** String: the latest snapshot generation handed out for the key (INCR). */
  snapshotGeneration(key: SliceKey): string;
  /** String: the syncer's last recorded status of the key (JSON). */
  syncStatus(key: SliceKey): string;
  /**
   * String (decimal): the snapshot generation the key's last finished sync was for (its status's
   * `snapshotGeneration`), written by the syncer with the status. The watcher's store script
   * reads it to tell whether an equal snapshot still owes a sync (`owesSync`), without parsing
   * the syncer's JSON.
   */
  syncedGeneration(key: SliceKey): string;
  /** String: the watcher's stream state for the key (JSON). */
  streamState(key: SliceKey): string;
  /**
   * Sorted set: UIDs of the key's slices a syncer replica is deleting, scored by when the mark
   * expires (ms): their DELETED events are slicekeeper's own (`DeletionMarks`).
   */
  deletedSlices(key: SliceKey): string;
  /** String: held while a sync of the key runs (token, with an expiry); proves no overlap. */
  syncGuard(key: SliceKey): string;
  /** Hash: endpoint → registration (JSON), for every endpoint registered for the key. */
  registrations(key: SliceKey): string;
  /**
   * String: the key's removal (JSON, `Removal`), written when its last registration goes and
   * deleted when it registers again. While it exists no watcher may store or restore anything
   * for the key; its slices are withdrawn once its `withdrawAt` has passed.
   */
  removal(key: SliceKey): string;
  /**
   * Pub/sub channel: the key's sync statuses (JSON `SyncStatus`) whenever what a driver is told
   * of changes; the watcher holding the key's stream passes them on (`NotifyPublishStatus`).
   */
  feedbackChannel(key: SliceKey): string;
  /** String: the plugin-watcher replica (id) that owns the key's stream, with an expiry (shared mode). */
  watcherLease(key: SliceKey): string;
  /** Sorted set (all scores 0, ordered by key id): key ids with at least one registration. */
  readonly registrationIndex: string;
  /**
   * String: a random id written once into an empty Redis (SET NX). A watcher that finds another
   * id, or none, after a reconnect knows Redis lost its data and restores what its live streams
   * know.
   */
  readonly dataset: string;
  /** Stream: registration changes (added, removed) for watchers to follow. */
  readonly registrationEvents: string;
  /** String: counter behind `Registration.sequence`. */
  readonly registrationSequence: string;
  /**
   * Sorted set: every key id slicekeeper has published for, scored by the sync that last wrote
   * it (ms): the first `synced` after any other outcome, and again at least once an hour while
   * the key stays synced (the scores are not read; membership is what counts).
   */
  readonly knownKeys: string;
  /** Sorted set: live plugin-watcher replica ids (shared mode), scored by heartbeat expiry (ms). */
  readonly watcherMembers: string;
  /** Sorted set: key ids of managed slices with no registration, scored by first sight (ms). */
  readonly orphans: string;
  /** Hash: the cluster-wide token bucket of API writes shared by all syncer replicas. */
  readonly writeRateLimit: string;
  /**
   * Prefix of the registration API's per-token request counters (one string per token name and
   * window, with an expiry), shared by all API replicas.
   */
  readonly apiRateLimitPrefix: string;
}

export function redisKeys(prefix: string = DEFAULT_REDIS_PREFIX): RedisKeys {
  const tagged = (key: SliceKey, record: string): string => `${prefix}:{${keyId(key)}}:${record}`;
  return {
    snapshot: (key) => tagged(key, 'snapshot'),
    snapshotGeneration: (key) => tagged(key, 'snapshot-generation'),
    syncStatus: (key) => tagged(key, 'status'),
    syncedGeneration: (key) => tagged(key, 'synced-generation'),
    streamState: (key) => tagged(key, 'stream'),
    deletedSlices: (key) => tagged(key, 'deleted-slices'),
    syncGuard: (key) => tagged(key, 'sync-guard'),
    registrations: (key) => tagged(key, 'registrations'),
    removal: (key) => tagged(key, 'removal'),
    watcherLease: (key) => tagged(key, 'watcher-lease'),
    feedbackChannel: (key) => tagged(key, 'feedback'),
    registrationIndex: `${prefix}:registration-index`,
    dataset: `${prefix}:dataset`,
    registrationEvents: `${prefix}:registration-events`,
    registrationSequence: `${prefix}:registration-sequence`,
    knownKeys: `${prefix}:known-keys`,
    watcherMembers: `${prefix}:watcher-members`,
    orphans: `${prefix}:orphans`,
    writeRateLimit: `${prefix}:write-rate-limit`,
    apiRateLimitPrefix: `${prefix}:api-rate-limit:`,
  };
}

/**
 * Where the registration API's rate limiter keeps its per-token counters: the prefix of its
 * keys, one per token name and window, shared by all API replicas.
 */
export function apiRateLimitNamespace(prefix: string = DEFAULT_REDIS_PREFIX): string {
  return redisKeys(prefix).apiRateLimitPrefix;
}
