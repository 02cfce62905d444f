import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  allStarted,
  bootedOrStopped,
  launchRedis,
  launchRedisOnFreePort,
  pollUntil,
  redisCommand,
} from './redis-server';
import type { RedisAddress, RedisLaunchOptions } from './redis-server';
import type { SupervisedProcess } from './supervised-process';

export interface RedisSentinelGroupOptions {
  /** The name sentinels monitor the master by, and clients ask for. @defaultValue `slicekeeper` */
  masterName?: string;
  /** Replicas of the master. @defaultValue 1 */
  replicas?: number;
  /** Sentinels; a majority of them is the quorum. @defaultValue 3 */
  sentinels?: number;
  /** How long a master may not answer before a sentinel thinks it down, ms. @defaultValue 1000 */
  downAfterMs?: number;
  /** Sentinel's `failover-timeout`, ms: also the pause before a failed failover is retried. @defaultValue 3000 */
  failoverTimeoutMs?: number;
  /** How long `start()` may wait for each step (servers up, replicas in sync, sentinels acquainted), ms. @defaultValue 20000 */
  startTimeoutMs?: number;
  /** Every line a process writes; `source` names it (`redis-1`, `sentinel-2` …). */
  onLine?: (line: string, stream: 'stdout' | 'stderr', source: string) => void;
}

/** Thrown when `redis-sentinel` is not installed; the message says what to install. */
export class RedisSentinelNotInstalledError extends Error {
  constructor() {
    super(
      'redis-sentinel was not found on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-sentinel; macOS: brew install redis)',
    );
  }
}

/** A data server or a sentinel of the group; `process` is the last one started. */
interface GroupMember {
  name: string;
  dir: string;
  port: number;
  process: SupervisedProcess;
}

const HOST = '127.0.0.1';

/**
 * A master, its replicas and the sentinels that watch them, each a private process on a free
 * loopback port in a directory of its own: what a client in Sentinel mode needs to live
 * through a real failover. Replication is asynchronous and nothing is persisted, as in the
 * deployments this stands for, so a write acknowledged just before the master dies can be lost.
 */
export class RedisSentinelGroup {
  readonly masterName: string;
  private readonly dataMembers: GroupMember[] = [];
  private readonly watchers: GroupMember[] = [];
  private readonly dirs: string[] = [];
  private stopping: Promise<void> | undefined;

  private constructor(private readonly options: RedisSentinelGroupOptions) {
    this.masterName = options.masterName ?? 'slicekeeper';
  }

  /**
   * Starts the master, then the replicas and waits until they are in sync, then the sentinels
   * and waits until each one knows the master, every replica and every other sentinel. Fails
   * with `RedisNotInstalledError` or `RedisSentinelNotInstalledError` when a program is
   * missing; whatever had started is stopped then.
   */
  static async start(options: RedisSentinelGroupOptions = {}): Promise<RedisSentinelGroup> {
    const group = new RedisSentinelGroup(options);
    return bootedOrStopped(group, () => group.boot());
  }

  /** The sentinels' addresses, what a Sentinel-mode client is given. */
  get sentinels(): RedisAddress[] {
    return this.watchers.map(({ port }) => ({ host: HOST, port }));
  }

  /** The data servers' addresses (master and replicas, running or not), in start order. */
  get servers(): RedisAddress[] {
    return this.dataMembers.map(({ port }) => ({ host: HOST, port }));
  }

