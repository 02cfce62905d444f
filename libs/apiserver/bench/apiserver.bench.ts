/**
 * Kube emulator benchmark (not a test): creates/s, gets/s, list latency over 10,000 slices,
 * memory per stored slice, and 100 concurrent watches. Client and servers share this process, as
 * in-process tests do. A bare node:http server answering a fixed JSON body of the same size over
 * the same kind of keep-alive connections is measured in the same run: its figures are the floor, so the
 * emulator's can be read on a noisy shared machine. Bounded in count; stops by itself.
 *
 *   npm run bench:emulator
 */
import { Agent, createServer, request } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startKubeEmulator } from '../src/index';

const SLICES = 10_000;
const GETS = 20_000;
const CONCURRENCY = 32;
const WATCHERS = 100;
const WATCHED_WRITES = 1_000;
const PATH = '/apis/resource.k8s.io/v1/resourceslices';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** A node-local slice with 8 GPUs, as slicekeeper publishes them. */
function slice(i: number): string {
  const node = `node-${String(Math.floor(i / 2)).padStart(5, '0')}`;
  const driver = i % 2 === 0 ? 'gpu.example.com' : 'nic.example.com';
  const devices = Array.from({ length: 8 }, (_, d) => ({
    name: `dev-${d}`,
    attributes: {
      model: { string: 'H100' },
      index: { int: d },
      driverVersion: { version: '1.2.3' },
      'gpu.example.com/uuid': { string: `GPU-${i}-${d}` },
    },
    capacity: { memory: { value: '80Gi' } },
  }));
  return JSON.stringify({
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      name: `00000-${driver}-${node}`,
      labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' },
    },
    spec: {
      driver,
      nodeName: node,
      pool: { name: node, generation: 1, resourceSliceCount: 1 },
      devices,
    },
  });
}

/**
 * A minimal HTTP/1.1 keep-alive client over raw sockets: requests are written as prepared
 * strings and responses parsed only as far as status and Content-Length. node:http's client
 * costs more per request than the servers measured here, and it would share their event loop.
 */
