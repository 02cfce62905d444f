import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  allStarted,
  bootedOrStopped,
  launchRedisOnFreePort,
  pollUntil,
  redisCommand,
} from './redis-server';
import type { RedisAddress, RedisLaunchOptions } from './redis-server';
import type { SupervisedProcess } from './supervised-process';

export interface RedisClusterGroupOptions {
  /** Masters the 16384 slots are spread over; redis-cli creates no cluster with fewer than 3. @defaultValue 3 */
  masters?: number;
  /** Replicas of each master. @defaultValue 1 */
  replicasPerMaster?: number;
  /**
   * `cluster-node-timeout`, ms: how long a node may not answer before it is thought failing;
   * a replica takes over about a second or two after it. @defaultValue 1000
   */
  nodeTimeoutMs?: number;
  /** How long `start()` may wait for each step (servers up, cluster created, cluster ok), ms. @defaultValue 20000 */
  startTimeoutMs?: number;
  /** Every line a process writes; `source` names it (`redis-cluster-1` …, `redis-cli`). */
  onLine?: (line: string, stream: 'stdout' | 'stderr', source: string) => void;
}

/** Thrown when `redis-cli` is not installed; the message says what to install. */
export class RedisCliNotInstalledError extends Error {
  constructor() {
    super(
      'redis-cli was not found on PATH: install it (Debian/Ubuntu: sudo apt-get install redis-tools, which redis-server pulls in; macOS: brew install redis)',
    );
  }
}

/** One node as a `CLUSTER NODES` line describes it. */
interface ClusterNode {
  id: string;
  address: RedisAddress;
  flags: string[];
  /** The master's id, for a replica. */
  masterId: string | undefined;
  /** Inclusive slot ranges the node owns (migrating and importing slots left out). */
  slots: [number, number][];
}

interface ClusterMember {
  name: string;
  dir: string;
  port: number;
  process: SupervisedProcess;
}

const HOST = '127.0.0.1';
const SLOTS = 16384;

/**
 * A Redis Cluster of private processes on free loopback ports, each in a directory of its own,
 * created with `redis-cli --cluster create`: what a Cluster-mode client needs to live through a
 * real replica promotion. Nothing is persisted and replication is asynchronous, as in the
 * deployments this stands for.
 */
export class RedisClusterGroup {
  private readonly members: ClusterMember[] = [];
  private readonly dirs: string[] = [];
  /** A slot each killed master owned when it was killed, to find who owns it after failover. */
  private readonly slotOfKilled = new Map<number, number>();
  private stopping: Promise<void> | undefined;

  private constructor(private readonly options: RedisClusterGroupOptions) {}

  /**
   * Starts `masters × (1 + replicasPerMaster)` empty cluster nodes, joins them into a cluster
   * and waits until every node says the cluster is ok, every slot is served and every replica
   * is connected to its master. Fails with `RedisNotInstalledError` or
   * `RedisCliNotInstalledError` when a program is missing; whatever had started is stopped then.
   */
  static async start(options: RedisClusterGroupOptions = {}): Promise<RedisClusterGroup> {
    const masters = options.masters ?? 3;
    if (masters < 3) throw new Error(`a Redis Cluster needs at least 3 masters, not ${masters}`);
    const group = new RedisClusterGroup(options);
    return bootedOrStopped(group, () => group.boot());
  }

  /** Every node's address, in start order (running or not): a client's seed list. */
  get nodes(): RedisAddress[] {
    return this.members.map(({ port }) => ({ host: HOST, port }));
  }

  /** The masters that serve slots now, as a running node sees the cluster. */
  async masters(): Promise<RedisAddress[]> {
    const nodes = await this.clusterNodes();
    return nodes
      .filter((node) => isServingMaster(node))
      .sort((a, b) => (a.slots[0]?.[0] ?? 0) - (b.slots[0]?.[0] ?? 0))
      .map(({ address }) => address);
  }