  /** The master's address, as the first sentinel that answers reports it. */
  async master(): Promise<RedisAddress> {
    let lastError: unknown;
    for (const sentinel of this.sentinels) {
      try {
        return await this.masterAccordingTo(sentinel);
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`no sentinel reported the master of ${this.masterName}`, { cause: lastError });
  }

  /** Kills the current master with SIGKILL, as a crash would, and returns its address. */
  async killMaster(): Promise<RedisAddress> {
    const address = await this.master();
    await this.server(address).process.kill();
    return address;
  }

  /**
   * Waits until every running sentinel reports the same master, other than `from`, and that
   * server says it is a master (ROLE); returns its address. All of them, not just the leader:
   * a client asks the sentinels in turn, and one that still names the dead master would send
   * it there.
   */
  async waitForFailover(from: RedisAddress, timeoutMs = 15_000): Promise<RedisAddress> {
    return pollUntil(
      `every sentinel names a new master instead of ${from.host}:${from.port} (${this.masterName})`,
      timeoutMs,
      async () => {
        const running = this.watchers.filter(({ process }) => process.running);
        const named = await Promise.all(
          running.map(({ port }) => this.masterAccordingTo({ host: HOST, port })),
        );
        const [master] = named;
        if (master === undefined || master.port === from.port) return undefined;
        if (named.some(({ port }) => port !== master.port)) return undefined;
        const role = (await redisCommand(master, 'ROLE')) as unknown[];
        return role[0] === 'master' ? master : undefined;
      },
    );
  }

  /**
   * Starts a killed data server again on its port, empty, as a replica of the current master,
   * and waits until it is in sync. Sentinel would turn it into one anyway; starting it as a
   * replica keeps an empty master from ever being seen.
   */
  async restart(address: RedisAddress, timeoutMs = 15_000): Promise<void> {
    const member = this.server(address);
    if (member.process.running) {
      throw new Error(`redis ${address.host}:${address.port} is running: kill it first`);
    }
    const master = await this.waitForFailover(address, timeoutMs);
    const launched = await launchRedis(
      member.port,
      member.dir,
      this.launchOptions(member.name, master),
    );
    if (launched === 'port-in-use') {
      throw new Error(`redis-server: port ${member.port} was taken while the server was down`);
    }
    member.process = launched;
    await waitInSync(address, timeoutMs);
  }

  /**
   * Stops the sentinels first (so that none starts a failover while the servers go), then the
   * data servers, and removes every directory. Idempotent; also after a failed `start()`.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.watchers.map(({ process }) => process.stop(2000)));
      await Promise.all(this.dataMembers.map(({ process }) => process.stop(2000)));
      await Promise.all(this.dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    })();
    return this.stopping;
  }

  private async boot(): Promise<void> {
    const replicas = this.options.replicas ?? 1;
    const sentinels = this.options.sentinels ?? 3;
    const timeoutMs = this.options.startTimeoutMs ?? 20_000;
    const master = await this.startServer('redis-1', undefined);
    const replicaAddresses = await allStarted(
      Array.from({ length: replicas }, (_, i) => this.startServer(`redis-${i + 2}`, master)),
    );
    await Promise.all(replicaAddresses.map((replica) => waitInSync(replica, timeoutMs)));
    await allStarted(
      Array.from({ length: sentinels }, (_, i) => this.startSentinel(`sentinel-${i + 1}`, master)),
    );
    await Promise.all(
      this.sentinels.map((sentinel) =>
        pollUntil(
          `sentinel ${sentinel.port} knows ${this.masterName}, its ${replicas} replica(s) and ${sentinels - 1} other sentinel(s)`,
          timeoutMs,
          async () => {
            const fields = pairs(
              await redisCommand(sentinel, 'SENTINEL', 'MASTER', this.masterName),
            );
            const known = (await redisCommand(
              sentinel,
              'SENTINEL',
              'REPLICAS',
              this.masterName,
            )) as unknown[];
            const replicasUp = known.map(pairs).filter((replica) => {
              const flags = replica.get('flags') ?? '';
              return !flags.includes('down') && !flags.includes('disconnected');
            });
            const acquainted =
              fields.get('num-other-sentinels') === String(sentinels - 1) &&
              replicasUp.length === replicas;
            return acquainted ? true : undefined;
          },
        ),
      ),
    );
  }

  private async startServer(
    name: string,
    replicaOf: RedisAddress | undefined,
  ): Promise<RedisAddress> {
    const dir = await this.makeDir();
    const { port, process } = await launchRedisOnFreePort(dir, this.launchOptions(name, replicaOf));
    this.dataMembers.push({ name, dir, port, process });
    return { host: HOST, port };
  }

  private async startSentinel(name: string, master: RedisAddress): Promise<void> {
    const dir = await this.makeDir();
    const quorum = Math.floor((this.options.sentinels ?? 3) / 2) + 1;
    // Sentinel rewrites its config file (epochs, the other sentinels, the current master), so it
    // is a file of this sentinel's own, in its writable directory.
    const config = join(dir, 'sentinel.conf');
    await writeFile(
      config,
      [
        'sentinel resolve-hostnames no',
        `sentinel monitor ${this.masterName} ${master.host} ${master.port} ${quorum}`,
        `sentinel down-after-milliseconds ${this.masterName} ${this.options.downAfterMs ?? 1000}`,
        `sentinel failover-timeout ${this.masterName} ${this.options.failoverTimeoutMs ?? 3000}`,
        `sentinel parallel-syncs ${this.masterName} 1`,
        '',
      ].join('\n'),
    );
    const { port, process } = await launchRedisOnFreePort(dir, {
      name,
      command: 'redis-sentinel',
      leadingArgs: [config],
      notInstalled: () => new RedisSentinelNotInstalledError(),
      onLine: this.forward(name),
    });
    this.watchers.push({ name, dir, port, process });
  }

  private launchOptions(name: string, replicaOf: RedisAddress | undefined): RedisLaunchOptions {
    return {
      name,
      onLine: this.forward(name),
      extraArgs: [
        // A replica's first sync would wait 5 s by default for more replicas to share it.
        '--repl-diskless-sync-delay',
        '0',
        ...(replicaOf === undefined ? [] : ['--replicaof', replicaOf.host, String(replicaOf.port)]),
      ],
    };
  }

  private forward(source: string): RedisLaunchOptions['onLine'] {
    const onLine = this.options.onLine;
    return onLine === undefined
      ? undefined
      : (line, stream) => {
          onLine(line, stream, source);
        };
  }

  private async makeDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'slicekeeper-sentinel-group-'));
    this.dirs.push(dir);
    return dir;
  }

  private server(address: RedisAddress): GroupMember {
    const member = this.dataMembers.find(({ port }) => port === address.port);
    if (member === undefined) {
      throw new Error(`${address.host}:${address.port} is no data server of this group`);
    }
    return member;
  }

  private async masterAccordingTo(sentinel: RedisAddress): Promise<RedisAddress> {
    const reply = await redisCommand(
      sentinel,
      'SENTINEL',
      'GET-MASTER-ADDR-BY-NAME',
      this.masterName,
    );
    if (!Array.isArray(reply) || typeof reply[0] !== 'string' || typeof reply[1] !== 'string') {
      throw new Error(`sentinel ${sentinel.port} does not know ${this.masterName}`);
    }
    return { host: reply[0], port: Number(reply[1]) };
  }
}

/** Waits until the replica at `address` has a live link to its master and has loaded its data. */
function waitInSync(address: RedisAddress, timeoutMs: number): Promise<true> {
  return pollUntil(
    `replica ${address.port} is in sync (master_link_status:up)`,
    timeoutMs,
    async () => {
      const info = String(await redisCommand(address, 'INFO', 'replication'));
      return info.includes('master_link_status:up') ? true : undefined;
    },
  );
}

/** A flat `[field, value, field, value …]` reply (SENTINEL MASTER, SENTINEL REPLICAS) as a map. */
function pairs(reply: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  if (!Array.isArray(reply)) return fields;
  for (let i = 0; i + 1 < reply.length; i += 2) {
    fields.set(String(reply[i]), String(reply[i + 1]));
  }
  return fields;
}
