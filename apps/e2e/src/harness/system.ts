import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pluginPath } from '@slicekeeper/contracts';
import type { DriverInventory, StreamState, SyncStatus } from '@slicekeeper/contracts';
import {
  SupervisedProcess,
  appCommand,
  generateStackTokens,
  inheritedEnv,
  repoRoot,
  writeStackTokens,
} from '@slicekeeper/local-stack';
import type { LogEntry, StackTokens } from '@slicekeeper/local-stack';
import { RedisServer, freePort, waitFor } from '@slicekeeper/testing';
import { ExampleDriverProcess, InProcessDriver } from './drivers';
import { EmulatorClient, sliceAsV1 } from './emulator-client';
import type { ResourceSlice, ResourceSliceVersion } from './emulator-client';
import type { MemoryCgroup } from './memory-cgroup';
import type { ProductionTree } from './production-tree';

const run = promisify(execFile);

/** An Event about a Node, as `nodeEvents` reads it. */
export interface NodeEvent {
  type: string;
  reason: string;
  note: string;
  /** Occurrences: the series count, or 1. */
  count: number;
}

/** A slicekeeper service of the system under test. */
export type ServiceName = 'registration-api' | 'plugin-watcher' | `slice-syncer-${number}`;

export interface SystemOptions {
  /** Names the run: its processes' logs go to `reports/e2e/<name>/`. */
  name: string;
  /** Nodes created in the kube emulator; each gets a node-bound registration token. */
  nodes: readonly string[];
  /** @defaultValue 1 */
  syncerReplicas?: number;
  /** Redis keeps an append-only file, so that a crash loses nothing. @defaultValue false */
  redisAppendOnly?: boolean;
  /**
   * The Redis settings of every service (e.g. `REDIS_SENTINELS` and `REDIS_SENTINEL_NAME`), for a
   * Redis the scenario runs itself; no private redis-server is started, and `redis` is not there.
   */
  redisSettings?: Record<string, string>;
  /**
   * Settings of every slicekeeper service and example-driver process, under each one's own
   * (e.g. the `OTEL_*` variables of `OtlpReceiver.otelEnv()`, to trace the whole system).
   */
  commonEnv?: Record<string, string>;
  /** Extra settings of every slice-syncer (e.g. a short JANITOR_INTERVAL). */
  syncerEnv?: Record<string, string>;
  /** Extra settings of the plugin-watcher (e.g. WIPE_DELAY). */
  watcherEnv?: Record<string, string>;
  /**
   * Runs the plugin-watcher in node mode for this node with discovery on: it watches
   * `registrationDir` and registers the sockets it finds through the API with the node's token
   * (from a file), as the node-mode DaemonSet does with its projected token.
   * @defaultValue shared mode, no discovery
   */
  discoveryNode?: string;
  /** Extra settings of the registration API (e.g. REMOVAL_GRACE). */
  apiEnv?: Record<string, string>;
  /**
   * The registration API also accepts Kubernetes identities (AUTH_MODE=both): ServiceAccount
   * tokens reviewed with the emulator's TokenReview, each action with its SubjectAccessReview.
   * @defaultValue static tokens only
   */
  apiKubernetesIdentities?: boolean;
  /**
   * The registration API serves HTTPS with this certificate and key, reloaded when they change;
   * `apiUrl` is then `https://127.0.0.1:<port>`. @defaultValue plain HTTP
   */
  apiTls?: { certFile: string; keyFile: string };
  /** Extra settings of the kube emulator (e.g. FEATURE_GATES). */
  emulatorEnv?: Record<string, string>;
  /** @defaultValue `info` */
  logLevel?: string;
  /**
   * Runs the services and the example drivers as the images do, from this tree of compiled
   * output with production dependencies only (`node apps/<app>/dist/main.js`, with its image's
   * `ENV`: `NODE_ENV=production`, jemalloc, …). The kube emulator, tooling, still runs from its
   * sources.
   * @defaultValue from the TypeScript sources, through tsx
   */
  production?: ProductionTree;
  /**
   * Runs a service inside a memory cgroup, by service name (e.g. `plugin-watcher`,
   * `slice-syncer-2`: one cgroup per process, as each pod has its own limit), so that it has the
   * memory limit its manifest gives a pod. The caller creates and closes the cgroups.
   * @defaultValue no limits
   */
  memoryCgroups?: Readonly<Partial<Record<string, MemoryCgroup>>>;
}

/** Variables passed on from the test's environment; every setting is passed explicitly. */
const INHERITED = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ'];

interface ServiceSpec {
  app: string;
  env: Record<string, string>;
  ready: (entry: LogEntry) => boolean;
}

