import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '@slicekeeper/errors';
import { ChildRestarts } from './child-restarts';
import type { ChildRestartsOptions } from './child-restarts';
import { featureGatesUsed, isClusterScoped, loadDriverProfile } from './driver-profiles';
import { RegistrationClient } from '@slicekeeper/registration-client';
import { createEmulatorNodes } from './emulator-nodes';
import { LogPrefixer } from './log-prefixer';
import { RedisNotInstalledError, RedisServer, freePort } from './redis-server';
import { generateStackTokens, writeStackTokens } from './stack-tokens';
import { SupervisedProcess, appCommand, inheritedEnv } from './supervised-process';
import type { LogEntry } from './supervised-process';

export interface LocalStackOptions {
  /** Absolute directory of the stack's state: kubeconfig, tokens, plugin sockets. */
  stateDir: string;
  /** An existing Redis to use; unset: a private redis-server that keeps nothing. */
  redisUrl?: string;
  redisPrefix: string;
  /** A real cluster's kubeconfig; unset: the kube emulator, with `nodes` created in it. */
  kubeconfig?: string;
  /** The nodes an example driver runs on, one driver each. */
  nodes: readonly string[];
  /** The example drivers' DRA driver name. */
  driverName: string;
  /**
   * The example drivers' device profile (their `PROFILE`). A profile whose pools are not
   * node-local (`fabric`) runs one driver, for the cluster-scoped key, instead of one per node.
   * @defaultValue 'gpu'
   */
  profile?: string;
  /** The kube emulator's `KUBE_RELEASE`; unset: its default. */
  kubeRelease?: string;
  /** The kube emulator's `FEATURE_GATES` (`Gate=true,…`); unset: the release's defaults. */
  featureGates?: string;
  syncerReplicas: number;
  /** Registration API port; 0: any free one. */
  apiPort: number;
  /** Kube emulator port; 0: any free one. */
  emulatorPort: number;
  /** The services' log level. */
  logLevel: string;
  /** How long to wait for every service and for the drivers' slices, ms. */
  startTimeoutMs: number;
  /** Variables the children inherit (PATH, HOME …); every setting is passed explicitly. */
  env: Readonly<Record<string, string | undefined>>;
  /** Where the stack's and its processes' lines go, formatted for a human. */
  write: (line: string) => void;
  /** ANSI colours in the output. @defaultValue false */
  color?: boolean;
  /** Bound on each process's graceful stop before SIGKILL, ms. @defaultValue 10000 */
  stopGraceMs?: number;
  /** When a child that died once the stack runs is started again (backoff, clock). */
  restarts?: Omit<ChildRestartsOptions, 'say'>;
}

/** Where everything is, once the stack runs. */
export interface LocalStackInfo {
  apiUrl: string;
  docsUrl: string;
  kubeconfig: string;
  /** The kube emulator's URL; undefined with a real cluster. */
  emulatorUrl: string | undefined;
  /**
   * The Kubernetes release the emulator passes for and the gates it was given (those left out
   * have the release's defaults), as it said when it listened; undefined with a real cluster.
   */
  emulatorGates?: { release: string; featureGates: Readonly<Record<string, boolean>> };
  /** The example drivers' profile and the feature gates its fields need. */
  profile: { name: string; gates: readonly string[] };
  redisUrl: string;
  tokenFile: string;
  adminTokenFile: string;
  /** Every child process, by name (a restarted child has another). */
  pids: ReadonlyMap<string, number>;
  /** From `start()` until every driver's slices were published, ms. */
  startedInMs: number;
}

/** Variables passed on from the environment to every child; nothing else leaks in. */
const INHERITED = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'SystemRoot'];
const SELF = 'local-stack';
/** How the stack names the cluster-scoped key (empty node name) in its files and lines. */
const CLUSTER = 'cluster';

