/**
 * plugin-watcher benchmark: memory and CPU of one watcher holding 1,000 and 10,000 streams from
 * in-process fake drivers (libs/driver-kit), and the messages/s it sustains.
 *
 *   node --import tsx --conditions=@slicekeeper/source apps/plugin-watcher/bench/plugin-watcher.bench.ts [1000,10000]
 *
 * Four processes, so that each one's RSS and CPU are its own: this orchestrator, a private
 * redis-server, a driver farm (DriverServers on loopback TCP, 100 nodes' plugins per server,
 * an 8-GPU inventory per node), and the measured process. The measured process is first the
 * watcher (PluginWatcher + BullMQ SyncQueue on Redis, its streams on the connector's gRPC client
 * over node:http2, one connection per driver server as in production), then the floor: a bare
 * grpc-js client holding the same streams and doing nothing with the messages (no mapping, no
 * Redis). Read the watcher's figures
 * against the floor's: on a shared 2-core machine the absolute numbers move with the load.
 *
 * Storm: the farm publishes a changed inventory to every node, `STORM_ROUNDS` times, as fast
 * as it can; each message is a real change, so every stored one is a Redis write + enqueue.
 * Bounded: every wait has a timeout, and the whole run takes a few minutes at most.
 */
import { credentials } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import type { DriverInventory } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { publisher } from '@slicekeeper/proto';
import { SyncQueue } from '@slicekeeper/queue';
import { RegistrationStore } from '@slicekeeper/state';
import { RedisServer, SupervisedProcess, tsxCommand } from '@slicekeeper/local-stack';
import { PluginWatcher } from '@slicekeeper/watcher';

const DRIVER = 'gpu.example.com';
const NODES_PER_SERVER = 100;
const STORM_ROUNDS = 3;
const SETTLE_TIMEOUT_MS = 180_000;
const PREFIX = 'bench';

type Message =
  | { kind: 'ready'; endpoints?: string[] }
  | {
      kind: 'stats';
      rss: number;
      cpuMs: number;
      streaming: number;
      messages: number;
      stored: number;
    }
  | { kind: 'storm-done'; ms: number };

function gpus(node: string, round: number): DriverInventory {
  return {
    pools: [
      {
        name: node,
        scope: { kind: 'node' },
        devices: Array.from({ length: 8 }, (_, i) => ({
          name: `gpu-${i}`,
          attributes: {
            model: { string: 'H100-SXM5-80GB' },
            uuid: { string: `GPU-${node}-${i}` },
            driverVersion: { version: '550.54.15' },
            'resource.kubernetes.io/pcieRoot': { string: i < 4 ? 'pci0000:00' : 'pci0000:80' },
          },
          capacity: { memory: { value: `${80 + round}Gi` } },
        })),
      },
    ],
  };
}

const nodeName = (i: number): string => `node-${i}`;

function send(message: Message): void {
  process.send?.(message);
}

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/* ───────────────────────────── child roles ───────────────────────────── */

async function farm(count: number): Promise<void> {
  const servers: DriverServer[] = [];
  const endpoints: string[] = [];
  for (let s = 0; s * NODES_PER_SERVER < count; s++) {
    const server = new DriverServer({ driverName: DRIVER, endpoint: '127.0.0.1:0' });
    const first = s * NODES_PER_SERVER;
    for (let i = first; i < Math.min(count, first + NODES_PER_SERVER); i++) {
      server.publish(gpus(nodeName(i), 0), nodeName(i));
    }
    endpoints.push(await server.start());
    servers.push(server);
  }
  process.on('message', (message: { kind: string }) => {
    if (message.kind !== 'storm') return;
    void (async () => {
      const started = Date.now();
      for (let round = 1; round <= STORM_ROUNDS; round++) {
        for (let i = 0; i < count; i++) {
          servers[Math.floor(i / NODES_PER_SERVER)]?.publish(gpus(nodeName(i), round), nodeName(i));
          if (i % 200 === 199) await new Promise((resolve) => setImmediate(resolve));
        }
      }
      send({ kind: 'storm-done', ms: Date.now() - started });
    })();
  });
  send({ kind: 'ready', endpoints });
}

