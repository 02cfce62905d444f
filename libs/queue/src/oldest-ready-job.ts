import type { Queue } from 'bullmq';
import { QueueScript } from './queue-script';

/**
 * The creation time of the oldest job ready to be taken: the job next in line in BullMQ's wait
 * list (jobs without a priority) and at each priority level of its prioritized set (score =
 * priority × 2³² + a counter, so a level's first member is the one that entered it first).
 * A few reads per level present, whatever the backlog: the prioritized set is never read whole.
 *
 * KEYS[1] wait; KEYS[2] prioritized. ARGV[1] the prefix of job keys.
 * Returns the timestamp (ms since the epoch), or nil when nothing is ready.
 */
const oldestReadyJob = new QueueScript(
  'slicekeeper:oldestReadyJob',
  `
local rcall = redis.call
local oldest = false
local function consider(jobId)
  local timestamp = tonumber(rcall('HGET', ARGV[1] .. jobId, 'timestamp'))
  if timestamp and (not oldest or timestamp < oldest) then oldest = timestamp end
end

local waiting = rcall('LINDEX', KEYS[1], -1)
if waiting then consider(waiting) end
local from = 0
while true do
  local head = rcall('ZRANGEBYSCORE', KEYS[2], string.format('%.0f', from), '+inf',
    'WITHSCORES', 'LIMIT', 0, 1)
  if #head == 0 then return oldest end
  consider(head[1])
  from = (math.floor(tonumber(head[2]) / 0x100000000) + 1) * 0x100000000
end
`,
  2,
  true,
);

/**
 * When the oldest job of `queue` that waits to be taken (waiting or prioritized, at any
 * priority; not delayed) was created, ms since the epoch; undefined when none waits. Within a
 * priority level the job that entered it first stands for it: a job raised to the level, or
 * put back after a failure, may be older than that one.
 */
export async function oldestReadyJobTimestamp(queue: Queue): Promise<number | undefined> {
  const timestamp = await oldestReadyJob.run(
    queue,
    [queue.toKey('wait'), queue.toKey('prioritized')],
    [queue.toKey('')],
  );
  return typeof timestamp === 'number' ? timestamp : undefined;
}