/** What `GET /v1/plugins/{node}/{driver}` reports. */
export interface PluginStatus {
  registrations: unknown[];
  stream?: StreamState;
  sync?: SyncStatus;
}

/**
 * The whole slicekeeper system, each service its own process as `npm start` runs it: a private
 * redis-server, the kube emulator, the registration API, the plugin-watcher and slice-syncer
 * replicas; drivers are added by the scenario, as example-driver processes or as in-process
 * driver servers. Every process's lines are kept in `reports/e2e/<name>/<process>.log`.
 */
export class System {
  readonly emulator: EmulatorClient;
  readonly tokens: StackTokens;
  readonly apiUrl: string;
  private readonly services = new Map<string, SupervisedProcess>();
  private readonly specs = new Map<string, ServiceSpec>();
  private readonly extras = new Set<{ close(): Promise<void> }>();
  private readonly logs = new Map<string, WriteStream>();

  private constructor(
    private readonly options: SystemOptions,
    private readonly redisServer: RedisServer | undefined,
    readonly stateDir: string,
    readonly kubeconfig: string,
    emulatorUrl: string,
    private emulatorProcess: SupervisedProcess,
    private readonly emulatorEnv: Record<string, string>,
    tokens: StackTokens,
    apiUrl: string,
    private readonly logDir: string,
  ) {
    this.emulator = new EmulatorClient(emulatorUrl);
    this.tokens = tokens;
    this.apiUrl = apiUrl;
  }

  /** Starts everything and waits until each service says it is ready. */
  static async start(options: SystemOptions): Promise<System> {
    const stateDir = await mkdtemp(join(tmpdir(), `slicekeeper-e2e-${options.name}-`));
    const logDir = join(repoRoot, 'reports', 'e2e', options.name);
    await rm(logDir, { recursive: true, force: true });
    await mkdir(logDir, { recursive: true });
    await mkdir(join(stateDir, 'sockets'), { recursive: true });
    const redis =
      options.redisSettings === undefined
        ? await RedisServer.start({ appendOnly: options.redisAppendOnly ?? false })
        : undefined;
    const kubeconfig = join(stateDir, 'kubeconfig');
    const logs = new Map<string, WriteStream>();
    const emulatorEnv = {
      HOST: '127.0.0.1',
      PORT: '0',
      KUBECONFIG_OUT: kubeconfig,
      // What a restart (`restartEmulator`) starts from, as kube-apiserver from etcd.
      DATA_FILE: join(stateDir, 'kube-emulator-data.json'),
      LOG_LEVEL: 'info',
      ...options.emulatorEnv,
    };
    const emulatorProcess = spawnLogged(
      logDir,
      logs,
      'kube-emulator',
      'kube-emulator',
      emulatorEnv,
    );
    let system: System | undefined;
    try {
      const listening = await emulatorProcess.waitForLog((e) => e.msg === 'listening', 'listening');
      const emulatorUrl = String(listening.url);
      await new EmulatorClient(emulatorUrl).createNodes(options.nodes);
      const tokens = generateStackTokens(options.nodes);
      const tokenFile = join(stateDir, 'tokens.json');
      await writeStackTokens(tokens, { tokenFile, adminTokenFile: join(stateDir, 'admin-token') });
      if (options.discoveryNode !== undefined) {
        const token = tokens.nodes.get(options.discoveryNode);
        if (token === undefined)
          throw new Error(`discoveryNode ${options.discoveryNode}: no such node`);
        await writeFile(join(stateDir, 'watcher-token'), `${token}\n`, { mode: 0o600 });
      }
      const apiPort = await freePort();
      system = new System(
        options,
        redis,
        stateDir,
        kubeconfig,
        emulatorUrl,
        emulatorProcess,
        { ...emulatorEnv, PORT: new URL(emulatorUrl).port },
        tokens,
        `${options.apiTls === undefined ? 'http' : 'https'}://127.0.0.1:${apiPort}`,
        logDir,
      );
      const started = system;
      for (const [name, stream] of logs) started.logs.set(name, stream);
      started.define(options.redisSettings ?? { REDIS_URL: redis?.url ?? '' }, tokenFile, apiPort);
      await Promise.all([...started.specs.keys()].map((name) => started.startService(name)));
      return started;
    } catch (error) {
      if (system !== undefined) await system.close();
      else {
        await emulatorProcess.stop(2000);
        await redis?.stop();
        await rm(stateDir, { recursive: true, force: true });
      }
      throw error;
    }
  }

  /** The private redis-server of every service. */
  get redis(): RedisServer {
    if (this.redisServer === undefined) {
      throw new Error('this System uses the Redis of its redisSettings, not a private one');
    }
    return this.redisServer;
  }

