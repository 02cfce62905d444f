import { z } from 'zod';
import { driverInventorySchema } from './inventory';

/**
 * A key's latest inventory as stored in Redis by the plugin-watcher
 * (`RedisKeys.snapshot`). Each new snapshot gets the next snapshot generation, so the
 * syncer can record which one it has published.
 */
export const inventorySnapshotSchema = z
  .object({
    /** Increases by one with every stored snapshot of the key; starts at 1. */
    generation: z.number().int().positive(),
    /** When the watcher received the inventory (RFC 3339). */
    receivedAt: z.iso.datetime({ offset: true }),
    /** The plugin endpoint the inventory came from. */
    endpoint: z.string(),
    inventory: driverInventorySchema,
  })
  .strict();
export type InventorySnapshot = z.infer<typeof inventorySnapshotSchema>;