  /** The master that serves `key`'s slot now. */
  async masterOf(key: string): Promise<RedisAddress> {
    const slot = Number(await redisCommand(this.anyRunning(), 'CLUSTER', 'KEYSLOT', key));
    const owner = ownerOf(await this.clusterNodes(), slot);
    if (owner === undefined) throw new Error(`no master serves slot ${slot} (key "${key}")`);
    return owner.address;
  }

  /**
   * Kills the node at `address` with SIGKILL, as a crash would. A master's slots stay
   * unserved until `waitForFailover` sees a replica take them over.
   */
  async killNode(address: RedisAddress): Promise<void> {
    const member = this.member(address);
    const self = (await this.clusterNodes(address)).find(({ flags }) => flags.includes('myself'));
    const firstSlot = self?.slots[0]?.[0];
    if (self !== undefined && self.flags.includes('master') && firstSlot !== undefined) {
      this.slotOfKilled.set(address.port, firstSlot);
    }
    await member.process.kill();
  }

  /**
   * Waits until a replica of the killed master `killed` serves its slots and every running node
   * agrees on it and says the cluster is ok again; returns the promoted replica's address.
   */
  async waitForFailover(killed: RedisAddress, timeoutMs = 15_000): Promise<RedisAddress> {
    const slot = this.slotOfKilled.get(killed.port);
    if (slot === undefined) {
      throw new Error(`${killed.host}:${killed.port} was no master serving slots when killed`);
    }
    return pollUntil(
      `a replica of ${killed.host}:${killed.port} serves slot ${slot} and every running node says cluster_state:ok`,
      timeoutMs,
      async () => {
        let promoted: RedisAddress | undefined;
        for (const member of this.members.filter(({ process }) => process.running)) {
          const address = { host: HOST, port: member.port };
          if (!(await clusterOk(address))) return undefined;
          const owner = ownerOf(await this.clusterNodes(address), slot);
          if (owner === undefined || owner.address.port === killed.port) return undefined;
          if (promoted !== undefined && promoted.port !== owner.address.port) return undefined;
          promoted = owner.address;
        }
        return promoted;
      },
    );
  }

