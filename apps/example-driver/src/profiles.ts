import { join } from 'node:path';

/**
 * The example driver's device profiles, after dra-example-driver's: each one an inventory in
 * `inventory/profiles/<profile>.json` (JSON, so that the Python example driver reads the same
 * files with its standard library).
 * - `gpu`: eight whole GPUs of one node.
 * - `partitionable-gpu`: two GPUs whose memory and multiprocessors are shared counters, consumed
 *   by the whole GPU and by MIG-like partitions of it (gate DRAPartitionableDevices).
 * - `nic`: NICs whose bandwidth is consumable capacity shared by several claims, with a request
 *   policy (gate DRAConsumableCapacity).
 * - `fabric`: a cluster-level pool of fabric-attached GPUs, each choosing its own nodes, ready only
 *   once attached (gates DRAPartitionableDevices and DRADeviceBindingConditions); it belongs to
 *   the cluster-scoped key (empty NODE_NAME).
 */
export const DRIVER_PROFILES = ['gpu', 'partitionable-gpu', 'nic', 'fabric'] as const;
export type DriverProfile = (typeof DRIVER_PROFILES)[number];

/** The directory of the profiles' inventory files, from the app's `src/` or `dist/`. */
export const PROFILES_DIR = join(__dirname, '../inventory/profiles');

/** The inventory file a profile publishes. */
export function profileInventoryFile(profile: DriverProfile): string {
  return join(PROFILES_DIR, `${profile}.json`);
}
