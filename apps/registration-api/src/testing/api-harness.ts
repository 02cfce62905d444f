import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { RedisClient } from '@slicekeeper/queue';
import { EndpointPolicy, TokenAuthority, admissionError } from '@slicekeeper/admission';
import type {
  AdmittedEndpoint,
  PluginInfo,
  PluginProber,
  PluginSession,
  RegistrationOutcome,
} from '@slicekeeper/admission';
import { redisKeys } from '@slicekeeper/state/testing';
import { TransientError } from '@slicekeeper/errors';
import { createLogger, createMetricsRegistry } from '@slicekeeper/observability';
import type { SyncQueue } from '@slicekeeper/queue';
import { KeyStatusReader, RegistrationStore } from '@slicekeeper/state';
import { ApiRedis } from './api-redis';
import { buildApp } from '../app';
import type { AppOptions } from '../app';

export const ADMIN_TOKEN = 'admin-0123456789abcdef0123456789abcdef';
export const NODE_A_TOKEN = 'node-a-0123456789abcdef0123456789abcde';
export const NODE_B_TOKEN = 'node-b-0123456789abcdef0123456789abcde';

export const auth = (token: string) => ({ authorization: `Bearer ${token}` });
export const admin = auth(ADMIN_TOKEN);
export const nodeA = auth(NODE_A_TOKEN);

export const SOCKET_DIR = '/var/lib/kubelet/plugins';

export const gpuInfo: PluginInfo = {
  type: 'DRAPlugin',
  name: 'gpu.example.com',
  endpoint: '',
  supportedVersions: ['v1.ResourcePublisher'],
};

/**
 * How the fake plugin behind an endpoint behaves: answers GetInfo, does not serve it, is silent,
 * cannot be dialled, or fails GetInfo with an error text of its own (`{ getInfoError }`).
 */
export type FakePlugin =
  | PluginInfo
  | 'unimplemented'
  | 'timeout'
  | 'unreachable'
  | { getInfoError: string };

/**
 * A prober that dials nothing: it records every connect (so tests can prove no dial happened)
 * and what each plugin was told, and answers GetInfo as configured per endpoint.
 */
export class SpyProber implements PluginProber {
  readonly connects: string[] = [];
  readonly told: { endpoint: string; outcome: RegistrationOutcome }[] = [];
  readonly plugins = new Map<string, FakePlugin>();
  /** Endpoints whose plugin fails NotifyRegistrationStatus, with the error text it sends. */
  readonly notifyErrors = new Map<string, string>();
  /** Runs before each GetInfo; a test holds a probe here (e.g. to stop Redis meanwhile). */
  beforeGetInfo: ((endpoint: string) => Promise<void>) | undefined;

  connect(endpoint: AdmittedEndpoint): Promise<PluginSession> {
    this.connects.push(endpoint.endpoint);
    const plugin = this.plugins.get(endpoint.endpoint) ?? gpuInfo;
    if (plugin === 'unreachable') {
      return Promise.reject(
        admissionError('plugin-unreachable', `dial ${endpoint.endpoint}: refused`),
      );
    }
    return Promise.resolve({
      getInfo: async () => {
        await this.beforeGetInfo?.(endpoint.endpoint);
        if (plugin === 'unimplemented') return undefined;
        if (plugin === 'timeout') {
          throw admissionError(
            'plugin-timeout',
            `GetInfo ${endpoint.endpoint}: no answer within 1000ms`,
          );
        }
        if ('getInfoError' in plugin) {
          // As GrpcPluginProber reports a gRPC error: the plugin's own text after the context.
          throw admissionError(
            'plugin-error',
            `GetInfo ${endpoint.endpoint}: ${plugin.getInfoError}`,
          );
        }
        return plugin;
      },
      notify: (outcome) => {
        this.told.push({ endpoint: endpoint.endpoint, outcome });
        const error = this.notifyErrors.get(endpoint.endpoint);
        return error === undefined
          ? Promise.resolve()
          : Promise.reject(
              new TransientError(`NotifyRegistrationStatus ${endpoint.endpoint}: ${error}`),
            );
      },
      close: () => undefined,
    });
  }
}

