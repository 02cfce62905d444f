import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
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
      const { port, process: launched } = await launchRedisOnFreePort(dir, options);
      return new RedisServer(port, dir, ownsDir, options, launched);
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
    const launched = await launchRedis(this.port, this.dir, this.options);
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

/**
 * What the Redis fixtures (a server, a Sentinel group, a cluster) vary in the one launcher:
 * the program and arguments around the private-server defaults.
 */
export interface RedisLaunchOptions extends RedisServerOptions {
  /** @defaultValue `redis-server` */
  command?: 'redis-server' | 'redis-sentinel';
  /** Arguments before the defaults: a sentinel's config file must come first. */
  leadingArgs?: readonly string[];
  /** Arguments after the defaults, which override them (`--replicaof`, `--cluster-enabled`). */
  extraArgs?: readonly string[];
  /** The error for a missing program. @defaultValue a `RedisNotInstalledError` */
  notInstalled?: () => Error;
}

/**
 * Starts a Redis process on a free port, with another port when one is taken between the probe
 * and the bind, and waits until it accepts connections.
 */
export async function launchRedisOnFreePort(
  dir: string,
  options: RedisLaunchOptions,
): Promise<{ port: number; process: SupervisedProcess }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const launched = await launchRedis(port, dir, options);
    if (launched !== 'port-in-use') return { port, process: launched };
    if (attempt >= PORT_ATTEMPTS) {
      throw new Error(
        `${options.command ?? 'redis-server'}: no free port after ${attempt} attempts`,
      );
    }
  }
}

/**
 * Starts a Redis process on `port` and waits until it accepts connections; `port-in-use` when
 * another process has the port.
 */
export async function launchRedis(
  port: number,
  dir: string,
  options: RedisLaunchOptions,
): Promise<SupervisedProcess | 'port-in-use'> {
  let onOutput: (line: string) => void = () => undefined;
  const output: string[] = [];
  const command = options.command ?? 'redis-server';
  const redis = new SupervisedProcess({
    name: options.name ?? 'redis',
    command,
    args: [
      ...(options.leadingArgs ?? []),
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
      ...(options.extraArgs ?? []),
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
      settle(new Error(`${command} did not start within ${timeoutMs}ms:\n${output.join('\n')}`));
    }, timeoutMs);
    onOutput = (line) => {
      // A sentinel never says it is ready: it names itself once it listens.
      if (line.includes('Ready to accept connections') || line.includes('Sentinel ID is')) {
        settle('ready');
      } else if (line.includes('Address already in use')) settle('port-in-use');
    };
    void redis.exited.then((code) => {
      const notFound = (redis.startError as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
      settle(
        notFound
          ? (options.notInstalled?.() ?? new RedisNotInstalledError())
          : new Error(`${command} exited with code ${code}:\n${output.join('\n')}`),
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

/** Where a Redis process listens. */
export interface RedisAddress {
  host: string;
  port: number;
}

/**
 * Sends one command on a connection of its own and closes it: a fixture's probe must neither
 * queue behind a dead server nor reconnect to it, so it fails at once when nothing listens.
 */
export async function redisCommand(
  address: RedisAddress,
  command: string,
  ...args: (string | number)[]
): Promise<unknown> {
  const client = new Redis({
    host: address.host,
    port: address.port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 2000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command, ...args);
  } finally {
    // Disconnecting a client whose connection failed leaves a 2 s timer behind (ioredis 5).
    if (client.status !== 'end') client.disconnect();
  }
}

/**
 * Asks `probe` every `intervalMs` until it returns something other than `undefined`, and
 * returns that; a probe that throws counts as "not yet". Fails after `timeoutMs` with `what`
 * was awaited and the probe's last error.
 */
export async function pollUntil<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs}ms waiting until ${what}${cause}`);
    }
    await sleep(intervalMs);
  }
}

/**
 * Resolves with `group` once `boot` has started it; when `boot` fails, stops whatever it had
 * started (`group.stop()`) and rethrows, so that a failed start leaves no process behind.
 */
export async function bootedOrStopped<T extends { stop(): Promise<void> }>(
  group: T,
  boot: () => Promise<void>,
): Promise<T> {
  try {
    await boot();
  } catch (error) {
    await group.stop();
    throw error;
  }
  return group;
}

/**
 * Like `Promise.all`, but settles only once every start has, so that a process still starting
 * when another fails is recorded, and stopped, before the group is.
 */
export async function allStarted<T>(starts: Promise<T>[]): Promise<T[]> {
  const outcomes = await Promise.allSettled(starts);
  const failed = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<T>).value);
}
