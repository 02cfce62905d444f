import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SupervisedProcess } from './supervised-process';

export interface RedisServerOptions {
  /** Keep an append-only file, so that a restart keeps the data. @defaultValue false */
  appendOnly?: boolean;
  /**
   * The server's working directory, created if missing and kept by `stop()`.
   * @defaultValue a fresh temporary directory, which `stop()` removes
   */
  dir?: string;
  /** Names the process in errors and in `onLine`'s source. @defaultValue `redis` */
  name?: string;
  /** The server's whole environment. @defaultValue this process's */
  env?: Readonly<Record<string, string | undefined>>;
  /** Every line the server writes (its banner and warnings). */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** How long to wait for the server to accept connections, ms. @defaultValue 10000 */
  startTimeoutMs?: number;
  /** See `SupervisedProcessOptions.ownProcessGroup`. @defaultValue false */
  ownProcessGroup?: boolean;
}

/** Thrown when `redis-server` is not installed; the message says what to install. */
export class RedisNotInstalledError extends Error {
  constructor() {
    super(
      'redis-server was not found on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis)',
    );
  }
}

/** How many free ports to try when another process takes one before redis-server binds it. */
const PORT_ATTEMPTS = 5;

/**
 * A private redis-server on a free loopback port, in a directory of its own: never the
 * machine's shared server, never another test's data. It keeps no RDB snapshots; with
 * `appendOnly` it keeps every write (fsync always), so that a crash loses nothing.
 */
export class RedisServer {
  private current: SupervisedProcess;
  private stopping: Promise<void> | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly ownsDir: boolean,
    private readonly options: RedisServerOptions,
    launched: SupervisedProcess,
  ) {
    this.current = launched;
  }

  /**
   * Starts a server on a free port, with another one when a port is taken between the probe
   * and the server's bind. Fails with `RedisNotInstalledError` when redis-server is missing.
   */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const ownsDir = options.dir === undefined;
    const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'slicekeeper-redis-')));
    try {
      await mkdir(dir, { recursive: true });
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const launched = await launch(port, dir, options);
        if (launched !== 'port-in-use') {
          return new RedisServer(port, dir, ownsDir, options, launched);
        }
        if (attempt >= PORT_ATTEMPTS) {
          throw new Error(`redis-server: no free port after ${attempt} attempts`);
        }
      }
    } catch (error) {
      if (ownsDir) await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  get host(): string {
    return '127.0.0.1';
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** The running server's process; another one after `restart()`. */
  get process(): SupervisedProcess {
    return this.current;
  }

  /** The server's process id, while it runs. */
  get pid(): number | undefined {
    return this.current.running ? this.current.pid : undefined;
  }

  /** Kills the server with SIGKILL, as a crash would; `restart()` brings it back. */
  async kill(): Promise<void> {
    await this.current.kill();
  }

  /**
   * Starts the server again on the same port and directory, with its data if append-only;
   * `empty: true` deletes the data first, as a server that lost its disk would come back.
   */
  async restart(options: { empty?: boolean } = {}): Promise<void> {
    await this.current.stop();
    if (options.empty === true) {
      for (const entry of await readdir(this.dir)) {
        await rm(join(this.dir, entry), { recursive: true, force: true });
      }
    }
    const launched = await launch(this.port, this.dir, this.options);
    if (launched === 'port-in-use') {
      throw new Error(`redis-server: port ${this.port} was taken while the server was down`);
    }
    this.current = launched;
  }

  /** Stops the server (SIGTERM, then SIGKILL) and removes the directory it made. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.current.stop();
      if (this.ownsDir) await rm(this.dir, { recursive: true, force: true });
    })();
    return this.stopping;
  }
}

/** Starts redis-server on `port` and waits until it accepts connections. */
async function launch(
  port: number,
  dir: string,
  options: RedisServerOptions,
): Promise<SupervisedProcess | 'port-in-use'> {
  let onOutput: (line: string) => void = () => undefined;
  const output: string[] = [];
  const redis = new SupervisedProcess({
    name: options.name ?? 'redis',
    command: 'redis-server',
    args: [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      options.appendOnly === true ? 'yes' : 'no',
      '--appendfsync',
      'always',
      // BullMQ requires it: an evicted job key is a lost job.
      '--maxmemory-policy',
      'noeviction',
      '--protected-mode',
      'no',
    ],
    env: options.env ?? process.env,
    ownProcessGroup: options.ownProcessGroup ?? false,
    onLine: (line, stream) => {
      options.onLine?.(line, stream);
      if (output.length < 50) output.push(line);
      onOutput(line);
    },
  });
  const timeoutMs = options.startTimeoutMs ?? 10_000;
  const outcome = await new Promise<'ready' | 'port-in-use' | Error>((resolve) => {
    const settle = (value: 'ready' | 'port-in-use' | Error): void => {
      clearTimeout(timer);
      onOutput = () => undefined;
      resolve(value);
    };
    const timer = setTimeout(() => {
      settle(new Error(`redis-server did not start within ${timeoutMs}ms:\n${output.join('\n')}`));
    }, timeoutMs);
    onOutput = (line) => {
      if (line.includes('Ready to accept connections')) settle('ready');
      else if (line.includes('Address already in use')) settle('port-in-use');
    };
    void redis.exited.then((code) => {
      const notFound = (redis.startError as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
      settle(
        notFound
          ? new RedisNotInstalledError()
          : new Error(`redis-server exited with code ${code}:\n${output.join('\n')}`),
      );
    });
  });
  if (outcome === 'ready') return redis;
  await redis.stop(2000);
  if (outcome === 'port-in-use') return 'port-in-use';
  throw outcome;
}

/** A TCP port that was free a moment ago on the loopback interface. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return port;
}
