import { createLogger } from './logger';
import { installShutdown } from './shutdown';

const logger = createLogger({ service: 'test', level: 'silent' });

describe('installShutdown', () => {
  it('closes once and exits 0', async () => {
    const exits: number[] = [];
    const close = jest.fn(() => Promise.resolve());
    const shutdown = installShutdown({ logger, close, signals: [], exit: (c) => exits.push(c) });
    await Promise.all([shutdown(), shutdown()]);
    expect(close).toHaveBeenCalledTimes(1);
    expect(exits).toEqual([0]);
  });

  it('exits 1 when closing fails', async () => {
    const exits: number[] = [];
    const shutdown = installShutdown({
      logger,
      close: () => Promise.reject(new Error('redis gone')),
      signals: [],
      exit: (c) => exits.push(c),
    });
    await shutdown();
    expect(exits).toEqual([1]);
  });

  it('exits 1 when closing takes longer than the timeout', async () => {
    jest.useFakeTimers();
    try {
      const exits: number[] = [];
      const shutdown = installShutdown({
        logger,
        close: () => new Promise(() => undefined),
        timeoutMs: 5000,
        signals: [],
        exit: (c) => exits.push(c),
      });
      const done = shutdown();
      await jest.advanceTimersByTimeAsync(5000);
      await done;
      expect(exits).toEqual([1]);
    } finally {
      jest.useRealTimers();
    }
  });
});
