import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';

export interface ShutdownOptions {
  logger: Logger;
  /**
   * Closes the process's parts in order: stop intake first, drain work, then close connections.
   * Called once, on the first signal.
   */
  close: () => Promise<void>;
  /** Bound on `close`, ms; past it the process exits with code 1. @defaultValue 30000 */
  timeoutMs?: number;
  /** @defaultValue `['SIGTERM', 'SIGINT']` */
  signals?: readonly NodeJS.Signals[];
  /** Injected for tests. @defaultValue `process.exit` */
  exit?: (code: number) => void;
}

/**
 * Installs the graceful-shutdown handlers of a process: the first signal runs `close` (bounded
 * by `timeoutMs`) and exits 0, or 1 when closing failed or took too long; a second signal exits
 * at once. Returns a function that runs the same shutdown without a signal.
 */
export function installShutdown(options: ShutdownOptions): () => Promise<void> {
  const { logger, timeoutMs = 30_000, signals = ['SIGTERM', 'SIGINT'] } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let shutdown: Promise<void> | undefined;

  const run = (reason: string): Promise<void> => {
    shutdown ??= (async () => {
      logger.info({ reason }, 'shutting down');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => {
          resolve('timeout');
        }, timeoutMs);
      });
      try {
        const outcome = await Promise.race([
          options.close().then(() => 'closed' as const),
          timedOut,
        ]);
        if (outcome === 'timeout') {
          logger.error({ timeoutMs }, 'shutdown timed out');
          exit(1);
        } else {
          logger.info('stopped');
          exit(0);
        }
      } catch (error) {
        logger.error({ err: errorMessage(error) }, 'shutdown failed');
        exit(1);
      } finally {
        clearTimeout(timer);
      }
    })();
    return shutdown;
  };

  for (const signal of signals) {
    process.on(signal, () => {
      if (shutdown !== undefined) {
        logger.warn({ signal }, 'second signal, exiting now');
        exit(1);
        return;
      }
      void run(signal);
    });
  }
  return () => run('requested');
}
