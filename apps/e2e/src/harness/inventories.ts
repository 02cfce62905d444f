import type { DriverInventory } from '@slicekeeper/contracts';
import type { ResourceSlice } from './emulator-client';

export interface GpuInventoryOptions {
  /** Devices in the node's pool. @defaultValue 8 */
  devices?: number;
  /** Written into every device's `rev` attribute, so a slice shows which inventory it carries. */
  rev?: number;
  /** Devices `changed` get rev + 1 instead (e.g. one changed device). */
  changed?: readonly number[];
  /** The pool's generation, as the driver chooses it. */
  generation?: number;
}

/** A node-local pool of GPUs, like the example driver's, with a revision on every device. */
export function gpuInventory(options: GpuInventoryOptions = {}): DriverInventory {
  const rev = options.rev ?? 0;
  const changed = new Set(options.changed ?? []);
  return {
    pools: [
      {
        name: '',
        scope: { kind: 'node' },
        ...(options.generation === undefined ? {} : { generation: options.generation }),
        devices: Array.from({ length: options.devices ?? 8 }, (_, i) => ({
          name: `gpu-${i}`,
          attributes: {
            model: { string: 'H100-SXM5-80GB' },
            index: { int: i },
            rev: { int: changed.has(i) ? rev + 1 : rev },
          },
          capacity: { memory: { value: '80Gi' } },
        })),
      },
    ],
  };
}

/** Device name → its `rev` attribute, over the given slices. */
export function deviceRevs(slices: readonly ResourceSlice[]): Map<string, number | undefined> {
  const revs = new Map<string, number | undefined>();
  for (const slice of slices) {
    for (const device of slice.spec.devices ?? [])
      revs.set(device.name, device.attributes?.rev?.int);
  }
  return revs;
}

/** Whether the slices publish exactly the inventory's devices, each with its revision. */
export function publishes(slices: readonly ResourceSlice[], inventory: DriverInventory): boolean {
  const published = deviceRevs(slices);
  const wanted = new Map<string, number | undefined>();
  for (const pool of inventory.pools) {
    for (const device of pool.devices) wanted.set(device.name, device.attributes?.rev?.int);
  }
  if (published.size !== wanted.size) return false;
  for (const [name, rev] of wanted) {
    if (!published.has(name) || published.get(name) !== rev) return false;
  }
  // One slice per pool index: no duplicate slices of a pool.
  const counts = new Set(slices.map((s) => s.spec.pool.resourceSliceCount));
  return counts.size <= 1 && slices.length === (slices[0]?.spec.pool.resourceSliceCount ?? 0);
}