  /**
   * The directory the node-mode watcher discovers plugin sockets in (`discoveryNode`), inside
   * the socket directory both the API and the watcher allow.
   */
  get registrationDir(): string {
    return join(this.stateDir, 'sockets', 'registry');
  }

  /** The names of the slice-syncer replicas. */
  get syncers(): ServiceName[] {
    return Array.from(
      { length: this.options.syncerReplicas ?? 1 },
      (_, i) => `slice-syncer-${i + 1}` as const,
    );
  }

  /** Starts a service (again) with its settings and waits until it is ready. */
  async startService(name: string): Promise<SupervisedProcess> {
    const spec = this.specs.get(name);
    if (spec === undefined) throw new Error(`no service ${name}`);
    if (this.services.get(name)?.running === true) throw new Error(`${name} is already running`);
    const child = spawnLogged(
      this.logDir,
      this.logs,
      name,
      spec.app,
      spec.env,
      this.options.production,
      this.options.memoryCgroups?.[name],
    );
    this.services.set(name, child);
    await child.waitForLog(spec.ready, 'that it is ready', 60_000);
    return child;
  }

  /** Stops a service gracefully (SIGTERM). */
  async stopService(name: ServiceName): Promise<void> {
    await this.services.get(name)?.stop(10_000);
  }

  /** Kills a service as a crash would (SIGKILL). */
  async killService(name: ServiceName): Promise<void> {
    await this.services.get(name)?.kill();
  }

  /**
   * Restarts the kube emulator as an upgrade of kube-apiserver would: SIGTERM (it writes its data
   * file), then the emulator again on the same port and data with `env` on top of its first
   * settings (e.g. `{ KUBE_RELEASE: '1.36' }`); resolves once it listens. The services keep their
   * kubeconfig; the emulator's request log starts empty.
   */
  async restartEmulator(env: Record<string, string>): Promise<void> {
    const code = await this.emulatorProcess.stop(10_000);
    if (code !== 0) throw new Error(`kube-emulator stopped with ${code}, not cleanly`);
    this.emulatorProcess = spawnLogged(this.logDir, this.logs, 'kube-emulator', 'kube-emulator', {
      ...this.emulatorEnv,
      ...env,
    });
    const listening = await this.emulatorProcess.waitForLog(
      (e) => e.msg === 'listening',
      'listening',
      30_000,
    );
    if (String(listening.url) !== this.emulator.url) {
      throw new Error(
        `kube-emulator came back at ${String(listening.url)}, not ${this.emulator.url}`,
      );
    }
  }

  /** The process id of a running service (a restart gives it another). */
  servicePid(name: ServiceName): number | undefined {
    return this.services.get(name)?.pid;
  }

  /** Starts an example-driver process registered for `node` and waits until it registered. */
  async exampleDriver(options: {
    node: string;
    driver: string;
    inventory: DriverInventory;
  }): Promise<ExampleDriverProcess> {
    const driver = new ExampleDriverProcess({
      ...options,
      stateDir: this.stateDir,
      apiUrl: this.apiUrl,
      token: this.nodeToken(options.node),
      spawn: (name, env) =>
        spawnLogged(
          this.logDir,
          this.logs,
          name,
          'example-driver',
          { ...this.options.commonEnv, ...env },
          this.options.production,
        ),
    });
    this.extras.add(driver);
    await driver.start();
    return driver;
  }

  /** A driver served from the test's own process, registered for `node` through the API. */
  async inProcessDriver(options: {
    node: string;
    driver: string;
    inventory: DriverInventory;
  }): Promise<InProcessDriver> {
    const driver = new InProcessDriver({
      ...options,
      socketDir: join(this.stateDir, 'sockets'),
      apiUrl: this.apiUrl,
      token: this.nodeToken(options.node),
    });
    this.extras.add(driver);
    await driver.start();
    return driver;
  }

  /** The node's registration token (what its kubelet-side registrar presents). */
  nodeToken(node: string): string {
    const token = this.tokens.nodes.get(node);
    if (token === undefined) throw new Error(`no node ${node} in this system`);
    return token;
  }

  /** The plugin's registration and sync status, as the registration API reports it. */
  async status(node: string, driver: string): Promise<PluginStatus | undefined> {
    const response = await this.api('GET', pluginPath({ node, driver }));
    if (response.status === 404) return undefined;
    if (response.status !== 200) throw new Error(`status of ${node}/${driver}: ${response.status}`);
    return (await response.json()) as PluginStatus;
  }