/**
 * The whole slicekeeper system on loopback, each service its own process as in production:
 * Redis (unless one is given), the kube emulator (unless a cluster is given) with the example
 * nodes, the registration API, the plugin-watcher, the slice-syncer replicas and one example
 * driver per node, registered with node-bound tokens. Lines of every process are shown with its
 * name in front. A child that dies while the stack runs is said and started again with backoff
 * (`ChildRestarts`); one that dies while the stack starts fails the start. `close()` stops
 * everything in reverse order: SIGTERM, then SIGKILL stragglers.
 */
export class LocalStack {
  /** The running process of each child, by name. */
  private readonly children = new Map<string, SupervisedProcess>();
  private readonly prefixer: LogPrefixer;
  private readonly restarts: ChildRestarts;
  private running = false;
  private closing: Promise<void> | undefined;
  /** The driver keys' nodes: each node, or only `''` for a cluster-scoped profile. */
  private readonly driverNodes: readonly string[];
  private readonly profileGates: readonly string[];
  private emulatorGates: LocalStackInfo['emulatorGates'];
  /** Resolves with the first child that exits while the stack starts. */
  private readonly startupExit: Promise<SupervisedProcess>;
  private reportStartupExit: (process: SupervisedProcess) => void = () => undefined;
  private readonly killOnExit = (): void => {
    for (const child of this.children.values()) void child.kill();
  };

  constructor(private readonly options: LocalStackOptions) {
    const inventory = loadDriverProfile(this.profile);
    this.driverNodes = isClusterScoped(inventory) ? [''] : options.nodes;
    this.profileGates = featureGatesUsed(inventory);
    this.prefixer = new LogPrefixer({
      names: [
        SELF,
        'redis',
        'kube-emulator',
        'registration-api',
        'plugin-watcher',
        ...this.syncerNames(),
        ...this.driverNames(),
      ],
      color: options.color ?? false,
    });
    this.restarts = new ChildRestarts({
      ...options.restarts,
      say: (message) => {
        this.say(message);
      },
    });
    this.startupExit = new Promise((resolve) => {
      this.reportStartupExit = resolve;
    });
  }

  /** Prints a line of the stack's own, prefixed like the processes' lines. */
  say(message: string): void {
    this.options.write(this.prefixer.format(SELF, message));
  }

  /**
   * Starts everything and waits until every driver's slices are published. Fails — naming the
   * process and showing its stderr — when a service dies or does not come up in time; the caller
   * then calls `close()`.
   */
  async start(): Promise<LocalStackInfo> {
    const died = this.startupExit.then(async (child) => {
      const code = await child.exited;
      const stderr = child.stderr === '' ? '' : `:\n${child.stderr}`;
      throw new Error(`${child.name} exited (${code}) while the stack was starting${stderr}`);
    });
    const info = await Promise.race([this.startAll(), died]);
    this.running = true;
    return info;
  }

