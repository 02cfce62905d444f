import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The repository root (libs/local-stack/src is three levels below it). */
export const repoRoot = join(__dirname, '../../..');

/** A JSON log line of a service (pino). */
export type LogEntry = Record<string, unknown> & { msg?: string };

export interface SupervisedProcessOptions {
  /** Shown as the prefix of the process's lines and in errors, e.g. `slice-syncer-1`. */
  name: string;
  command: string;
  args: readonly string[];
  /** The whole environment of the process (nothing is inherited implicitly). */
  env: Readonly<Record<string, string | undefined>>;
  /** @defaultValue the repository root */
  cwd?: string;
  /** Every line the process writes, as it comes. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
}

/** How to run a slicekeeper app from its TypeScript sources, as `npm start` and tests do. */
export function appCommand(app: string): { command: string; args: string[] } {
  return {
    command: process.execPath,
    // node --import tsx, not the tsx CLI: the CLI runs the app in a grandchild that a signal to
    // this child would not reach.
    args: [
      '--import',
      'tsx',
      '--conditions=@slicekeeper/source',
      join(repoRoot, 'apps', app, 'src/main.ts'),
    ],
  };
}

/** The last lines a process wrote on stderr that are kept for error messages. */
const STDERR_LINES = 40;

/**
 * One child process of the local stack: its lines are read as they come (pino JSON lines are
 * also parsed, to wait for a particular one), and it is stopped gracefully — SIGTERM, then
 * SIGKILL when it does not exit in time.
 *
 * The child gets its own process group, so that a Ctrl-C in the terminal reaches only the
 * supervisor, which then stops the children in order (a child that got the terminal's SIGINT
 * too would take the supervisor's SIGTERM as a second signal and exit at once).
 */
export class SupervisedProcess {
  readonly name: string;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  readonly exited: Promise<number | NodeJS.Signals>;
  private readonly child: ChildProcess;
  private readonly waiters = new Set<(entry: LogEntry) => void>();
  private readonly seen: LogEntry[] = [];
  private readonly stderrTail: string[] = [];
  private stopping: Promise<number | NodeJS.Signals> | undefined;
  private spawnError: Error | undefined;

  constructor(options: SupervisedProcessOptions) {
    this.name = options.name;
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd ?? repoRoot,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error) => {
        this.spawnError = error;
        resolve(-1);
      });
      // 'close', not 'exit': by then stdout and stderr are read to the end, so an error message
      // built on exit has the process's last words.
      this.child.once('close', (code, signal) => {
        resolve(code ?? signal ?? -1);
      });
    });
    if (this.child.stdout !== null) {
      createInterface({ input: this.child.stdout }).on('line', (line) => {
        options.onLine?.(line, 'stdout');
        this.parse(line);
      });
    }
    if (this.child.stderr !== null) {
      createInterface({ input: this.child.stderr }).on('line', (line) => {
        this.stderrTail.push(line);
        if (this.stderrTail.length > STDERR_LINES) this.stderrTail.shift();
        options.onLine?.(line, 'stderr');
      });
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return (
      this.spawnError === undefined &&
      this.child.exitCode === null &&
      this.child.signalCode === null
    );
  }

  /** The last lines of stderr, or why the process could not be started. */
  get stderr(): string {
    return this.spawnError?.message ?? this.stderrTail.join('\n');
  }

  /** Why the process could not be started at all (e.g. ENOENT: not installed). */
  get startError(): Error | undefined {
    return this.spawnError;
  }

  /**
   * Resolves with the first log entry that `match` accepts (one already seen counts); fails
   * when the process exits first, with its stderr, or after `timeoutMs`.
   */
  waitForLog(
    match: (entry: LogEntry) => boolean,
    what: string,
    timeoutMs = 30_000,
  ): Promise<LogEntry> {
    const earlier = this.seen.find(match);
    if (earlier !== undefined) return Promise.resolve(earlier);
    return new Promise((resolve, reject) => {
      const waiter = (entry: LogEntry): void => {
        if (!match(entry)) return;
        settle();
        resolve(entry);
      };
      const timer = setTimeout(() => {
        settle();
        reject(new Error(`${this.name} did not log ${what} within ${timeoutMs}ms${this.tail()}`));
      }, timeoutMs);
      const settle = (): void => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
      };
      this.waiters.add(waiter);
      void this.exited.then((code) => {
        if (!this.waiters.has(waiter)) return;
        settle();
        reject(new Error(`${this.name} exited (${code}) before it logged ${what}${this.tail()}`));
      });
    });
  }

  /**
   * Stops the process: SIGTERM, then SIGKILL after `graceMs`. Resolves once it has exited.
   * Idempotent: a second call returns the same promise.
   */
  stop(graceMs = 10_000): Promise<number | NodeJS.Signals> {
    this.stopping ??= (async () => {
      if (!this.running) return this.exited;
      this.signal('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const killed = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      const outcome = await Promise.race([this.exited, killed.then(() => 'timeout' as const)]);
      clearTimeout(timer);
      if (outcome !== 'timeout') return outcome;
      this.kill();
      return this.exited;
    })();
    return this.stopping;
  }

  /** Kills the process at once (SIGKILL). Safe to call in a process 'exit' handler. */
  kill(): void {
    if (this.running) this.signal('SIGKILL');
  }

  private signal(signal: NodeJS.Signals): void {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone: nothing to stop.
    }
  }

  private parse(line: string): void {
    if (!line.startsWith('{')) return;
    let entry: LogEntry;
    try {
      entry = JSON.parse(line) as LogEntry;
    } catch {
      return;
    }
    this.seen.push(entry);
    // Only the first few dozen lines matter for waiting; do not grow without bound.
    if (this.seen.length > 200) this.seen.shift();
    for (const waiter of [...this.waiters]) waiter(entry);
  }

  private tail(): string {
    const stderr = this.stderr;
    return stderr === '' ? '' : `:\n${stderr}`;
  }
}
