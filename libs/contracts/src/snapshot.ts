import { z } from 'zod';
import { driverInventorySchema } from './inventory';

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
    inventory: driverInventorySchema.optional(),
    /** Why the driver's latest message was not taken, naming the field or the size. */
    rejected: z.string().optional(),
  })
  .strict()
  .superRefine((snapshot, ctx) => {
    if ((snapshot.inventory === undefined) === (snapshot.rejected === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['inventory'],
        message: 'exactly one of inventory and rejected must be set',
      });
    }
  });
export type InventorySnapshot = z.infer<typeof inventorySnapshotSchema>;