  private async startAll(): Promise<LocalStackInfo> {
    const o = this.options;
    // SIGKILL whatever still runs if this process exits without closing (an uncaught error).
    process.once('exit', this.killOnExit);
    const started = Date.now();
    const socketDir = join(o.stateDir, 'sockets');
    const tokenFile = join(o.stateDir, 'tokens.json');
    const adminTokenFile = join(o.stateDir, 'admin-token');
    await mkdir(o.stateDir, { recursive: true });
    // Sockets of an earlier run that was killed would be refused as "in use" by the drivers.
    await rm(socketDir, { recursive: true, force: true });
    await mkdir(socketDir, { recursive: true });
    const tokens = generateStackTokens(o.nodes);
    await writeStackTokens(tokens, { tokenFile, adminTokenFile });
    // The drivers register themselves, each with its node's token, at an address fixed now.
    const apiPort = o.apiPort === 0 ? await freePort() : o.apiPort;
    const nodeTokenDir = join(o.stateDir, 'node-tokens');
    await mkdir(nodeTokenDir, { recursive: true });

    // Start the drivers first: they take longest to load, and retry registering until the API
    // answers.
    const drivers = await Promise.all(
      this.driverNodes.map(async (node, index) => {
        // The cluster-scoped key has no node to bind a token to: the admin token registers it.
        const where = node === '' ? CLUSTER : node;
        const endpoint = `unix://${join(socketDir, where, `${o.driverName}.sock`)}`;
        const nodeTokenFile = join(nodeTokenDir, where);
        const token = node === '' ? tokens.admin : tokenOf(tokens.nodes, node);
        await writeFile(nodeTokenFile, `${token}\n`, { mode: 0o600 });
        const driver = this.spawnApp(this.driverNames()[index] ?? where, 'example-driver', {
          DRIVER_NAME: o.driverName,
          PROFILE: this.profile,
          NODE_NAME: node,
          ENDPOINT: endpoint,
          REGISTRATION_API_URL: `http://127.0.0.1:${apiPort}`,
          REGISTRATION_TOKEN_FILE: nodeTokenFile,
        });
        return { node, process: driver };
      }),
    );
    const { kubeconfig, emulator } = await this.startCluster();
    const redisUrl = o.redisUrl ?? (await this.startRedis(join(o.stateDir, 'redis')));

    const shared = { REDIS_URL: redisUrl, REDIS_PREFIX: o.redisPrefix };
    const api = this.spawnApp('registration-api', 'registration-api', {
      ...shared,
      HOST: '127.0.0.1',
      PORT: String(apiPort),
      TOKEN_FILE: tokenFile,
      PLUGIN_SOCKET_DIRS: socketDir,
    });
    const watcher = this.spawnApp('plugin-watcher', 'plugin-watcher', {
      ...shared,
      // The watcher checks every dial with the API's endpoint policy.
      PLUGIN_SOCKET_DIRS: socketDir,
      WATCHER_MODE: 'shared',
      REPLICA_ID: 'plugin-watcher-1',
      PROBE_HOST: '127.0.0.1',
      PROBE_PORT: '0',
    });
    const syncers = this.syncerNames().map((name) =>
      this.spawnApp(name, 'slice-syncer', {
        ...shared,
        KUBECONFIG: kubeconfig,
        PROBE_HOST: '127.0.0.1',
        PROBE_PORT: '0',
      }),
    );

    const listening = await this.waitFor(api, (e) => /^Server listening at /.test(e.msg ?? ''));
    const apiUrl = (listening.msg ?? '').replace(/^Server listening at /, '');
    const statusClient = new RegistrationClient({ baseUrl: apiUrl, token: tokens.admin });
    // The nodes must exist before the drivers register, or the syncers park them as node-missing.
    const emulatorUrl = await emulator;
    await Promise.all([
      this.waitFor(watcher, (e) => e.msg === 'watching'),
      ...syncers.map((syncer) => this.waitFor(syncer, (e) => e.msg === 'started')),
      ...drivers.map(({ process: driver }) => this.waitFor(driver, (e) => e.msg === 'registered')),
    ]);
    await this.waitForSlices(statusClient);

    return {
      apiUrl,
      docsUrl: `${apiUrl}/docs`,
      kubeconfig,
      emulatorUrl,
      ...(this.emulatorGates === undefined ? {} : { emulatorGates: this.emulatorGates }),
      profile: { name: this.profile, gates: this.profileGates },
      redisUrl,
      tokenFile,
      adminTokenFile,
      pids: new Map(
        [...this.children].flatMap(([name, p]) =>
          p.pid === undefined ? [] : [[name, p.pid] as const],
        ),
      ),
      startedInMs: Date.now() - started,
    };
  }

