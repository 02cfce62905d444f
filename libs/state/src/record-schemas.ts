import {
  holdsOneOutcome,
  inventorySnapshotSchema,
  streamStateSchema,
  syncStatusSchema,
} from '@slicekeeper/contracts';
import { CompiledSchema } from './compiled-schema';

/*
 * The records every sync reads, and every status page: checked by compiled code, zod naming the
 * problem of one that fails (`CompiledSchema`).
 */

export const snapshotRecord = new CompiledSchema(inventorySnapshotSchema, {
  refinements: [holdsOneOutcome],
});
export const streamStateRecord = new CompiledSchema(streamStateSchema);
export const syncStatusRecord = new CompiledSchema(syncStatusSchema);
