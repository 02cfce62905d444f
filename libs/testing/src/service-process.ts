import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from '@slicekeeper/local-stack';

export interface ServiceProcessOptions {
  /** The app under apps/, e.g. `slice-syncer`. */
  app: string;
  env: Record<string, string>;
  /** Copies the service's log lines here (e.g. for a failing test's output). */
  onLine?: (line: string) => void;
}

/** A JSON log line of a service (pino). */
export type LogEntry = Record<string, unknown> & { msg?: string };

/**
 * A slicekeeper app run as its own process, as in production, from its TypeScript sources:
 * `node --import tsx` (not the tsx CLI, which runs the app in a child process that a SIGKILL
 * would not reach).
 */
export class ServiceProcess {
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;
  private readonly waiters: { msg: string; resolve: (entry: LogEntry) => void }[] = [];
  private readonly seen: LogEntry[] = [];
  private stderr = '';

  constructor(private readonly options: ServiceProcessOptions) {
    this.child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--conditions=@slicekeeper/source',
        join(repoRoot, 'apps', options.app, 'src/main.ts'),
      ],
      { cwd: repoRoot, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code) => {
        resolve(code);
      });
    });
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    createInterface({ input: this.child.stdout ?? process.stdin }).on('line', (line) => {
      options.onLine?.(line);
      let entry: LogEntry;
      try {
        entry = JSON.parse(line) as LogEntry;
      } catch {
        return;
      }
      this.seen.push(entry);
      for (const waiter of this.waiters.filter((w) => w.msg === entry.msg)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(entry);
      }
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves with the first log entry whose message is `msg`; fails if the process exits first. */
  waitForLog(msg: string, timeoutMs = 20_000): Promise<LogEntry> {
    const earlier = this.seen.find((entry) => entry.msg === msg);
    if (earlier !== undefined) return Promise.resolve(earlier);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `${this.options.app} did not log "${msg}" within ${timeoutMs}ms:\n${this.stderr}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push({
        msg,
        resolve: (entry) => {
          clearTimeout(timer);
          resolve(entry);
        },
      });
      void this.exited.then((code) => {
        clearTimeout(timer);
        reject(
          new Error(
            `${this.options.app} exited (${code}) before logging "${msg}":\n${this.stderr}`,
          ),
        );
      });
    });
  }

  /** Kills the process as a crash would. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Asks the process to shut down gracefully and waits for it. */
  async stop(): Promise<number | null> {
    if (this.running) this.child.kill('SIGTERM');
    return this.exited;
  }

  private get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
}

/** Reads one sample of a Prometheus metric from a /metrics URL (the first series that matches). */
export async function readMetric(metricsUrl: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const prefix = labels === '' ? name : `${name}{${labels}`;
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${prefix} `) || l.startsWith(labels === '' ? `${name}{` : prefix));
  if (line === undefined) throw new Error(`no metric ${prefix} at ${metricsUrl}`);
  return Number(line.split(' ').at(-1));
}
