import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { SupervisedProcess } from './supervised-process';

export interface StartRedisServerOptions {
  /** Working directory of the server (nothing is persisted there: no RDB, no AOF). */
  dir: string;
  /** @defaultValue `redis` */
  name?: string;
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** @defaultValue 10000 */
  startTimeoutMs?: number;
  env?: Readonly<Record<string, string | undefined>>;
}

export interface RunningRedisServer {
  process: SupervisedProcess;
  url: string;
}

/** Thrown when `redis-server` is not installed; the message says what to install. */
export class RedisNotInstalledError extends Error {
  constructor() {
    super(
      'redis-server was not found on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis), or set REDIS_URL to a Redis you have',
    );
  }
}

/**
 * Starts a private redis-server on a free loopback port that keeps nothing on disk. Retries
 * with another port when one is taken between the probe and the server's bind.
 */
export async function startRedisServer(
  options: StartRedisServerOptions,
): Promise<RunningRedisServer> {
  await mkdir(options.dir, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const result = await tryStart(port, options);
    if (result !== 'port-in-use') return result;
    if (attempt >= 5) throw new Error(`redis-server: no free port after ${attempt} attempts`);
  }
}

async function tryStart(
  port: number,
  options: StartRedisServerOptions,
): Promise<RunningRedisServer | 'port-in-use'> {
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
      options.dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
    ],
    env: options.env ?? process.env,
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
  if (outcome === 'ready') return { process: redis, url: `redis://127.0.0.1:${port}` };
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
