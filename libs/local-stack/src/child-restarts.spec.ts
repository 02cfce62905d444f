import { ManualClock } from '@slicekeeper/time/testing';
import { ChildRestarts } from './child-restarts';

/** A child that dies at once on every start, with the stack's lines and its restarts counted. */
function crashLoop(options: { healthyAfterMs?: number } = {}) {
  const clock = new ManualClock();
  const lines: string[] = [];
  let starts = 0;
  const restarts = new ChildRestarts({
    say: (line) => lines.push(line),
    clock,
    backoff: { random: () => 0 },
    ...options,
  });
  const restart = (): Promise<void> => {
    starts++;
    return Promise.resolve();
  };
  return {
    clock,
    lines,
    restarts,
    restart,
    get starts() {
      return starts;
    },
  };
}

describe('ChildRestarts', () => {
  it('says which child died, how, and when it comes back, then restarts it after that delay', async () => {
    const t = crashLoop();
    t.restarts.started('example-driver-node-a');
    await t.clock.advance(90_000);
    t.restarts.exited('example-driver-node-a', 'SIGKILL', t.restart);

    expect(t.lines).toEqual([
      'example-driver-node-a exited (SIGKILL) after 90.0s; restarting it in 1.0s (restart 1)',
    ]);
    await t.clock.advance(999);
    expect(t.starts).toBe(0);
    await t.clock.advance(1);
    expect(t.starts).toBe(1);
  });

  it('backs off a child that keeps dying, doubling up to 30 s', async () => {
    const t = crashLoop();
    t.restarts.started('slice-syncer-1');
    const delays: number[] = [];
    for (let death = 0; death < 8; death++) {
      t.restarts.exited('slice-syncer-1', 1, t.restart);
      const [delay] = t.clock.pending();
      delays.push(delay ?? -1);
      await t.clock.advance(delay ?? 0);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
    expect(t.starts).toBe(8);
    expect(t.lines.at(-1)).toBe(
      'slice-syncer-1 exited (1) after 0.0s; restarting it in 30.0s (restart 8)',
    );
  });

  it('starts over at the first delay once the child stayed up long enough', async () => {
    const t = crashLoop({ healthyAfterMs: 60_000 });
    t.restarts.started('plugin-watcher');
    for (let death = 0; death < 3; death++) {
      t.restarts.exited('plugin-watcher', 1, t.restart);
      await t.clock.advance(t.clock.pending()[0] ?? 0);
    }
    expect(t.clock.pending()).toEqual([]);
    // Up for a minute since its third restart: healthy.
    await t.clock.advance(60_000);
    t.restarts.exited('plugin-watcher', 'SIGSEGV', t.restart);
    expect(t.clock.pending()).toEqual([1_000]);
    expect(t.lines.at(-1)).toBe(
      'plugin-watcher exited (SIGSEGV) after 60.0s; restarting it in 1.0s (restart 1)',
    );
  });

  it('keeps one backoff per child', async () => {
    const t = crashLoop();
    t.restarts.started('a');
    t.restarts.started('b');
    t.restarts.exited('a', 1, t.restart);
    await t.clock.advance(1_000);
    t.restarts.exited('a', 1, t.restart);
    t.restarts.exited('b', 1, t.restart);
    expect(t.clock.pending()).toEqual([1_000, 2_000]);
  });

  it('counts a restart that fails as another death', async () => {
    const t = crashLoop();
    t.restarts.started('redis');
    let attempts = 0;
    const failing = (): Promise<void> => {
      attempts++;
      return Promise.reject(new Error('port 6379 was taken'));
    };
    t.restarts.exited('redis', 'SIGKILL', failing);
    await t.clock.advance(1_000);
    expect(attempts).toBe(1);
    expect(t.lines.at(-1)).toBe(
      'redis exited (failed to start: port 6379 was taken) after 0.0s; restarting it in 2.0s (restart 2)',
    );
    await t.clock.advance(2_000);
    expect(attempts).toBe(2);
  });

  it('restarts nothing after close(), pending or later', async () => {
    const t = crashLoop();
    t.restarts.started('kube-emulator');
    t.restarts.exited('kube-emulator', 'SIGKILL', t.restart);
    t.restarts.close();
    t.restarts.exited('kube-emulator', 'SIGTERM', t.restart);
    await t.clock.advance(60_000);
    expect(t.starts).toBe(0);
    expect(t.clock.pending()).toEqual([]);
    expect(t.lines).toHaveLength(1);
  });
});