export interface HarnessOptions extends Partial<AppOptions> {
  redisUrl: string;
  /** A prefix no other test uses (`uniquePrefix` of libs/testing). */
  prefix: string;
  bodyLimitBytes?: number;
  /** The registry's limits (the store enforces them). */
  maxEndpointsPerKey?: number;
  maxDriversPerNode?: number;
}

/** A built (not listening) API over a private Redis, with a spy prober and captured logs. */
export class ApiHarness {
  readonly app: FastifyInstance;
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly prober: SpyProber;
  readonly store: RegistrationStore;
  readonly queue: SyncQueue;
  readonly connections: ApiRedis;
  /** Every log line the API wrote, parsed. */
  readonly logs: Record<string, unknown>[] = [];
  readonly rawLogs: string[] = [];

  constructor(options: HarnessOptions) {
    this.prefix = options.prefix;
    const destination = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        const line = chunk.toString();
        this.rawLogs.push(line);
        this.logs.push(JSON.parse(line) as Record<string, unknown>);
        callback();
      },
    });
    const logger = createLogger({
      service: 'registration-api',
      level: 'debug',
      destination,
      // As runService makes it when tracing is on: lines inside a span carry its ids.
      traceIds: options.tracing !== undefined,
    });
    // The connection main.ts makes: failing fast while Redis is down, its outages logged.
    this.connections = new ApiRedis({ url: options.redisUrl, prefix: this.prefix, logger });
    this.redis = this.connections.connection;
    this.prober = new SpyProber();
    this.store = new RegistrationStore({
      redis: this.redis,
      prefix: this.prefix,
      ...(options.maxEndpointsPerKey === undefined
        ? {}
        : { maxEndpointsPerKey: options.maxEndpointsPerKey }),
      ...(options.maxDriversPerNode === undefined
        ? {}
        : { maxDriversPerNode: options.maxDriversPerNode }),
    });
    this.queue = this.connections.syncQueue;
    this.app = buildApp({
      logger,
      store: this.store,
      statusReader: new KeyStatusReader({ redis: this.redis, prefix: this.prefix }),
      syncQueue: this.queue,
      prober: this.prober,
      endpointPolicy: new EndpointPolicy({
        socketDirectories: [SOCKET_DIR],
        tcpHosts: ['10.0.0.0/8', 'gpu.drivers.svc'],
        lookup: () => Promise.resolve(['10.0.0.9']),
        // The socket directory exists on a node, not here: paths are their own real paths.
        fileSystem: { realpath: (path) => Promise.resolve(path), lstat: () => Promise.resolve({}) },
      }),
      tokens: new TokenAuthority({
        tokens: [
          { name: 'ops', token: ADMIN_TOKEN, role: 'admin' },
          { name: 'node-a', token: NODE_A_TOKEN, role: 'node', node: 'node-a' },
          { name: 'node-b', token: NODE_B_TOKEN, role: 'node', node: 'node-b' },
        ],
      }),
      redis: this.redis,
      redisPrefix: this.prefix,
      registry: createMetricsRegistry('registration-api'),
      ...options,
    });
  }

  /**
   * Resolves once the app is ready and the queue has written its metadata, so that later
   * {@link redisState} snapshots only differ by what requests did.
   */
  async ready(): Promise<this> {
    await this.app.ready();
    await this.queue.queue.waitUntilReady();
    // The queue writes its metadata right after it is ready, on this connection: a round trip
    // on the same connection orders after it.
    await this.redis.ping();
    return this;
  }

  /** Every Redis key of this API's prefix but the rate-limit counters, with its value. */
  async redisState(): Promise<Map<string, string>> {
    const rateLimit = redisKeys(this.prefix).apiRateLimitPrefix;
    const state = new Map<string, string>();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(
        cursor,
        'MATCH',
        `*${this.prefix}*`,
        'COUNT',
        1000,
      );
      cursor = next;
      for (const key of keys) {
        if (key.startsWith(rateLimit)) continue;
        state.set(key, (await this.redis.dumpBuffer(key)).toString('hex'));
      }
    } while (cursor !== '0');
    return new Map([...state.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  async close(): Promise<void> {
    await this.app.close();
    await this.connections.close();
  }
}