  /**
   * Stops everything, the drivers first and Redis last: SIGTERM, then SIGKILL after the grace
   * period. Idempotent; never rejects.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.restarts.close();
      // The drivers go first and deregister themselves on SIGTERM, while the API still runs.
      const order = [
        this.driverNames(),
        ['plugin-watcher', 'registration-api'],
        this.syncerNames(),
        ['kube-emulator'],
        ['redis'],
      ];
      for (const names of order) {
        await Promise.all(
          [...this.children]
            .filter(([name]) => names.includes(name))
            .map(([, p]) => p.stop(this.options.stopGraceMs)),
        );
      }
      // Anything not in the order above (none today) goes last.
      await Promise.all([...this.children.values()].map((p) => p.stop(this.options.stopGraceMs)));
      process.off('exit', this.killOnExit);
    })();
    return this.closing;
  }

  private async startRedis(dir: string): Promise<string> {
    const redis = await RedisServer.start({
      dir,
      env: this.childEnv({}),
      ownProcessGroup: true,
      // Redis's start-up banner and warnings are noise here; a failure to start shows them.
    }).catch((error: unknown) => {
      if (!(error instanceof RedisNotInstalledError)) throw error;
      throw new Error(`${error.message}, or set REDIS_URL to a Redis you have`);
    });
    const respawn = async (): Promise<SupervisedProcess> => {
      // The same port and directory; it keeps nothing, so the services see a Redis that came
      // back empty, and the watcher stores its live streams' registrations and snapshots again.
      await redis.restart();
      if (this.closing !== undefined) await redis.stop();
      this.track('redis', redis.process, respawn);
      return redis.process;
    };
    this.track('redis', redis.process, respawn);
    if (this.closing !== undefined) await redis.stop();
    return redis.url;
  }

  /**
   * Starts the kube emulator (unless a cluster is given) on a port chosen now, and writes its
   * kubeconfig at once — the emulator writes the same file once it listens — so that the
   * syncers, which take longest to load, can start alongside it instead of after it.
   */
  private async startCluster(): Promise<{
    kubeconfig: string;
    emulator: Promise<string> | undefined;
  }> {
    const o = this.options;
    if (o.kubeconfig !== undefined) return { kubeconfig: o.kubeconfig, emulator: undefined };
    const port = o.emulatorPort === 0 ? await freePort() : o.emulatorPort;
    const kubeconfig = join(o.stateDir, 'kubeconfig');
    await writeFile(kubeconfig, emulatorKubeconfig(`http://127.0.0.1:${port}`), { mode: 0o600 });
    const createNodes = async (emulator: SupervisedProcess): Promise<string> => {
      const listening = await this.waitFor(emulator, (e) => e.msg === 'listening');
      const url = String(listening.url);
      this.emulatorGates = {
        release: String(listening.release),
        featureGates: gatesOf(listening.featureGates),
      };
      await createEmulatorNodes(url, o.nodes);
      this.say(`created nodes ${o.nodes.join(', ')}`);
      return url;
    };
    const emulator = this.spawnApp(
      'kube-emulator',
      'kube-emulator',
      {
        HOST: '127.0.0.1',
        PORT: String(port),
        KUBECONFIG_OUT: kubeconfig,
        ...(o.kubeRelease === undefined ? {} : { KUBE_RELEASE: o.kubeRelease }),
        ...(o.featureGates === undefined ? {} : { FEATURE_GATES: o.featureGates }),
      },
      // It comes back empty, as a new cluster: the nodes again, then the syncers' watches
      // republish every driver's slices.
      (restarted) => {
        createNodes(restarted).catch((error: unknown) => {
          this.say(`kube-emulator: creating the nodes again failed: ${errorMessage(error)}`);
        });
      },
    );
    const ready = createNodes(emulator);
    // Awaited later; a failure meanwhile must not count as an unhandled rejection.
    ready.catch(() => undefined);
    return { kubeconfig, emulator: ready };
  }

  /**
   * Starts an app as the child `name`; when it dies while the stack runs, the same command
   * starts again, and `onRestart` is called with the new process.
   */
  private spawnApp(
    name: string,
    app: string,
    env: Record<string, string>,
    onRestart?: (restarted: SupervisedProcess) => void,
  ): SupervisedProcess {
    if (this.closing !== undefined) throw new Error(`not starting ${name}: the stack is stopping`);
    const child = new SupervisedProcess({
      name,
      ...appCommand(app),
      env: this.childEnv({ LOG_LEVEL: this.options.logLevel, ...env }),
      ownProcessGroup: true,
      onLine: (line, stream) => {
        // fastify logs every request twice; 'request completed' says all 'incoming request' does.
        if (line.includes('"msg":"incoming request"')) return;
        this.options.write(this.prefixer.format(name, line, stream));
      },
    });
    this.track(name, child, () => {
      const restarted = this.spawnApp(name, app, env, onRestart);
      onRestart?.(restarted);
      return Promise.resolve(restarted);
    });
    return child;
  }

