import { z } from 'zod';
import { sliceKeySchema } from './key';
import type { SliceKey } from './key';

/** The plugin type a DRA driver reports from `Registration.GetInfo` (as kubelet expects). */
export const DRA_PLUGIN_TYPE = 'DRAPlugin';

/** slicekeeper's own inventory API: `slicekeeper.v1.ResourcePublisher/WatchResources`. */
export const RESOURCE_PUBLISHER_VERSION = 'v1.ResourcePublisher';

/**
 * What a driver written for kubelet 1.30 offers (the value of 1.30's kubeletplugin helper): it
 * streams `v1alpha3.Node/NodeListAndWatchResources` (named resources), which slicekeeper maps
 * to one node-local pool.
 */
export const KUBELET_130_PLUGIN_VERSION = '1.0.0';

/**
 * The versions of slicekeeper's own ResourcePublisher service, most preferred first: what a
 * driver built on slicekeeper's driver kit offers.
 */
export const SUPPORTED_PUBLISHER_VERSIONS = [RESOURCE_PUBLISHER_VERSION] as const;

/**
 * Every plugin API version slicekeeper accepts at registration, most preferred first: its own
 * ResourcePublisher, then kubelet 1.30's. A registration picks the first version here that the
 * plugin lists too, so a driver that offers both is streamed with ResourcePublisher.
 */
export const SUPPORTED_PLUGIN_VERSIONS = [
  ...SUPPORTED_PUBLISHER_VERSIONS,
  KUBELET_130_PLUGIN_VERSION,
] as const;

/**
 * One registered plugin endpoint of a key, as the registration API stores it
 * (`RedisKeys.registrations`) and the plugin-watcher reads it. A key may have several
 * endpoints at once during a rolling driver update; the most recently registered one that is
 * connected is streamed from.
 */
export const registrationSchema = sliceKeySchema
  .extend({
    /** `unix:///absolute/path.sock` or `host:port`. */
    endpoint: z.string().min(1),
    /**
     * The plugin API version agreed at registration: {@link RESOURCE_PUBLISHER_VERSION}, or
     * {@link KUBELET_130_PLUGIN_VERSION} for a driver written for kubelet 1.30.
     */
    version: z.string().min(1),
    /** When the endpoint was (last) registered, RFC 3339. */
    registeredAt: z.iso.datetime({ offset: true }),
    /**
     * Orders registrations of a key: higher is more recent. From a Redis counter, so that it is
     * consistent across API replicas whatever their clocks say.
     */
    sequence: z.number().int().positive(),
  })
  .strict();
export type Registration = z.infer<typeof registrationSchema>;

/** An entry of the registration event stream (`RedisKeys.registrationEvents`). */
export const registrationEventSchema = z
  .object({
    type: z.enum(['added', 'removed']),
    /** The key id (`<node>/<driver>`). */
    key: z.string(),
    endpoint: z.string(),
  })
  .strict();
export type RegistrationEvent = z.infer<typeof registrationEventSchema>;

/**
 * A key whose last registration was removed (`RedisKeys.removal`). Its slices stay until
 * `withdrawAt`, so that a driver that deregisters on SIGTERM and registers again (a restart, a
 * DaemonSet update) keeps its devices published, as kubelet's wipe delay does; a key that does not
 * register again by then has its slices withdrawn, and is never published again until it does.
 */
export const removalSchema = z
  .object({
    /** When the last registration was removed, ms since the epoch. */
    removedAt: z.number().int().nonnegative(),
    /** When its slices are withdrawn unless it registers again, ms since the epoch. */
    withdrawAt: z.number().int().nonnegative(),
  })
  .strict();
export type Removal = z.infer<typeof removalSchema>;

/**
 * The `{node}` segment of `/v1/plugins/{node}/{driver}` that names the cluster-scoped key (empty
 * node): no node name can hold `_`, so it cannot clash with one.
 */
export const CLUSTER_NODE_SEGMENT = '_cluster';

/** The registration API's path of a plugin: `/v1/plugins/{node}/{driver}`. */
export function pluginPath(key: SliceKey): string {
  const node = key.node === '' ? CLUSTER_NODE_SEGMENT : encodeURIComponent(key.node);
  return `/v1/plugins/${node}/${encodeURIComponent(key.driver)}`;
}
