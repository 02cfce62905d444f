/**
 * Registration API benchmark (`npm run bench:api`): the real API listening on a loopback port,
 * over a private redis-server, probing an in-process fake driver on a unix socket with the real
 * gRPC prober. autocannon drives a fixed number of connections for a fixed time per scenario:
 *
 * - `register`: POST /v1/plugins, each request a new (node, driver) until the node pool wraps —
 *   the full kubelet-style path: dial, GetInfo, checks, Redis writes, NotifyRegistrationStatus.
 * - `status`: GET /v1/plugins/{node}/{driver} of registered plugins with stream state, snapshot
 *   (8 devices) and sync status in Redis.
 * - `list`: GET /v1/plugins?limit=50 (one page of 50 keys with their status).
 *
 * The driver, Redis and autocannon share the machine with the API: read the figures as an
 * order of magnitude and compare runs on the same machine only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { EndpointPolicy, GrpcPluginProber, TokenAuthority } from '@slicekeeper/admission';
import { redisKeys } from '@slicekeeper/state/testing';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import { registration } from '@slicekeeper/proto';
import { SyncQueue } from '@slicekeeper/queue';
import { KeyStatusReader, RegistrationStore } from '@slicekeeper/state';
import { RedisServer } from '@slicekeeper/testing';
import { buildApp } from '../src/app';

/** Open connections (and so requests in flight) of every scenario. */
const CONNECTIONS = 16;
/** Seconds per scenario. */
const DURATION_S = 10;
/** Distinct nodes registered; the register scenario wraps around to re-registrations after. */
const NODES = 20_000;
const TOKEN = 'bench-0123456789abcdef0123456789abcdef';
const DRIVER = 'gpu.example.com';

interface Row {
  scenario: string;
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function startDriver(socket: string): Promise<Server> {
  const server = new Server();
  server.addService(registration.RegistrationService, {
    getInfo: (
      _call: ServerUnaryCall<registration.InfoRequest, registration.PluginInfo>,
      callback: sendUnaryData<registration.PluginInfo>,
    ) => {
      callback(null, {
        type: 'DRAPlugin',
        name: DRIVER,
        endpoint: '',
        supportedVersions: ['v1.ResourcePublisher'],
      });
    },
    notifyRegistrationStatus: (
      _call: ServerUnaryCall<
        registration.RegistrationStatus,
        registration.RegistrationStatusResponse
      >,
      callback: sendUnaryData<registration.RegistrationStatusResponse>,
    ) => {
      callback(null, {});
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (error) => {
      if (error === null) resolve();
      else reject(error);
    });
  });
  return server;
}

async function run(scenario: string, url: string, request: autocannon.Request): Promise<Row> {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers: { authorization: `Bearer ${TOKEN}` },
    requests: [request],
  });
  return {
    scenario,
    requests: result.requests.total,
    perSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

async function main(): Promise<void> {
  const redisServer = await RedisServer.start();
  const dir = await mkdtemp(join(tmpdir(), 'sk-bench-'));
  const socket = join(dir, 'gpu.sock');
  const driver = await startDriver(socket);
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const prefix = 'bench';
  const queue = new SyncQueue({ connection: redis, prefix });
  const app = buildApp({
    logger: createLogger({ service: 'registration-api', level: 'warn' }),
    store: new RegistrationStore({ redis, prefix }),
    statusReader: new KeyStatusReader({ redis, prefix }),
    syncQueue: queue,
    prober: new GrpcPluginProber(),
    endpointPolicy: new EndpointPolicy({ socketDirectories: [dir] }),
    tokens: new TokenAuthority({ tokens: [{ name: 'bench', token: TOKEN, role: 'admin' }] }),
    redis,
    redisPrefix: prefix,
    registry: createMetricsRegistry('registration-api'),
    rateLimitMax: 1_000_000_000,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const rows: Row[] = [];
  try {
    let next = 0;
    rows.push(
      await run('register (POST /v1/plugins)', url, {
        method: 'POST',
        path: '/v1/plugins',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ node: `node-${next++ % NODES}`, endpoint: `unix://${socket}` }),
        }),
      }),
    );
    // Requests still in flight when the scenario ended were set up but never answered: read
    // back which nodes are registered.
    const keys = redisKeys(prefix);
    const nodes = (await redis.zrange(keys.registrationIndex, 0, -1)).map((id) => id.split('/')[0]);
    // Status records as the watcher and the syncer leave them, for every registered key.
    const now = new Date().toISOString();
    const pipeline = redis.pipeline();
    for (const node of nodes) {
      const key = { node: node ?? '', driver: DRIVER };
      pipeline.set(
        keys.streamState(key),
        JSON.stringify({
          state: 'streaming',
          endpoint: `unix://${socket}`,
          since: now,
          reconnects: 0,
        }),
      );
      pipeline.set(
        keys.snapshot(key),
        JSON.stringify({
          generation: 1,
          receivedAt: now,
          endpoint: `unix://${socket}`,
          inventory: {
            pools: [
              {
                name: key.node,
                scope: { kind: 'node' },
                devices: Array.from({ length: 8 }, (_, d) => ({
                  name: `gpu-${d}`,
                  attributes: { model: { string: 'A100' }, index: { int: d } },
                  capacity: { memory: { value: '80Gi' } },
                })),
              },
            ],
          },
        }),
      );
      pipeline.set(
        keys.syncStatus(key),
        JSON.stringify({
          outcome: 'synced',
          snapshotGeneration: 1,
          slices: [`00000-${DRIVER}-${key.node}-abcde`],
          pools: [{ name: key.node, generation: 1, sliceCount: 1, devices: 8 }],
          attempt: 1,
          startedAt: now,
          finishedAt: now,
          writes: 1,
        }),
      );
    }
    await pipeline.exec();
    let read = 0;
    rows.push(
      await run('status (GET /v1/plugins/{node}/{driver})', url, {
        method: 'GET',
        setupRequest: (request) => ({
          ...request,
          path: `/v1/plugins/${nodes[read++ % nodes.length] ?? ''}/${DRIVER}`,
        }),
      }),
    );
    rows.push(
      await run('list (GET /v1/plugins?limit=50)', url, {
        method: 'GET',
        path: '/v1/plugins?limit=50',
      }),
    );
  } finally {
    await app.close();
    await queue.close();
    redis.disconnect();
    driver.forceShutdown();
    await rm(dir, { recursive: true, force: true });
    await redisServer.stop();
  }
  console.log(`registration-api: ${CONNECTIONS} connections, ${DURATION_S} s per scenario`);
  console.table(
    rows.map((row) => ({
      scenario: row.scenario,
      'requests/s': row.perSecond,
      'p50 ms': row.p50,
      'p99 ms': row.p99,
      requests: row.requests,
      'non-2xx': row.non2xx,
      errors: row.errors,
    })),
  );
  if (rows.some((row) => row.non2xx > 0 || row.errors > 0)) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