  /** Stops every node and removes every directory. Idempotent; also after a failed `start()`. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all(this.members.map(({ process }) => process.stop(2000)));
      await Promise.all(this.dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    })();
    return this.stopping;
  }

  private async boot(): Promise<void> {
    const masters = this.options.masters ?? 3;
    const replicas = this.options.replicasPerMaster ?? 1;
    const timeoutMs = this.options.startTimeoutMs ?? 20_000;
    const count = masters * (1 + replicas);
    await allStarted(
      Array.from({ length: count }, (_, i) => this.startNode(`redis-cluster-${i + 1}`)),
    );
    await this.create(replicas, timeoutMs);
    await pollUntil(
      `every node says cluster_state:ok with all ${SLOTS} slots, ${masters} masters and ${masters * replicas} connected replicas`,
      timeoutMs,
      async () => {
        for (const address of this.nodes) {
          if (!(await clusterOk(address, count))) return undefined;
          const nodes = await this.clusterNodes(address);
          const servingMasters = nodes.filter((node) => isServingMaster(node));
          const attached = nodes.filter(
            (node) =>
              node.flags.includes('slave') && servingMasters.some(({ id }) => id === node.masterId),
          );
          if (servingMasters.length !== masters || attached.length !== masters * replicas) {
            return undefined;
          }
          const role = (await redisCommand(address, 'ROLE')) as unknown[];
          if (role[0] === 'slave' && role[3] !== 'connected') return undefined;
        }
        return true;
      },
    );
  }

  private async startNode(name: string): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'slicekeeper-redis-cluster-'));
    this.dirs.push(dir);
    const launch: RedisLaunchOptions = {
      name,
      onLine: this.forward(name),
      extraArgs: [
        '--cluster-enabled',
        'yes',
        // Relative to --dir, so in this node's own directory.
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        String(this.options.nodeTimeoutMs ?? 1000),
        // A replica that lost its master for long still takes over: a test wants the failover.
        '--cluster-replica-validity-factor',
        '0',
        // A replica's first sync would wait 5 s by default for more replicas to share it.
        '--repl-diskless-sync-delay',
        '0',
      ],
    };
    const { port, process } = await launchRedisOnFreePort(dir, launch);
    this.members.push({ name, dir, port, process });
  }

  /** Runs `redis-cli --cluster create` over every node; it assigns slots and replicas. */
  private async create(replicas: number, timeoutMs: number): Promise<void> {
    const args = [
      '--cluster',
      'create',
      ...this.nodes.map(({ host, port }) => `${host}:${port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ];
    const forward = this.forward('redis-cli');
    await new Promise<void>((resolve, reject) => {
      // TERM=dumb: no colour codes in the lines passed on.
      const env = { ...process.env, TERM: 'dumb' };
      execFile('redis-cli', args, { timeout: timeoutMs, env }, (error, stdout, stderr) => {
        for (const line of stdout.split('\n').filter(Boolean)) forward?.(line, 'stdout');
        for (const line of stderr.split('\n').filter(Boolean)) forward?.(line, 'stderr');
        if (error === null) {
          resolve();
        } else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          reject(new RedisCliNotInstalledError());
        } else {
          reject(
            new Error(`redis-cli --cluster create failed: ${error.message}\n${stdout}${stderr}`),
          );
        }
      });
    });
  }

  private forward(source: string): RedisLaunchOptions['onLine'] {
    const onLine = this.options.onLine;
    if (onLine === undefined) return undefined;
    return (line, stream) => {
      onLine(line, stream, source);
    };
  }

  private member(address: RedisAddress): ClusterMember {
    const member = this.members.find(({ port }) => port === address.port);
    if (member === undefined) {
      throw new Error(`${address.host}:${address.port} is no node of this cluster`);
    }
    return member;
  }

  private anyRunning(): RedisAddress {
    const member = this.members.find(({ process }) => process.running);
    if (member === undefined) throw new Error('no node of the cluster is running');
    return { host: HOST, port: member.port };
  }

  private async clusterNodes(address = this.anyRunning()): Promise<ClusterNode[]> {
    return parseClusterNodes(String(await redisCommand(address, 'CLUSTER', 'NODES')));
  }
}

/** Whether the node at `address` says the cluster is ok with every slot served (and knows `nodes` nodes). */
async function clusterOk(address: RedisAddress, nodes?: number): Promise<boolean> {
  const info = String(await redisCommand(address, 'CLUSTER', 'INFO'));
  const fields = new Map(
    info.split(/\r?\n/).map((line) => line.split(':', 2) as [string, string | undefined]),
  );
  return (
    fields.get('cluster_state') === 'ok' &&
    fields.get('cluster_slots_ok') === String(SLOTS) &&
    (nodes === undefined || fields.get('cluster_known_nodes') === String(nodes))
  );
}

function isServingMaster(node: ClusterNode): boolean {
  return (
    node.flags.includes('master') &&
    !node.flags.includes('fail') &&
    !node.flags.includes('fail?') &&
    node.slots.length > 0
  );
}

function ownerOf(nodes: ClusterNode[], slot: number): ClusterNode | undefined {
  return nodes.find(
    (node) => isServingMaster(node) && node.slots.some(([from, to]) => from <= slot && slot <= to),
  );
}

/**
 * Parses `CLUSTER NODES`: `<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent>
 * <pong-recv> <config-epoch> <link-state> <slot>…`.
 */
function parseClusterNodes(text: string): ClusterNode[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id = '', endpoint = '', flags = '', masterId = '-', ...rest] = line.trim().split(' ');
      const hostPort = endpoint.split('@')[0] ?? '';
      const colon = hostPort.lastIndexOf(':');
      const slots = rest
        .slice(4)
        .filter((slot) => !slot.startsWith('['))
        .map((slot): [number, number] => {
          const [from = '', to = from] = slot.split('-');
          return [Number(from), Number(to)];
        });
      return {
        id,
        address: { host: hostPort.slice(0, colon), port: Number(hostPort.slice(colon + 1)) },
        flags: flags.split(','),
        masterId: masterId === '-' ? undefined : masterId,
        slots,
      };
    });
}
