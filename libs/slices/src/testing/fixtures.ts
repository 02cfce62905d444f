import type { CounterSet, Device, Pool } from '@slicekeeper/contracts';
import { planSync } from '../plan-sync';
import type { PlanSyncInput } from '../plan-sync';
import type { ResourceSlice, StoredResourceSlice } from '../resource-slice';

/**
 * Fixture builders for the planner's tests and benchmark: realistic defaults (a GPU driver on
 * one node), overridable field by field, so that each test case states only what it is about.
 */

export const DRIVER = 'gpu.example.com';
export const NODE = 'node-1';
export const NODE_UID = '0b3c9a52-6d1e-4f7a-9c2b-8e5d4a1f3c70';

/** A GPU as a DRA driver would publish it: typed attributes and capacity. */
export function gpu(index: number, overrides: Partial<Device> = {}): Device {
  return {
    name: `gpu-${index}`,
    attributes: {
      index: { int: index },
      uuid: { string: `GPU-${index.toString(16).padStart(8, '0')}-7f3a-4c2e-9b1d` },
      model: { string: 'LATEST-GPU-MODEL' },
      driverVersion: { version: '1.2.3' },
      productName: { string: 'Example GPU 80GB' },
      architecture: { string: 'Hopper' },
      migCapable: { bool: true },
      'gpu.example.com/pcieRoot': { string: 'pci0000:00' },
    },
    capacity: {
      memory: { value: '80Gi' },
      multiprocessors: { value: '132' },
    },
    ...overrides,
  };
}

/** `count` GPUs numbered from `first`. */
export function gpus(count: number, first = 0): Device[] {
  return Array.from({ length: count }, (_, i) => gpu(first + i));
}

/** A device with the taint that halves its slice's limit. */
export function taintedGpu(index: number): Device {
  return gpu(index, { taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }] });
}

/** A counter set of `memory` counters, for partitionable devices. */
export function counterSet(name: string, memory = '80Gi'): CounterSet {
  return { name, counters: { memory: { value: memory } } };
}

/** A node-local pool named after the node, the usual layout of a node's driver. */
export function pool(overrides: Partial<Pool> = {}): Pool {
  return { name: NODE, scope: { kind: 'node' }, devices: gpus(8), ...overrides };
}

/** A planner input for the default key with one default pool and nothing published yet. */
export function planInput(overrides: Partial<PlanSyncInput> = {}): PlanSyncInput {
  return {
    node: NODE,
    nodeUid: NODE_UID,
    driver: DRIVER,
    pools: [pool()],
    existing: [],
    ...overrides,
  };
}

/** The ResourceSlices slicekeeper sends to publish `pools` for the default key from scratch. */
export function sentSlices(pools: Pool[] = [pool()]): ResourceSlice[] {
  return [...planSync(planInput({ pools })).creates];
}

/**
 * `slice` as the API server answers the create that stored it: named after its `generateName`,
 * with a UID and a resource version, through a JSON round trip; then changed by `change` (the
 * server's own additions, or fields a feature gate made it drop).
 */
export function storedSlice(
  slice: ResourceSlice,
  change: (stored: StoredResourceSlice) => void = () => undefined,
): StoredResourceSlice {
  const sent = JSON.parse(JSON.stringify(slice)) as ResourceSlice;
  const stored: StoredResourceSlice = {
    ...sent,
    metadata: {
      ...sent.metadata,
      name: `${sent.metadata.generateName ?? ''}x7k2p`,
      uid: '5f0c2e1a-9b7d-4c3e-8a6f-2d1b0e9c7a54',
      resourceVersion: '1042',
    },
  };
  change(stored);
  return stored;
}