  /**
   * Makes `child` the running process of `name`. Its death fails the start while the stack
   * starts; once it runs, `respawn` starts it again after the backoff.
   */
  private track(
    name: string,
    child: SupervisedProcess,
    respawn: () => Promise<SupervisedProcess>,
  ): void {
    this.children.set(name, child);
    this.restarts.started(name);
    void child.exited.then((how) => {
      if (this.closing !== undefined || this.children.get(name) !== child) return;
      if (!this.running) {
        this.reportStartupExit(child);
        return;
      }
      this.restarts.exited(name, how, async () => {
        const restarted = await respawn();
        this.say(`restarted ${name} (pid ${restarted.pid ?? 'unknown'})`);
      });
    });
  }

  private childEnv(env: Record<string, string>): Record<string, string> {
    return { ...inheritedEnv(this.options.env, INHERITED), ...env };
  }

  private waitFor(
    child: SupervisedProcess,
    match: (entry: LogEntry) => boolean,
  ): Promise<LogEntry> {
    return child.waitForLog(match, 'that it is ready', this.options.startTimeoutMs);
  }

  /** Waits until the syncers have published every driver's slices (through the API's status). */
  private async waitForSlices(statusClient: RegistrationClient): Promise<void> {
    const deadline = Date.now() + this.options.startTimeoutMs;
    const pending = new Set(this.driverNodes);
    while (pending.size > 0) {
      for (const node of [...pending]) {
        const slices = publishedSlices(
          await statusClient
            .status({ node, driver: this.options.driverName })
            .catch(() => undefined),
        );
        if (slices !== undefined) {
          pending.delete(node);
          this.say(
            `${node === '' ? CLUSTER : node}: ${slices.length} ResourceSlice(s) published: ${slices.join(', ')}`,
          );
        }
      }
      if (pending.size === 0) return;
      if (Date.now() >= deadline) {
        throw new Error(
          `no ResourceSlices for ${[...pending].map((node) => node || CLUSTER).join(', ')} within ${this.options.startTimeoutMs}ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private syncerNames(): string[] {
    return Array.from({ length: this.options.syncerReplicas }, (_, i) => `slice-syncer-${i + 1}`);
  }

  private driverNames(): string[] {
    return this.driverNodes.map((node) => `example-driver-${node === '' ? CLUSTER : node}`);
  }

  private get profile(): string {
    return this.options.profile ?? 'gpu';
  }
}

/** The gates of the emulator's `listening` line: name → on. */
function gatesOf(logged: unknown): Record<string, boolean> {
  if (typeof logged !== 'object' || logged === null) return {};
  return Object.fromEntries(
    Object.entries(logged).filter(
      (entry): entry is [string, boolean] => typeof entry[1] === 'boolean',
    ),
  );
}

function tokenOf(tokens: ReadonlyMap<string, string>, node: string): string {
  const token = tokens.get(node);
  if (token === undefined) throw new Error(`no token for node ${node}`);
  return token;
}

/**
 * The kubeconfig the kube emulator writes (`buildKubeconfig` of `@slicekeeper/apiserver`), as
 * JSON, which is YAML too; not imported to keep the emulator's engine out of this process.
 */
function emulatorKubeconfig(server: string): string {
  const name = 'kube-emulator';
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name, cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name, user: {} }],
      contexts: [{ name, context: { cluster: name, user: name } }],
      'current-context': name,
      preferences: {},
    },
    null,
    2,
  )}\n`;
}

/**
 * The names of a plugin's published ResourceSlices, from its status as the registration API
 * reports it, once its last sync succeeded; else undefined.
 */
function publishedSlices(status: unknown): string[] | undefined {
  const sync = (status as { sync?: { outcome?: unknown; slices?: unknown } } | undefined)?.sync;
  if (sync?.outcome !== 'synced' || !Array.isArray(sync.slices) || sync.slices.length === 0) {
    return undefined;
  }
  return sync.slices.map(String);
}