class Connection {
  private chunks: Buffer[] = [];
  private received = 0;
  private head: { status: number; bodyStart: number; length: number } | undefined;
  private pending: ((r: { status: number; body: string }) => void) | undefined;
  private readonly socket: Socket;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.received += chunk.length;
      this.drain();
    });
  }

  private drain(): void {
    if (this.head === undefined) {
      const joined =
        this.chunks.length === 1 ? (this.chunks[0] ?? Buffer.alloc(0)) : Buffer.concat(this.chunks);
      this.chunks = [joined];
      const end = joined.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = joined.subarray(0, end).toString('latin1');
      const match = /content-length:\s*(\d+)/i.exec(text);
      if (match === null) throw new Error(`response without Content-Length: ${text}`);
      this.head = {
        status: Number(text.slice(9, 12)),
        bodyStart: end + 4,
        length: Number(match[1]),
      };
    }
    const { status, bodyStart, length } = this.head;
    if (this.received < bodyStart + length) return;
    const all = Buffer.concat(this.chunks);
    const body = all.subarray(bodyStart, bodyStart + length).toString('utf8');
    const rest = all.subarray(bodyStart + length);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.received = rest.length;
    this.head = undefined;
    const resolve = this.pending;
    this.pending = undefined;
    resolve?.({ status, body });
  }

  send(raw: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve) => {
      this.pending = resolve;
      this.socket.write(raw);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

interface Target {
  port: number;
  connections: Connection[];
}

function target(port: number): Target {
  return { port, connections: Array.from({ length: CONCURRENCY }, () => new Connection(port)) };
}

function raw(
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
): string {
  const head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nUser-Agent: bench/1.0\r\n`;
  if (body === undefined) return `${head}\r\n`;
  return `${head}Content-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function send(
  t: Target,
  worker: number,
  method: string,
  path: string,
  body?: string,
  contentType?: string,
): Promise<{ status: number; body: string }> {
  const connection = t.connections[worker % t.connections.length];
  if (connection === undefined) throw new Error('no connection');
  return connection.send(raw(method, path, body, contentType));
}

/** Runs `count` requests with at most CONCURRENCY in flight; returns requests per second. */
async function rate(
  count: number,
  makeRequest: (i: number, worker: number) => Promise<{ status: number; body: string }>,
  expect: number,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async (w: number) => {
    while (next < count) {
      const i = next++;
      const res = await makeRequest(i, w);
      if (res.status !== expect) {
        throw new Error(
          `request ${i}: status ${res.status}, expected ${expect}: ${res.body.slice(0, 300)}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  return count / ((performance.now() - started) / 1000);
}

async function latencies(
  runs: number,
  fn: () => Promise<unknown>,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99) };
}

function heapUsed(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/** Opens a watch and counts events until `expected` arrived; resolves with the arrival time. */
function watcher(
  port: number,
  agent: Agent,
  rv: string,
  expected: number,
): { done: Promise<number>; abort: () => void } {
  const path = `${PATH}?watch=true&resourceVersion=${rv}&timeoutSeconds=120`;
  const req = request({ host: '127.0.0.1', port, path, agent });
  const done = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) seen++;
        if (seen >= expected) resolve(performance.now());
      });
      res.on('error', () => undefined);
    });
    req.on('error', reject);
  });
  req.end();
  return {
    done,
    abort: () => {
      req.destroy();
    },
  };
}

async function main(): Promise<void> {
  const started = await startKubeEmulator({ port: 0, historySize: 20_000 });
  const bodies = Array.from({ length: SLICES }, (_, i) => slice(i));
  const names = bodies.map((b) => (JSON.parse(b) as { metadata: { name: string } }).metadata.name);
  const floorBody = bodies[0] ?? '{}';
  const floorServer = createServer({ keepAlive: true }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(req.method === 'POST' ? 201 : 200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(floorBody),
      });
      res.end(floorBody);
    });
  });
  await new Promise<void>((resolve) => floorServer.listen(0, '127.0.0.1', resolve));
  const emulator = target(Number(new URL(started.url).port));
  const floor = target((floorServer.address() as AddressInfo).port);

  // Warm up both servers (JIT) before measuring.
  await rate(1000, (i, w) => send(floor, w, 'POST', PATH, bodies[i]), 201);
  await rate(1000, (i, w) => send(emulator, w, 'POST', `${PATH}?dryRun=All`, bodies[i]), 201);
  await rate(1000, (i, w) => send(emulator, w, 'GET', `${PATH}/missing-${i}`), 404);

  const heapBefore = heapUsed();
  const createRate = await rate(SLICES, (i, w) => send(emulator, w, 'POST', PATH, bodies[i]), 201);
  const heapAfter = heapUsed();
  const floorPostRate = await rate(SLICES, (i, w) => send(floor, w, 'POST', PATH, bodies[i]), 201);
  const getRate = await rate(
    GETS,
    (i, w) => send(emulator, w, 'GET', `${PATH}/${names[(i * 7919) % SLICES] ?? ''}`),
    200,
  );
  const floorGetRate = await rate(GETS, (_i, w) => send(floor, w, 'GET', PATH), 200);

  const fullList = await latencies(5, () => send(emulator, 0, 'GET', PATH));
  const paged = await latencies(20, () => send(emulator, 0, 'GET', `${PATH}?limit=500`));
  const byKey = await latencies(500, () => {
    const node = `node-${String(Math.floor(Math.random() * (SLICES / 2))).padStart(5, '0')}`;
    return send(
      emulator,
      0,
      'GET',
      `${PATH}?fieldSelector=spec.nodeName%3D${node}%2Cspec.driver%3Dgpu.example.com`,
    );
  });
  const byLabel = await latencies(5, () =>
    send(emulator, 0, 'GET', `${PATH}?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dslicekeeper`),
  );

  // 100 watches from the current resourceVersion, then updates as fast as the client sends them.
  const listed = JSON.parse((await send(emulator, 0, 'GET', `${PATH}?limit=1`)).body) as {
    metadata: { resourceVersion: string };
  };
  const watchAgent = new Agent({ keepAlive: true, maxSockets: WATCHERS });
  const watches = Array.from({ length: WATCHERS }, () =>
    watcher(emulator.port, watchAgent, listed.metadata.resourceVersion, WATCHED_WRITES),
  );
  while (started.emulator.watchCount() < WATCHERS)
    await new Promise((resolve) => setTimeout(resolve, 10));
  const patch = JSON.stringify({ metadata: { labels: { round: '2' } } });
  const patchStarted = performance.now();
  await rate(
    WATCHED_WRITES,
    (i, w) =>
      send(
        emulator,
        w,
        'PATCH',
        `${PATH}/${names[i] ?? ''}`,
        patch,
        'application/merge-patch+json',
      ),
    200,
  );
  const writesDone = performance.now();
  const lastArrival = Math.max(...(await Promise.all(watches.map((w) => w.done))));
  for (const w of watches) w.abort();

  const perSlice = (heapAfter - heapBefore) / SLICES;
  const fmt = (n: number) => n.toFixed(0).padStart(8);
  const ms = (n: number) => `${n.toFixed(2)} ms`;
  const writeSeconds = (writesDone - patchStarted) / 1000;
  const lines = [
    `kube emulator benchmark: ${SLICES} slices of 8 devices, ${CONCURRENCY} keep-alive connections, node ${process.version}`,
    '',
    '                         emulator     floor   emulator/floor',
    `creates/s               ${fmt(createRate)}  ${fmt(floorPostRate)}   ${(createRate / floorPostRate).toFixed(2)}   (goal >= 5000)`,
    `gets/s                  ${fmt(getRate)}  ${fmt(floorGetRate)}   ${(getRate / floorGetRate).toFixed(2)}   (goal >= 10000)`,
    '',
    `list all ${SLICES}         p50 ${ms(fullList.p50)}   p99 ${ms(fullList.p99)}`,
    `list limit=500           p50 ${ms(paged.p50)}   p99 ${ms(paged.p99)}`,
    `list by node+driver      p50 ${ms(byKey.p50)}   p99 ${ms(byKey.p99)}   (indexed field selectors)`,
    `list by label (all)      p50 ${ms(byLabel.p50)}   p99 ${ms(byLabel.p99)}`,
    `memory per stored slice  ${(perSlice / 1024).toFixed(1)} KiB   (its JSON: ${(Buffer.byteLength(bodies[0] ?? '') / 1024).toFixed(1)} KiB)`,
    '',
    `${WATCHERS} watches x ${WATCHED_WRITES} updates: ${fmt(WATCHED_WRITES / writeSeconds).trim()} updates/s, ` +
      `${fmt((WATCHERS * WATCHED_WRITES) / ((lastArrival - patchStarted) / 1000)).trim()} events/s delivered, ` +
      `last event ${ms(Math.max(0, lastArrival - writesDone))} after the last update returned`,
    '',
    `goals: creates ${createRate >= 5000 ? 'met' : 'MISSED'}, gets ${getRate >= 10000 ? 'met' : 'MISSED'}, ` +
      `watches ${lastArrival - writesDone < 1000 ? 'kept up' : 'FELL BEHIND'}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  for (const c of [...emulator.connections, ...floor.connections]) c.close();
  watchAgent.destroy();
  await started.close();
  await new Promise<void>((resolve) => {
    floorServer.close(() => {
      resolve();
    });
  });
}

// The run must end by itself, whatever happens to a connection.
setTimeout(() => {
  process.stderr.write('benchmark did not finish within 5 minutes\n');
  process.exit(1);
}, 300_000).unref();

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
