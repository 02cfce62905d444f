import type { Queue } from 'bullmq';

/**
 * When the oldest job of `queue` that waits to be taken (waiting, or prioritized at one of
 * `priorities`; not delayed) was created, ms since the epoch; undefined when none waits.
 *
 * BullMQ takes prioritized jobs by priority, then in the order they entered their level, so
 * each level's first job stands for it: one count per level, then one job read per level
 * present (`getPrioritized` at the level's first index) and the wait list's first job, whatever
 * the backlog. The reads are not one snapshot: a job taken between the count and a read shifts
 * that read to a neighbour, which is good enough for a gauge. Within a level, a job raised to
 * it, or put back after a failure, may be older than the one standing for it.
 */
export async function oldestReadyJobTimestamp(
  queue: Queue,
  priorities: readonly number[],
): Promise<number | undefined> {
  const levels = [...new Set(priorities.filter((priority) => priority > 0))].sort((a, b) => a - b);
  const counts = await queue.getCountsPerPriority(levels);
  const reads = [queue.getWaiting(0, 0)];
  let first = 0;
  for (const level of levels) {
    const count = counts[level] ?? 0;
    if (count > 0) reads.push(queue.getPrioritized(first, first));
    first += count;
  }
  let oldest: number | undefined;
  for (const jobs of await Promise.all(reads)) {
    for (const job of jobs) {
      if (oldest === undefined || job.timestamp < oldest) oldest = job.timestamp;
    }
  }
  return oldest;
}
