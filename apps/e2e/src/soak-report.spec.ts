import { memoryGrowth, memoryGrowthLines, rssFits, soakVerdicts } from '../bench/soak-report';
import type { SoakGoals, SoakSample } from '../bench/soak-report';

const MIB = 1024 * 1024;

const goals: SoakGoals = {
  warmupSeconds: 600,
  rssSlopeMiBPerHour: 2,
  redisSpread: 0.05,
  lagP99Ms: 50,
  queueBounds: {},
};

/**
 * A minute-by-minute reading of one service for `minutes`, its RSS (MiB) and start (seconds since
 * the soak started) given per minute.
 */
function samples(
  minutes: number,
  reading: (minute: number) => { rssMiB: number; startedAtT?: number } | undefined,
): SoakSample[] {
  return Array.from({ length: minutes + 1 }, (_, minute): SoakSample => {
    const r = reading(minute);
    const processes: SoakSample['processes'] = {};
    if (r !== undefined) {
      processes['slice-syncer-2'] = {
        rssBytes: r.rssMiB * MIB,
        ...(r.startedAtT === undefined ? {} : { startedAtT: r.startedAtT }),
      };
    }
    return { t: minute * 60, load: 0, processes };
  });
}

function rssVerdict(run: SoakSample[]) {
  const verdict = soakVerdicts(run, goals, ['slice-syncer-2'], { keys: 0, carryingLast: 0 }, [])[0];
  if (verdict === undefined) throw new Error('no RSS verdict');
  return verdict;
}

describe('the soak RSS verdict', () => {
  it('judges a service started again after its own warm-up, not on its start-up', () => {
    // Flat at 125 MiB until a SIGKILL at 27 minutes; the new process starts at 115 MiB, grows
    // to 125 over its first 10 minutes, then stays flat.
    const run = samples(60, (minute) => {
      if (minute < 27) return { rssMiB: 125, startedAtT: -20 };
      if (minute === 27) return undefined;
      return { rssMiB: Math.min(125, 115 + (minute - 28)), startedAtT: 28 * 60 };
    });

    const fits = rssFits(run, goals.warmupSeconds);
    expect(fits.map((f) => [f.startedAtT, f.from / 60, f.to / 60, f.slope])).toEqual([
      [-20, 10, 26, 0],
      [28 * 60, 38, 60, 0],
    ]);
    const verdict = rssVerdict(run);
    expect(verdict.met).toBe(true);
    expect(verdict.actual).toContain('the process started at 28 min: 0 ± 0 MiB/h');
  });

  it('still finds the growth of a service started again', () => {
    const run = samples(60, (minute) =>
      minute < 27
        ? { rssMiB: 125, startedAtT: -20 }
        : { rssMiB: 115 + (minute - 27) * 0.1, startedAtT: 27 * 60 },
    );

    const verdict = rssVerdict(run);
    expect(verdict.met).toBe(false);
    expect(verdict.actual).toContain('the process started at 27 min: 6 ± 0 MiB/h');
  });

  it('without starts (older results), judges the service as one process', () => {
    const run = samples(60, (minute) => ({ rssMiB: minute < 30 ? 125 : 115 }));

    const [fit] = rssFits(run, goals.warmupSeconds);
    expect(fit?.startedAtT).toBeUndefined();
    expect(fit?.slope).toBeLessThan(-2);
    expect(rssVerdict(run).met).toBe(true);
  });

  it('leaves out a process started too late to be judged, and judges the one before it', () => {
    const run = samples(20, (minute) =>
      minute < 15
        ? { rssMiB: 125, startedAtT: -20 }
        : { rssMiB: 118 + minute, startedAtT: 15 * 60 },
    );

    const verdict = rssVerdict(run);
    expect(verdict.met).toBe(true);
    expect(verdict.actual).toContain(
      'the process started at 15 min: too few samples after its warm-up to judge (0)',
    );
  });

  it('does not meet the goal when no process had readings after its warm-up', () => {
    expect(rssVerdict(samples(9, () => ({ rssMiB: 125, startedAtT: -20 }))).met).toBe(false);
  });
});

