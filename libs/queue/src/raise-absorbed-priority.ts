import { QueueScript } from './queue-script';

/** Fields of ours on an active job's hash: what its stored follow-up must keep, see below. */
const NEXT_PRIORITY_FIELD = 'sk:nextPriority';
const NEXT_DELAY_FIELD = 'sk:nextDelay';

/**
 * Makes the job that absorbed a sync add run at least as urgently as the add asked: at its
 * priority, and for a follow-up also without more delay. It runs in the MULTI of the add itself,
 * right after BullMQ's add script (`SyncQueue.enqueue`), so it sees exactly the state the add
 * left, and no other client's command (no worker taking the job, no other replica's add) comes
 * between them.
 *
 * What BullMQ 6.7 does with a deduplicated add, and so what is left to do here:
 * - The key's job (the deduplication key `de:<id>` names it) is waiting, prioritized or delayed:
 *   the add is dropped and the job keeps its own priority (`includes/deduplicateJob.lua`,
 *   `deduplicateJobWithoutReplace.lua`; `reschedule` only moves a delayed job to now). Here its
 *   priority is raised: the hash field, which `promoteDelayedJobs.lua` and `retryJob-11.lua`
 *   read when they queue the job again (so a retry keeps it), and, when prioritized, its place,
 *   re-scored as `changePriority-7.lua` does (behind the jobs already at the new level).
 * - The key's job is active: the add is stored as its follow-up (`dn:<id>`,
 *   `storeDeduplicatedNextJob.lua`), replacing the previous one, options and all, and becomes a
 *   job when the active one finishes (`requeueDeduplicatedJob.lua`, from `moveToFinished`). A
 *   stream-lost add followed by a resync add would leave a priority-4 follow-up, delayed by the
 *   resync's spread. So the most urgent priority and the shortest delay of the adds stored since
 *   the job became active are kept on the active job's hash and written into the follow-up's
 *   options after every add. They go with that hash; the follow-up leaves `dn:` only when the job
 *   finishes, so they never outlive the follow-up they describe. The active job's own priority
 *   is raised as well: should it fail, its retry is the key's next sync (the follow-up waits for
 *   it to finish), and it reads the news the follow-up was stored for.
 *
 * Should Redis have forgotten the scripts, `SyncQueue.enqueue` runs the add and this script one
 * after the other instead, once. Between them the job may start (harmless: it reads the add's
 * news), finish or change; the script then raises whatever job is the key's by then, which can
 * only make work sooner, except in one case: a follow-up that became a job in between keeps the
 * last add's priority, not the most urgent one.
 *
 * A priority is only ever raised, so concurrent adds commute. A job without a priority (0, taken
 * before every prioritized one: a stalled job, which BullMQ puts back in the wait list) is left
 * alone. Nothing here creates, moves between states or removes a job: the per-key guarantees
 * (one job at a time, exactly one follow-up) are BullMQ's, untouched.
 *
 * KEYS[1] `de:<id>` the key's deduplication key; KEYS[2] `dn:<id>` the stored follow-up;
 * KEYS[3] active; KEYS[4] prioritized; KEYS[5] `pc`, BullMQ's priority counter.
 * ARGV[1] the prefix of job keys; ARGV[2] the add's priority; ARGV[3] the add's delay, ms.
 * Returns the number of jobs and follow-ups changed.
 */
export const raiseAbsorbedPriority = new QueueScript(
  'slicekeeper:raiseAbsorbedPriority',
  `
local rcall = redis.call

local function raise(jobId, priority)
  local jobKey = ARGV[1] .. jobId
  local current = tonumber(rcall('HGET', jobKey, 'priority'))
  if not current or current == 0 or current <= priority then return 0 end
  rcall('HSET', jobKey, 'priority', priority)
  if rcall('ZREM', KEYS[4], jobId) == 1 then
    rcall('ZADD', KEYS[4], priority * 0x100000000 + rcall('INCR', KEYS[5]) % 0x100000000, jobId)
  end
  return 1
end

local jobId = rcall('GET', KEYS[1])
if not jobId then return 0 end
local priority = tonumber(ARGV[2])
if not rcall('LPOS', KEYS[3], jobId) or rcall('EXISTS', KEYS[2]) == 0 then
  return raise(jobId, priority)
end

local jobKey = ARGV[1] .. jobId
local delay = tonumber(ARGV[3])
local kept = rcall('HMGET', jobKey, '${NEXT_PRIORITY_FIELD}', '${NEXT_DELAY_FIELD}')
priority = math.min(priority, tonumber(kept[1]) or priority)
delay = math.min(delay, tonumber(kept[2]) or delay)
rcall('HSET', jobKey, '${NEXT_PRIORITY_FIELD}', priority, '${NEXT_DELAY_FIELD}', delay)
local changed = raise(jobId, priority)
local opts = cjson.decode(rcall('HGET', KEYS[2], 'opts'))
if opts['priority'] ~= priority or (opts['delay'] or 0) ~= delay then
  opts['priority'] = priority
  opts['delay'] = delay
  rcall('HSET', KEYS[2], 'opts', cjson.encode(opts))
  changed = changed + 1
end
return changed
`,
  5,
);