  /**
   * Removes every registration of the plugin through the API, as an operator would; its slices
   * go after `grace` (e.g. `0s`), or the API's REMOVAL_GRACE.
   */
  async removePlugin(node: string, driver: string, grace?: string): Promise<void> {
    const query = grace === undefined ? '' : `?grace=${grace}`;
    const response = await this.api('DELETE', `${pluginPath({ node, driver })}${query}`);
    if (response.status !== 204 && response.status !== 200) {
      throw new Error(`DELETE ${node}/${driver}: ${response.status} ${await response.text()}`);
    }
  }

  /**
   * The /metrics URLs of the slice-syncer replicas, from each one's last `started` line in its
   * log (the replicas listen on ports of their own choosing).
   */
  async syncerMetricsUrls(): Promise<string[]> {
    return Promise.all(
      this.syncers.map(async (syncer) => {
        const log = await readFile(join(this.logDir, `${syncer}.log`), 'utf8');
        let probes: string | undefined;
        for (const line of log.split('\n')) {
          if (!line.includes('"msg":"started"')) continue;
          const entry = JSON.parse(line) as { probes?: unknown };
          if (typeof entry.probes === 'string') probes = entry.probes;
        }
        if (probes === undefined) throw new Error(`${syncer} logged no probe URL`);
        return `${probes}/metrics`;
      }),
    );
  }

