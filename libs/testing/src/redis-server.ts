import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@slicekeeper/local-stack';

export interface RedisServerOptions {
  /** Keep an append-only file, so that a restart keeps the data. @defaultValue false */
  appendOnly?: boolean;
  /** How long to wait for the server to accept connections, ms. @defaultValue 10000 */
  startTimeoutMs?: number;
}

/**
 * A private redis-server on a free loopback port, in its own temporary directory: never the
 * machine's shared server, never another test file's data.
 */
export class RedisServer {
  private child: ChildProcess | undefined;
  private stopping: Promise<void> | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  /** Starts a server on a free port. Fails with a clear message when redis-server is missing. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const dir = await mkdtemp(join(tmpdir(), 'slicekeeper-redis-'));
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(await freePort(), dir, options);
      try {
        await server.spawn();
        return server;
      } catch (error) {
        // Another process may take the free port between our probe and redis' bind.
        if (!(error instanceof PortInUseError) || attempt >= 5) {
          await rm(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  get host(): string {
    return '127.0.0.1';
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** The server's process id, while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Kills the server with SIGKILL, as a crash would; `restart()` brings it back. */
  async kill(): Promise<void> {
    await this.terminate('SIGKILL');
  }

  /**
   * Starts the server again on the same port and directory, with its data if append-only;
   * `empty: true` deletes the data first, as a server that lost its disk would come back.
   */
  async restart(options: { empty?: boolean } = {}): Promise<void> {
    await this.terminate('SIGTERM');
    if (options.empty === true) {
      for (const entry of await readdir(this.dir)) {
        await rm(join(this.dir, entry), { recursive: true, force: true });
      }
    }
    await this.spawn();
  }

  /** Stops the server and removes its directory. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.terminate('SIGTERM');
      await rm(this.dir, { recursive: true, force: true });
    })();
    return this.stopping;
  }

  private async spawn(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--save',
      '',
      '--appendonly',
      this.options.appendOnly === true ? 'yes' : 'no',
      '--appendfsync',
      'always',
      '--maxmemory-policy',
      'noeviction',
      '--protected-mode',
      'no',
    ];
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    await waitUntilReady(child, this.options.startTimeoutMs ?? 10_000);
  }

  private async terminate(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        resolve();
      });
    });
    child.kill(signal);
    await exited;
  }
}

class PortInUseError extends Error {}

function waitUntilReady(child: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      finish(new Error(`redis-server did not start within ${timeoutMs}ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) finish();
      else if (output.includes('Address already in use')) {
        child.kill('SIGKILL');
        finish(new PortInUseError(output));
      }
    };
    const onError = (error: NodeJS.ErrnoException): void => {
      finish(
        error.code === 'ENOENT'
          ? new Error(
              'redis-server was not found on PATH: install it (Debian: apt-get install redis-server)',
            )
          : error,
      );
    };
    const onExit = (code: number | null): void => {
      finish(new Error(`redis-server exited with code ${code}:\n${output}`));
    };
    function finish(error?: Error): void {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('error', onError);
      child.off('exit', onExit);
      // Keep draining the pipes so that a chatty server never blocks on a full one.
      child.stdout?.resume();
      child.stderr?.resume();
      if (error === undefined) resolve();
      else reject(error);
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', onError);
    child.once('exit', onExit);
  });
}
