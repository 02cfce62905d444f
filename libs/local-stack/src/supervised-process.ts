import { spawn } from 'node:child_process';
import type { ChildProcess, Serializable, StdioOptions } from 'node:child_process';
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
  /**
   * Run the process in a process group of its own, so that a Ctrl-C in the terminal reaches
   * only the supervisor, which then stops the children in order (a child that got the
   * terminal's SIGINT too would take the supervisor's SIGTERM as a second signal and exit at
   * once). Unset, a Ctrl-C stops the child with its parent, as a test's children should.
   * @defaultValue false
   */
  ownProcessGroup?: boolean;
  /** Opens an IPC channel (the child is a Node.js process) and receives its messages. */
  onMessage?: (message: unknown) => void;
  /**
   * How many of the latest pino entries `waitForLog` still finds when asked after they came.
   * @defaultValue 200
   */
  keptLogEntries?: number;
}

/** A command line that runs a TypeScript file from its sources, as `npm start` and tests do. */
export function tsxCommand(file: string, ...args: string[]): { command: string; args: string[] } {
  return {
    command: process.execPath,
    // node --import tsx, not the tsx CLI: the CLI runs the file in a grandchild that a signal to
    // this child would not reach.
    args: ['--import', 'tsx', '--conditions=@slicekeeper/source', file, ...args],
  };
}

/**
 * The variables of `env` named in `names` that are set: what a child inherits where every
 * setting is passed explicitly (PATH, HOME …), so that nothing else leaks in.
 */
export function inheritedEnv(
  env: Readonly<Record<string, string | undefined>>,
  names: readonly string[],
): Record<string, string> {
  const inherited: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) inherited[name] = value;
  }
  return inherited;
}

/** How to run a slicekeeper app (`apps/<app>/src/main.ts`) from its TypeScript sources. */
export function appCommand(app: string): { command: string; args: string[] } {
  return tsxCommand(join(repoRoot, 'apps', app, 'src/main.ts'));
}

/** The last lines a process wrote on stderr that are kept for error messages. */
const STDERR_LINES = 40;

/**
 * A child process of the local stack, a test or a benchmark: its lines are read as they come
 * (pino JSON lines are also parsed, to wait for a particular one), and it is stopped gracefully
 * — SIGTERM, then SIGKILL when it does not exit in time.
 */
export class SupervisedProcess {
  readonly name: string;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  readonly exited: Promise<number | NodeJS.Signals>;
  private readonly child: ChildProcess;
  private readonly waiters = new Set<(entry: LogEntry) => void>();
  private readonly seen: LogEntry[] = [];
  private readonly keptLogEntries: number;
  private readonly stderrTail: string[] = [];
  private stopping: Promise<number | NodeJS.Signals> | undefined;
  private spawnError: Error | undefined;

  constructor(options: SupervisedProcessOptions) {
    this.name = options.name;
    this.keptLogEntries = options.keptLogEntries ?? 200;
    const stdio: StdioOptions = ['ignore', 'pipe', 'pipe'];
    if (options.onMessage !== undefined) stdio.push('ipc');
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd ?? repoRoot,
      env: options.env,
      stdio,
      detached: options.ownProcessGroup ?? false,
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
    if (options.onMessage !== undefined) this.child.on('message', options.onMessage);
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
   * Resolves with the first log entry that `match` accepts — a function, or the message the
   * entry must have — (one already seen counts); fails when the process exits first, with its
   * stderr, or after `timeoutMs`.
   */
  waitForLog(
    match: string | ((entry: LogEntry) => boolean),
    what = typeof match === 'string' ? `"${match}"` : 'the awaited line',
    timeoutMs = 30_000,
  ): Promise<LogEntry> {
    const accepts = typeof match === 'string' ? (entry: LogEntry) => entry.msg === match : match;
    const earlier = this.seen.find(accepts);
    if (earlier !== undefined) return Promise.resolve(earlier);
    return new Promise((resolve, reject) => {
      const waiter = (entry: LogEntry): void => {
        if (!accepts(entry)) return;
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

  /** Sends a message on the IPC channel (`onMessage` opened it). */
  send(message: Serializable): void {
    if (!this.child.connected) throw new Error(`${this.name} has no open IPC channel`);
    this.child.send(message);
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
      await this.kill();
      return this.exited;
    })();
    return this.stopping;
  }

  /**
   * Kills the process at once (SIGKILL), as a crash would; resolves once it has exited. The
   * signal goes out before this returns, so it is safe in a process 'exit' handler.
   */
  kill(): Promise<void> {
    if (this.running) this.signal('SIGKILL');
    return this.exited.then(() => undefined);
  }

  /** Sends `signal` to the process; nothing when it is gone already. */
  signal(signal: NodeJS.Signals): void {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone: nothing to signal.
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
    if (this.seen.length > this.keptLogEntries) this.seen.shift();
    for (const waiter of [...this.waiters]) waiter(entry);
  }

  private tail(): string {
    const stderr = this.stderr;
    return stderr === '' ? '' : `:\n${stderr}`;
  }
}
