import { z } from 'zod';
import { driverNameProblem, nodeNameProblem } from './names';

/**
 * The unit of work: one driver on one node. Every job, every Redis record and every sync is per
 * key. A cluster-scoped pool (network-attached devices) uses the empty node name.
 */
export interface SliceKey {
  readonly node: string;
  readonly driver: string;
}

export const sliceKeySchema = z
  .object({
    node: z.string().superRefine((node, ctx) => {
      const problem = nodeNameProblem(node);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
    driver: z.string().superRefine((driver, ctx) => {
      const problem = driverNameProblem(driver);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
  })
  .strict();

/**
 * The key as one string, `<node>/<driver>` (`/<driver>` when cluster-scoped). Unambiguous
 * because neither a node nor a driver name can contain `/`. Used as the BullMQ deduplication id
 * and inside Redis hash tags.
 */
export function keyId(key: SliceKey): string {
  return `${key.node}/${key.driver}`;
}

/** The inverse of {@link keyId}; throws on a string that is not a valid key id. */
export function parseKeyId(id: string): SliceKey {
  const slash = id.indexOf('/');
  if (slash < 0) throw new Error(`invalid key id "${id}": expected <node>/<driver>`);
  const key = { node: id.slice(0, slash), driver: id.slice(slash + 1) };
  const parsed = sliceKeySchema.safeParse(key);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid key id "${id}": ${problems.join('; ')}`);
  }
  return key;
}
