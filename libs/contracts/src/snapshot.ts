import { z } from 'zod';
import { driverInventorySchema } from './inventory';
import { MAX_SNAPSHOT_TRACE_LINKS, TRACEPARENT_PATTERN, TRACEPARENT_RULE } from './trace-context';

/** The snapshot schema's refinement: exactly one of `inventory` and `rejected` is set. */
export function holdsOneOutcome(snapshot: { inventory?: unknown; rejected?: unknown }): boolean {
  return (snapshot.inventory === undefined) !== (snapshot.rejected === undefined);
}

/**
 * A key's latest inventory as stored in Redis by the plugin-watcher
 * (`RedisKeys.snapshot`). Each new snapshot gets the next snapshot generation, so the
 * syncer can record which one it has published.
 *
 * A message the watcher could not take (it did not decode, was over the size limit, or held a
 * value slicekeeper cannot publish exactly) is stored as `rejected` instead of `inventory`: the
 * syncer reports it like an invalid inventory and leaves the published slices as they are.
 */
export const inventorySnapshotSchema = z
  .object({
    /** Increases by one with every stored snapshot of the key; starts at 1. */
    generation: z.number().int().positive(),
    /** When the watcher received the inventory (RFC 3339). */
    receivedAt: z.iso.datetime({ offset: true }),
    /** The plugin endpoint the inventory came from. */
    endpoint: z.string(),
    /**
     * With tracing on: the W3C traceparents of the messages this snapshot stands for, oldest
     * first, the stored message last: those absorbed since the key's last finished sync (at most
     * {@link MAX_SNAPSHOT_TRACE_LINKS}, the newest kept). The sync that publishes it is a child
     * of the last and links to all of them.
     */
    traceparents: z
      .array(z.string().regex(TRACEPARENT_PATTERN, TRACEPARENT_RULE))
      .min(1)
      .max(MAX_SNAPSHOT_TRACE_LINKS)
      .optional(),
    inventory: driverInventorySchema.optional(),
    /** Why the driver's latest message was not taken, naming the field or the size. */
    rejected: z.string().optional(),
  })
  .strict()
  .superRefine((snapshot, ctx) => {
    if (!holdsOneOutcome(snapshot)) {
      ctx.addIssue({
        code: 'custom',
        path: ['inventory'],
        message: 'exactly one of inventory and rejected must be set',
      });
    }
  });
export type InventorySnapshot = z.infer<typeof inventorySnapshotSchema>;
