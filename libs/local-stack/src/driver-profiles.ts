import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { driverInventorySchema } from '@slicekeeper/contracts';
import type { DriverInventory } from '@slicekeeper/contracts';
import { GATED_SLICE_FIELDS } from '@slicekeeper/slices';
import type { DraFeatureGateName } from '@slicekeeper/slices';
import { repoRoot } from './supervised-process';

/**
 * Where the example driver's device profiles live (its `PROFILE` setting). Read by path: the
 * module boundaries keep tooling from importing an app, and the files are the one list of
 * profiles, which the Python example driver reads too.
 */
export const DRIVER_PROFILES_DIR = join(repoRoot, 'apps/example-driver/inventory/profiles');

/** The example driver's profiles, by name, sorted. */
export function listDriverProfiles(dir: string = DRIVER_PROFILES_DIR): string[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => file.slice(0, -'.json'.length))
    .sort();
}

/** A profile's inventory; throws naming the file when it is not one. */
export function loadDriverProfile(
  profile: string,
  dir: string = DRIVER_PROFILES_DIR,
): DriverInventory {
  const file = join(dir, `${profile}.json`);
  const parsed = driverInventorySchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`${file}: not an inventory: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/**
 * Whether the inventory belongs to the cluster-scoped key (empty node name): every pool reaches
 * other nodes than the driver's (all nodes, a selector, or each device's own choice). The stack
 * then runs one driver for the cluster instead of one per node.
 */
export function isClusterScoped(inventory: DriverInventory): boolean {
  return inventory.pools.length > 0 && inventory.pools.every((pool) => pool.scope.kind !== 'node');
}

/**
 * The feature gates a server needs to keep every field of the inventory, after the field table
 * of libs/slices (`GATED_SLICE_FIELDS`, read from kube-apiserver's ResourceSlice strategy): the
 * inventory's device fields are named as the slice's, so each one maps to its gate as a slice
 * field would. In the order of first use.
 */
export function featureGatesUsed(inventory: DriverInventory): DraFeatureGateName[] {
  const gates = new Set<DraFeatureGateName>();
  const use = (path: string): void => {
    const gate = GATED_SLICE_FIELDS[path];
    if (gate !== undefined) gates.add(gate);
  };
  for (const pool of inventory.pools) {
    if (pool.scope.kind === 'per-device') use('spec.perDeviceNodeSelection');
    const slices = pool.slices ?? [];
    const counterSets = [pool.sharedCounters ?? [], ...slices.map((s) => s.sharedCounters ?? [])];
    if (counterSets.some((sets) => sets.length > 0)) use('spec.sharedCounters');
    for (const device of [...pool.devices, ...slices.flatMap((s) => s.devices)]) {
      for (const field of Object.keys(device)) use(`spec.devices[*].${field}`);
      for (const capacity of Object.values(device.capacity ?? {})) {
        if (capacity.requestPolicy !== undefined) use('spec.devices[*].capacity[*].requestPolicy');
      }
    }
  }
  return [...gates];
}