async function watcher(): Promise<void> {
  const redis = new Redis(process.env.BENCH_REDIS_URL ?? '', { maxRetriesPerRequest: null });
  const queue = new SyncQueue({ connection: redis, prefix: PREFIX });
  const metrics = createMetricsRegistry('bench');
  const instance = new PluginWatcher({
    redis,
    queue,
    prefix: PREFIX,
    logger: createLogger({ service: 'bench', level: 'warn' }),
    metrics,
  });
  const counter = async (name: string, label?: string): Promise<number> => {
    const metric = (await metrics.getMetricsAsJSON()).find((m) => m.name === name);
    const values = (metric?.values ?? []) as { value: number; labels: Record<string, string> }[];
    return values
      .filter((v) => label === undefined || v.labels.result === label)
      .reduce((sum, v) => sum + v.value, 0);
  };
  process.on('message', (message: { kind: string }) => {
    if (message.kind !== 'stats') return;
    void (async () => {
      send({
        kind: 'stats',
        rss: process.memoryUsage.rss(),
        cpuMs: cpuMs(),
        streaming: instance.streamsByState().streaming,
        messages: await counter('slicekeeper_watcher_messages_total'),
        stored: await counter('slicekeeper_watcher_snapshots_total', 'stored'),
      });
    })();
  });
  send({
    kind: 'stats',
    rss: process.memoryUsage.rss(),
    cpuMs: cpuMs(),
    streaming: 0,
    messages: 0,
    stored: 0,
  });
  await instance.start();
  send({ kind: 'ready' });
}

function floor(count: number, endpoints: string[]): void {
  let streaming = 0;
  let messages = 0;
  const baseline = process.memoryUsage.rss();
  const clients: publisher.ResourcePublisherClient[] = [];
  for (let i = 0; i < count; i++) {
    const endpoint = endpoints[Math.floor(i / NODES_PER_SERVER)] ?? '';
    const client = new publisher.ResourcePublisherClient(endpoint, credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
    });
    clients.push(client);
    let first = true;
    const call = client.watchResources({ nodeName: nodeName(i) });
    call.on('data', () => {
      messages++;
      if (first) streaming++;
      first = false;
    });
    call.on('error', () => undefined);
  }
  process.on('message', (message: { kind: string }) => {
    if (message.kind === 'stats') {
      send({
        kind: 'stats',
        rss: process.memoryUsage.rss(),
        cpuMs: cpuMs(),
        streaming,
        messages,
        stored: 0,
      });
    }
  });
  send({ kind: 'stats', rss: baseline, cpuMs: cpuMs(), streaming: 0, messages: 0, stored: 0 });
  send({ kind: 'ready' });
}

/* ───────────────────────────── orchestrator ───────────────────────────── */

/** This file run again in another role (`farm`, `watcher`, `floor`), talking over IPC. */
class Child {
  private readonly waiting: ((m: Message) => boolean)[] = [];
  /** Messages that arrived before anyone waited for them. */
  private readonly unclaimed: Message[] = [];
  private readonly process: SupervisedProcess;
  constructor(args: string[], env: Record<string, string> = {}) {
    this.process = new SupervisedProcess({
      name: `bench ${args[0] ?? ''}`,
      ...tsxCommand(__filename, ...args),
      env: { ...process.env, ...env },
      onLine: (line, stream) => process[stream].write(`${line}\n`),
      onMessage: (message) => {
        const index = this.waiting.findIndex((accept) => accept(message as Message));
        if (index >= 0) this.waiting.splice(index, 1);
        else this.unclaimed.push(message as Message);
      },
    });
  }
  send(message: { kind: string }): void {
    this.process.send(message);
  }
  next<K extends Message['kind']>(
    kind: K,
    timeoutMs = SETTLE_TIMEOUT_MS,
  ): Promise<Extract<Message, { kind: K }>> {
    const early = this.unclaimed.findIndex((message) => message.kind === kind);
    if (early >= 0) {
      const [message] = this.unclaimed.splice(early, 1);
      return Promise.resolve(message as Extract<Message, { kind: K }>);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no ${kind} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.push((message) => {
        if (message.kind !== kind) return false;
        clearTimeout(timer);
        resolve(message as Extract<Message, { kind: K }>);
        return true;
      });
    });
  }
  async stats(): Promise<Extract<Message, { kind: 'stats' }>> {
    const reply = this.next('stats', 30_000);
    this.send({ kind: 'stats' });
    return reply;
  }
  /** Polls stats until `done` holds; returns the last. */
  async until(
    done: (s: Extract<Message, { kind: 'stats' }>) => boolean,
    timeoutMs = SETTLE_TIMEOUT_MS,
  ) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const stats = await this.stats();
      if (done(stats)) return stats;
      if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(stats)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  kill(): Promise<void> {
    return this.process.kill();
  }
}