  /** The JSON lines a process logged so far (`reports/e2e/<name>/<process>.log`). */
  async logEntries(name: string): Promise<LogEntry[]> {
    const log = await readFile(join(this.logDir, `${name}.log`), 'utf8');
    return log
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogEntry);
  }

  /** The first slice-syncer replica's metrics, in Prometheus' text format. */
  async syncerMetrics(): Promise<string> {
    const [url] = await this.syncerMetricsUrls();
    if (url === undefined) throw new Error('no slice-syncer replica');
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    return response.text();
  }

  /** Runs kubectl against the emulator; resolves with its stdout. */
  async kubectl(...args: string[]): Promise<string> {
    const { stdout } = await run('kubectl', ['--kubeconfig', this.kubeconfig, ...args], {
      timeout: 30_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  }

  /**
   * The ResourceSlices as kubectl reads them (`kubectl get resourceslices -o json`), or in one
   * `version` (`kubectl get resourceslices.<version>.resource.k8s.io`), then in v1's shape.
   */
  async kubectlSlices(version?: ResourceSliceVersion): Promise<ResourceSlice[]> {
    const resource =
      version === undefined ? 'resourceslices' : `resourceslices.${version}.resource.k8s.io`;
    const list = JSON.parse(await this.kubectl('get', resource, '-o', 'json')) as {
      items: ResourceSlice[];
    };
    return version === undefined ? list.items : list.items.map((s) => sliceAsV1(s, version));
  }

  /**
   * The Events about a Node as kubectl reads them with the events.k8s.io API
   * (`kubectl get events.events.k8s.io -n default -o json`), oldest first, each with its series
   * count (1 for a single occurrence).
   */
  async nodeEvents(node: string): Promise<NodeEvent[]> {
    const list = JSON.parse(
      await this.kubectl('get', 'events.v1.events.k8s.io', '-n', 'default', '-o', 'json'),
    ) as {
      items: (Omit<NodeEvent, 'count'> & {
        metadata: { name: string };
        regarding: { kind: string; name: string };
        eventTime: string;
        series?: { count: number };
      })[];
    };
    return list.items
      .filter((e) => e.regarding.kind === 'Node' && e.regarding.name === node)
      .sort(
        (a, b) =>
          a.eventTime.localeCompare(b.eventTime) || a.metadata.name.localeCompare(b.metadata.name),
      )
      .map(({ type, reason, note, series }) => ({ type, reason, note, count: series?.count ?? 1 }));
  }

  /** Waits until `check` holds, polling; fails naming `what`. */
  async until(
    what: string,
    check: () => Promise<boolean> | boolean,
    timeoutMs = 30_000,
  ): Promise<void> {
    await waitFor(check, { timeoutMs, intervalMs: 100, description: what });
  }

  /** Stops every driver and service, then the emulator and Redis. Never rejects. */
  async close(): Promise<void> {
    await Promise.all([...this.extras].map((d) => d.close().catch(() => undefined)));
    const registrars = ['plugin-watcher', 'registration-api'];
    await Promise.all(
      [...this.services].filter(([n]) => registrars.includes(n)).map(([, p]) => p.stop(5000)),
    );
    await Promise.all([...this.services.values()].map((p) => p.stop(5000)));
    await this.emulatorProcess.stop(5000);
    await this.redisServer?.stop();
    await Promise.all([...this.logs.values()].map((s) => new Promise((resolve) => s.end(resolve))));
    await rm(this.stateDir, { recursive: true, force: true });
  }

  private define(redisSettings: Record<string, string>, tokenFile: string, apiPort: number): void {
    const shared = {
      ...this.options.commonEnv,
      ...redisSettings,
      REDIS_PREFIX: 'sk',
      LOG_LEVEL: this.logLevel,
    };
    this.specs.set('registration-api', {
      app: 'registration-api',
      env: {
        ...shared,
        HOST: '127.0.0.1',
        PORT: String(apiPort),
        TOKEN_FILE: tokenFile,
        ...(this.options.apiKubernetesIdentities === true
          ? { AUTH_MODE: 'both', KUBECONFIG: this.kubeconfig }
          : {}),
        ...(this.options.apiTls === undefined
          ? {}
          : {
              TLS_CERT_FILE: this.options.apiTls.certFile,
              TLS_KEY_FILE: this.options.apiTls.keyFile,
            }),
        PLUGIN_SOCKET_DIRS: join(this.stateDir, 'sockets'),
        // The scenarios register many plugins from one address.
        RATE_LIMIT_MAX: '100000',
        // ... tens of them at once, served by the test's own process: on a loaded machine their
        // GetInfo can take longer than kubelet's 1 s (a fresh-clone CI run saw it once).
        PLUGIN_CALL_TIMEOUT: '10s',
        ...this.options.apiEnv,
      },
      ready: (e) => /^Server listening at /.test(e.msg ?? ''),
    });
    this.specs.set('plugin-watcher', {
      app: 'plugin-watcher',
      env: {
        ...shared,
        // The watcher checks every dial with the API's endpoint policy.
        PLUGIN_SOCKET_DIRS: join(this.stateDir, 'sockets'),
        WATCHER_MODE: 'shared',
        REPLICA_ID: 'plugin-watcher-1',
        PROBE_HOST: '127.0.0.1',
        PROBE_PORT: '0',
        RECONNECT_INITIAL_DELAY: '200ms',
        RECONNECT_MAX_DELAY: '1s',
        ...(this.options.discoveryNode === undefined
          ? {}
          : {
              WATCHER_MODE: 'node',
              NODE_NAME: this.options.discoveryNode,
              PLUGIN_REGISTRATION_DIR: this.registrationDir,
              REGISTRATION_API_URL: this.apiUrl,
              REGISTRATION_TOKEN_FILE: join(this.stateDir, 'watcher-token'),
            }),
        ...this.options.watcherEnv,
      },
      ready: (e) => e.msg === 'watching',
    });
    for (const name of this.syncers) {
      this.specs.set(name, {
        app: 'slice-syncer',
        env: {
          ...shared,
          KUBECONFIG: this.kubeconfig,
          PROBE_HOST: '127.0.0.1',
          PROBE_PORT: '0',
          ...this.options.syncerEnv,
        },
        ready: (e) => e.msg === 'started',
      });
    }
  }

  private get logLevel(): string {
    return this.options.logLevel ?? 'info';
  }

  private api(method: string, path: string): Promise<Response> {
    return fetch(new URL(path, this.apiUrl), {
      method,
      headers: { authorization: `Bearer ${this.tokens.admin}` },
      signal: AbortSignal.timeout(10_000),
    });
  }
}

/**
 * Spawns an app with only the inherited variables and `env`, its lines copied to a log file:
 * from its sources, or compiled from `production`; inside `cgroup` when one is given.
 */
function spawnLogged(
  logDir: string,
  logs: Map<string, WriteStream>,
  name: string,
  app: string,
  env: Record<string, string>,
  production?: ProductionTree,
  cgroup?: MemoryCgroup,
): SupervisedProcess {
  let log = logs.get(name);
  if (log === undefined) {
    log = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
    logs.set(name, log);
  }
  const out = log;
  const { env: imageEnv, ...command } =
    production === undefined ? { env: {}, ...appCommand(app) } : production.command(app);
  return new SupervisedProcess({
    name,
    ...inCgroup(command, cgroup),
    env: {
      ...inheritedEnv(process.env, INHERITED),
      ...imageEnv,
      ...env,
    },
    // A Ctrl-C reaches the test or benchmark only, which then closes the System in order.
    ownProcessGroup: true,
    onLine: (line) => {
      out.write(`${line}\n`);
    },
  });
}

function inCgroup<C extends { command: string; args: string[] }>(
  command: C,
  cgroup: MemoryCgroup | undefined,
): C {
  return cgroup === undefined ? command : cgroup.wrap(command);
}
