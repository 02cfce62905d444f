import { z } from 'zod';
import { sliceKeySchema } from './key';

/** The plugin type a DRA driver reports from `Registration.GetInfo` (as kubelet expects). */
export const DRA_PLUGIN_TYPE = 'DRAPlugin';

/**
 * The versions of the ResourcePublisher service slicekeeper speaks, most preferred first. A
 * registration picks the first version the plugin lists that is also here.
 */
export const SUPPORTED_PUBLISHER_VERSIONS = ['v1.ResourcePublisher'] as const;

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
    /** The ResourcePublisher version agreed at registration. */
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