describe('the soak Redis memory verdict', () => {
  /** Redis's readings each minute for 60 minutes, restarted from its AOF at 39. */
  function redisRun(usedMiB: (minute: number) => number): SoakSample[] {
    return Array.from({ length: 61 }, (_, minute) => ({
      t: minute * 60,
      load: 0,
      processes: {},
      redis: {
        usedMemoryBytes: usedMiB(minute) * MIB,
        keys: 7030,
        // Read from Redis's uptime: a second off from one reading to the next.
        startedAtT: minute < 39 ? -30 : 39 * 60 + (minute % 2),
      },
    }));
  }
  const events = [10, 20, 30, 39, 40, 50].map((minute) => ({ t: minute * 60, what: 'event' }));
  const memoryVerdict = (run: SoakSample[]) => {
    const verdict = soakVerdicts(run, goals, [], { keys: 0, carryingLast: 0 }, events).find((v) =>
      v.goal.startsWith('Redis used_memory'),
    );
    if (verdict === undefined) throw new Error('no Redis memory verdict');
    return verdict;
  };

  it('judges a Redis restarted from its append-only file after its own warm-up', () => {
    // The reloaded dataset is compact (5.9 MiB) and regrows to the 6.85 it held before.
    const verdict = memoryVerdict(
      redisRun((minute) => (minute < 39 || minute > 42 ? 6.85 : 5.9 + (minute - 39) * 0.3)),
    );
    expect(verdict.met).toBe(true);
    expect(verdict.actual).toContain('and after 10 min of Redis started again at 39 min');
  });

  it('still finds growth after the restart', () => {
    expect(
      memoryVerdict(redisRun((minute) => (minute < 39 ? 6.85 : 6.85 + minute * 0.1))).met,
    ).toBe(false);
  });
});

describe('where the soak says a process memory went', () => {
  /** 30 minutes of one watcher: its old space steps up 4 MiB at 20 minutes, the rest flat. */
  const run = Array.from({ length: 31 }, (_, minute): SoakSample => {
    const old = minute < 20 ? 40 : 44;
    return {
      t: minute * 60,
      load: 0,
      processes: {
        'plugin-watcher': {
          rssBytes: (100 + old) * MIB,
          heapTotalBytes: (8 + old) * MIB,
          heapUsedBytes: 30 * MIB,
          heapSpacesBytes: { new: 8 * MIB, old: old * MIB, shared: 0 },
          startedAtT: -5,
        },
        redis: { rssBytes: 20 * MIB },
      },
    };
  });

  it('compares the first 5 judged minutes with the last 5, part by part, for Node processes', () => {
    const [watcher, ...others] = memoryGrowth(run, 600);
    expect(others).toEqual([]);
    expect(watcher?.first).toEqual([600, 900]);
    expect(watcher?.last).toEqual([1500, 1800]);
    expect(watcher?.parts).toEqual({
      RSS: { first: 140, last: 144 },
      'heap committed': { first: 48, last: 52 },
      'heap used': { first: 30, last: 30 },
      'outside the heap': { first: 92, last: 92 },
      'new space': { first: 8, last: 8 },
      'old space': { first: 40, last: 44 },
    });
  });

  it('prints a row per part with its change, a column per process', () => {
    const lines = memoryGrowthLines(memoryGrowth(run, 600));
    expect(lines[2]).toBe('| part | plugin-watcher, 10–15 → 25–30 min |');
    expect(lines).toContain('| old space | 40 → 44 (+4) |');
    expect(lines).toContain('| heap used | 30 → 30 (+0) |');
  });

  it('leaves out a process with under two windows judged', () => {
    expect(memoryGrowth(run, 1500)).toEqual([]);
  });
});

describe('the soak lag verdict', () => {
  const lagVerdict = (run: SoakSample[]) =>
    soakVerdicts(run, goals, ['plugin-watcher'], { keys: 0, carryingLast: 0 }, []).find((v) =>
      v.goal.startsWith('plugin-watcher event-loop lag'),
    );
  // A reading every 10 s for 20 minutes: p99 12 ms, the longest delay 15 ms, but for a storm at
  // 15 minutes (p99 41 ms) and one collection's pause of 380 ms at 16 minutes.
  const run = Array.from({ length: 121 }, (_, i): SoakSample => {
    const t = i * 10;
    return {
      t,
      load: 0,
      processes: {
        'plugin-watcher': {
          lagP99Ms: t === 900 ? 41 : 12,
          lagMaxMs: t === 960 ? 380 : t === 900 ? 60 : 15,
        },
      },
    };
  });

  it('judges the worst p99 after the warm-up, and tells the longest single delay beside it', () => {
    const verdict = lagVerdict(run);
    expect(verdict?.met).toBe(true);
    expect(verdict?.actual).toBe(
      'worst 41 ms at 15 min (61 samples after 10 min); its longest single delay 380 ms at 16 min',
    );
  });

  it('is not met by a window whose p99 is over the goal', () => {
    const storm = run.map((s) =>
      s.t === 1100 ? { ...s, processes: { 'plugin-watcher': { lagP99Ms: 57.3 } } } : s,
    );
    const verdict = lagVerdict(storm);
    expect(verdict?.met).toBe(false);
    expect(verdict?.actual).toContain('worst 57.3 ms at 18.3 min');
  });

  it('has no verdict to give without readings', () => {
    const verdict = lagVerdict(run.map((s) => ({ ...s, processes: {} })));
    expect(verdict).toEqual({
      goal: 'plugin-watcher event-loop lag p99 ≤ 50 ms in every 10 s window',
      actual: 'no readings',
      met: false,
    });
  });
});