interface Row {
  streams: number;
  process: string;
  rssMiB: number;
  bytesPerStream: number;
  connectS: number;
  idleCpuPct: number;
  messagesPerS: number;
  storesPerS: number;
  stormCpuPct: number;
}

const mib = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;

async function measure(
  label: string,
  count: number,
  farmChild: Child,
  start: () => Child,
): Promise<Row> {
  const child = start();
  const baseline = await child.next('stats');
  const began = Date.now();
  await child.next('ready');
  const connected = await child.until((s) => s.streaming >= count);
  const connectS = (Date.now() - began) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idleStart = await child.stats();
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const idleEnd = await child.stats();
  const expected = connected.messages + count * STORM_ROUNDS;
  const stormStart = await child.stats();
  const t0 = Date.now();
  farmChild.send({ kind: 'storm' });
  await farmChild.next('storm-done');
  const stormEnd = await child.until((s) => s.messages >= expected, 120_000);
  const seconds = (Date.now() - t0) / 1000;
  await child.kill();
  return {
    streams: count,
    process: label,
    rssMiB: mib(idleEnd.rss),
    bytesPerStream: Math.round((idleEnd.rss - baseline.rss) / count),
    connectS: Math.round(connectS * 10) / 10,
    idleCpuPct: Math.round(((idleEnd.cpuMs - idleStart.cpuMs) / 5000) * 1000) / 10,
    messagesPerS: Math.round((stormEnd.messages - stormStart.messages) / seconds),
    storesPerS: Math.round((stormEnd.stored - stormStart.stored) / seconds),
    stormCpuPct: Math.round(((stormEnd.cpuMs - stormStart.cpuMs) / (seconds * 1000)) * 1000) / 10,
  };
}

async function orchestrate(counts: number[]): Promise<void> {
  const rows: Row[] = [];
  for (const count of counts) {
    const redis = await RedisServer.start();
    const farmChild = new Child(['farm', String(count)]);
    try {
      const { endpoints = [] } = await farmChild.next('ready');
      const client = new Redis(redis.url);
      const store = new RegistrationStore({ redis: client, prefix: PREFIX });
      for (let i = 0; i < count; i += 500) {
        await Promise.all(
          Array.from({ length: Math.min(500, count - i) }, (_, j) =>
            store.add({
              node: nodeName(i + j),
              driver: DRIVER,
              endpoint: endpoints[Math.floor((i + j) / NODES_PER_SERVER)] ?? '',
              version: 'v1.ResourcePublisher',
            }),
          ),
        );
      }
      client.disconnect();
      process.stderr.write(`${count} streams: watcher…\n`);
      rows.push(
        await measure(
          'watcher',
          count,
          farmChild,
          () => new Child(['watcher'], { BENCH_REDIS_URL: redis.url }),
        ),
      );
      process.stderr.write(`${count} streams: floor (bare grpc-js client)…\n`);
      rows.push(
        await measure(
          'floor',
          count,
          farmChild,
          () => new Child(['floor', String(count), endpoints.join(',')]),
        ),
      );
    } finally {
      await farmChild.kill();
      await redis.stop();
    }
  }
  process.stdout.write(
    `\nplugin-watcher benchmark (${STORM_ROUNDS} storm rounds of one changed 8-GPU inventory per stream)\n`,
  );
  console.table(rows);
  for (const count of counts) {
    const w = rows.find((r) => r.streams === count && r.process === 'watcher');
    const f = rows.find((r) => r.streams === count && r.process === 'floor');
    if (w && f) {
      process.stdout.write(
        `${count} streams: watcher ${w.bytesPerStream} B RSS/stream (floor ${f.bytesPerStream}), ` +
          `${w.messagesPerS} msg/s (floor ${f.messagesPerS}), ${w.storesPerS} snapshot writes/s\n`,
      );
    }
  }
}

const [role = 'orchestrate', arg1 = '', arg2 = ''] = process.argv.slice(2);
const run =
  role === 'farm'
    ? farm(Number(arg1))
    : role === 'watcher'
      ? watcher()
      : role === 'floor'
        ? Promise.resolve().then(() => {
            floor(Number(arg1), arg2.split(','));
          })
        : orchestrate((role === 'orchestrate' ? '1000,10000' : role).split(',').map(Number));
run.then(
  () => {
    if (role === 'orchestrate' || /^\d/.test(role)) process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(
      `bench ${role}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
