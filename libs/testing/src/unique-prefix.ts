import { randomBytes } from 'node:crypto';

/**
 * A prefix no other test uses, for BullMQ queues and slicekeeper's Redis keys, so that tests
 * sharing one redis-server never see each other's data.
 */
export function uniquePrefix(label: string): string {
  return `test-${label}-${randomBytes(4).toString('hex')}`;
}
