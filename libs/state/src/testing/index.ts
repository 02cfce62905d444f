import type { DriverInventory, SliceKey } from '@slicekeeper/contracts';

/**
 * The Redis key layout, for specs and benchmarks that look at a record directly (or corrupt
 * one on purpose). Production code reaches records through the repositories only.
 */
export { redisKeys } from '../redis-keys';
export type { RedisKeys } from '../redis-keys';

/** The key most specs use. */
export const KEY: SliceKey = { node: 'node-a', driver: 'gpu.example.com' };

/** An inventory of `count` GPUs; `memory` varies it. */
export function gpus(count: number, memory = '80Gi'): DriverInventory {
  return {
    pools: [
      {
        name: 'node-a',
        scope: { kind: 'node' },
        devices: Array.from({ length: count }, (_, index) => ({
          name: `gpu-${index}`,
          attributes: { model: { string: 'H100' }, index: { int: index } },
          capacity: { memory: { value: memory } },
        })),
      },
    ],
  };
}
