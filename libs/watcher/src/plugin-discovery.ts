import { negotiateVersion, unsupportedVersionsMessage } from '@slicekeeper/admission';
import type { AdmittedEndpoint, PluginInfo, PluginProber } from '@slicekeeper/admission';
import {
  DRA_PLUGIN_TYPE,
  SUPPORTED_PLUGIN_VERSIONS,
  driverNameProblem,
} from '@slicekeeper/contracts';
import type { Registration, SliceKey } from '@slicekeeper/contracts';
import { errorMessage, isTerminal } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import type { RegisterRequest } from '@slicekeeper/registration-client';
import { Backoff, systemClock } from '@slicekeeper/time';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/time';
import { planSocket } from './plan-socket';
import type { SocketDirectory } from './registration-directory';

/** What discovery needs of the registration API: `RegistrationClient` of @slicekeeper/registration-client. */
export interface DiscoveryRegistrar {
  /** `POST /v1/plugins`; rejects with the API's reason when it refuses. */
  register(request: RegisterRequest): Promise<Registration>;
  /** `DELETE /v1/plugins/{node}/{driver}?endpoint=`, with the API's removal grace. */
  deregister(plugin: SliceKey & { endpoint: string }): Promise<void>;
}

export interface PluginDiscoveryOptions {
  /** The registration directory (`socketDirectory(path)`). */
  directory: SocketDirectory;
  /** The node the watcher runs on: every plugin found is registered for it. */
  nodeName: string;
  /**
   * The endpoint policy (`EndpointPolicy` of @slicekeeper/admission): a socket is dialled only
   * at its real path inside the allowed directories; a symlink out of them is refused.
   */
  policy: { admit(endpoint: string): Promise<AdmittedEndpoint> };
  /** Dials a socket for `GetInfo` and `NotifyRegistrationStatus` (`GrpcPluginProber`). */
  prober: PluginProber;
  registrar: DiscoveryRegistrar;
  logger: Logger;
  /** @defaultValue the system clock */
  clock?: Clock;
  /**
   * How long the directory must be quiet before it is read again, ms: a driver's bind, chmod
   * and a second socket come as one burst of events. @defaultValue 100
   */
  debounceMs?: number;
  /**
   * Interval of the safety-net rescan, ms, for an event the file system did not deliver (and to
   * watch again a directory that was removed and made again). @defaultValue 10000
   */
  rescanMs?: number;
  /**
   * Retries of a failed registration or deregistration, per socket. @defaultValue 500 ms
   * doubling to 122 s, as kubelet's operation executor backs off
   */
  backoff?: BackoffOptions;
}

/** A socket registered through the API: its key and the endpoint the API stored. */
interface RegisteredSocket {
  readonly identity: string;
  readonly key: SliceKey;
  readonly endpoint: string;
}

/** Discovery's record of one entry of the directory. */
interface SocketEntry {
  present: string | undefined;
  registered: RegisteredSocket | undefined;
  refused: string | undefined;
  /** One registration or deregistration at a time per socket; `dirty` asks for another pass. */
  busy: boolean;
  dirty: boolean;
  readonly backoff: Backoff;
  retry: TimerHandle | undefined;
}

/** How an attempt ended. `refused`: not tried again until the socket is replaced. */
type Attempt = { kind: 'done' } | { kind: 'refused' } | { kind: 'failed'; reason: string };

/**
 * Kubelet-style plugin discovery for the node-mode watcher (kubelet's pluginwatcher and
 * reconciler, pkg/kubelet/pluginmanager): a socket that appears in the registration directory
 * is checked with the endpoint policy, dialled, asked `GetInfo`, checked (type `DRAPlugin`, the
 * driver name, a supported version; the real path of the service socket GetInfo names),
 * registered through the registration API with the watcher's own token, bound to this node, as
 * `probedOnNode` — the API, which cannot reach a socket on this node, then checks the endpoint
 * as written, the driver and the version, and authorizes, but dials nothing — and told the
 * outcome with `NotifyRegistrationStatus`, once. A socket that goes is deregistered through the API, so its slices
 * are withdrawn after the API's removal grace. The endpoint registered is GetInfo's `endpoint`
 * when the plugin names one (its resource service), else the registration socket itself.
 *
 * The directory is read at start (sockets already there), after each burst of file-system
 * events and every `rescanMs`. A failed attempt is retried with backoff; a socket the policy or
 * its own GetInfo answer refused is left until it is replaced. Closing does not deregister: the
 * plugins are still there, and the next watcher registers them again (the API answers 200).
 */
export class PluginDiscovery {
  private readonly options: PluginDiscoveryOptions;
  private readonly clock: Clock;
  private readonly entries = new Map<string, SocketEntry>();
  private readonly running = new Set<Promise<void>>();
  private watcher: { close(): void } | undefined;
  private debounce: TimerHandle | undefined;
  private rescanTimer: TimerHandle | undefined;
  private scanning = false;
  private scanAgain = false;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(options: PluginDiscoveryOptions) {
    this.options = options;
    this.clock = options.clock ?? systemClock;
  }

  /** Plugins registered through discovery now. */
  get registered(): number {
    let count = 0;
    for (const entry of this.entries.values()) if (entry.registered !== undefined) count++;
    return count;
  }

  /** Watches the directory and reads it once; registrations of what is there run on. */
  async start(): Promise<void> {
    await this.options.directory.prepare();
    this.watch();
    await this.scan();
    this.scheduleRescan();
  }

  /** Stops watching and waits for the attempts in flight. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.watcher?.close();
      this.watcher = undefined;
      for (const timer of [this.debounce, this.rescanTimer]) {
        if (timer !== undefined) this.clock.clearTimer(timer);
      }
      for (const entry of this.entries.values()) {
        if (entry.retry !== undefined) this.clock.clearTimer(entry.retry);
      }
      await Promise.all(this.running);
    })();
    return this.closing;
  }

  private watch(): void {
    if (this.watcher !== undefined || this.closed) return;
    try {
      this.watcher = this.options.directory.watch(
        () => {
          this.changed();
        },
        (error) => {
          this.watcher = undefined;
          this.options.logger.warn(
            { dir: this.options.directory.path, err: errorMessage(error) },
            'registration directory watch failed',
          );
        },
      );
    } catch (error) {
      this.options.logger.warn(
        { dir: this.options.directory.path, err: errorMessage(error) },
        'registration directory not watched',
      );
    }
  }

  private changed(): void {
    if (this.closed || this.debounce !== undefined) return;
    this.debounce = this.clock.setTimer(() => {
      this.debounce = undefined;
      this.track(this.scan());
    }, this.options.debounceMs ?? 100);
  }

  private scheduleRescan(): void {
    if (this.closed) return;
    this.rescanTimer = this.clock.setTimer(() => {
      this.watch();
      this.track(
        this.scan().finally(() => {
          this.scheduleRescan();
        }),
      );
    }, this.options.rescanMs ?? 10_000);
  }

  /** Reads the directory and reconciles every entry that changed; one scan at a time. */
  private async scan(): Promise<void> {
    if (this.scanning) {
      this.scanAgain = true;
      return;
    }
    this.scanning = true;
    try {
      do {
        this.scanAgain = false;
        let found: Map<string, string>;
        try {
          found = await this.options.directory.list();
        } catch (error) {
          this.options.logger.warn(
            { dir: this.options.directory.path, err: errorMessage(error) },
            'registration directory not read',
          );
          return;
        }
        if (this.closed) return;
        for (const [socket, identity] of found) this.observe(socket, identity);
        for (const socket of this.entries.keys()) {
          if (!found.has(socket)) this.observe(socket, undefined);
        }
      } while (this.rescanAsked());
    } finally {
      this.scanning = false;
    }
  }

  private observe(socket: string, identity: string | undefined): void {
    let entry = this.entries.get(socket);
    if (entry === undefined) {
      if (identity === undefined) return;
      entry = {
        present: undefined,
        registered: undefined,
        refused: undefined,
        busy: false,
        dirty: false,
        backoff: new Backoff({ initialMs: 500, maxMs: 122_000, ...this.options.backoff }),
        retry: undefined,
      };
      this.entries.set(socket, entry);
    }
    if (entry.present === identity) return;
    if (identity === undefined) this.options.logger.info({ socket }, 'plugin socket lost');
    else this.options.logger.info({ socket }, 'plugin socket found');
    entry.present = identity;
    // A new socket (or none) starts afresh: no waiting on the backoff of the one before.
    entry.backoff.reset();
    if (entry.retry !== undefined) this.clock.clearTimer(entry.retry);
    entry.retry = undefined;
    this.reconcile(socket, entry);
  }

  private reconcile(socket: string, entry: SocketEntry): void {
    if (entry.busy) {
      entry.dirty = true;
      return;
    }
    entry.busy = true;
    this.track(this.run(socket, entry));
  }

  private async run(socket: string, entry: SocketEntry): Promise<void> {
    try {
      do {
        entry.dirty = false;
        if (this.closed) return;
        const action = planSocket({
          present: entry.present,
          registered: entry.registered?.identity,
          refused: entry.refused,
        });
        if (action === 'none') return;
        if (action === 'forget') {
          this.entries.delete(socket);
          return;
        }
        const attempt =
          action === 'register'
            ? await this.register(socket, entry)
            : await this.deregister(socket, entry);
        if (attempt.kind === 'failed' && !changedMeanwhile(entry) && !this.isClosed()) {
          const delayMs = entry.backoff.next();
          this.options.logger.warn(
            { socket, err: attempt.reason, attempt: entry.backoff.attempts, retryInMs: delayMs },
            action === 'register' ? 'plugin not registered' : 'plugin not deregistered',
          );
          entry.retry = this.clock.setTimer(() => {
            entry.retry = undefined;
            this.reconcile(socket, entry);
          }, delayMs);
        } else if (attempt.kind !== 'failed') {
          entry.backoff.reset();
        }
      } while (changedMeanwhile(entry));
    } finally {
      entry.busy = false;
    }
  }

  /** Policy, dial, GetInfo, checks, the API, NotifyRegistrationStatus. */
  private async register(socket: string, entry: SocketEntry): Promise<Attempt> {
    const identity = entry.present;
    const { logger } = this.options;
    let admitted: AdmittedEndpoint;
    try {
      admitted = await this.options.policy.admit(`unix://${socket}`);
    } catch (error) {
      if (!isTerminal(error)) return { kind: 'failed', reason: errorMessage(error) };
      // Never dialled, so never told: a socket the policy refuses is not one slicekeeper talks to.
      logger.warn({ socket, err: errorMessage(error) }, 'plugin socket refused');
      entry.refused = identity;
      return { kind: 'refused' };
    }
    let session;
    try {
      session = await this.options.prober.connect(admitted);
    } catch (error) {
      return { kind: 'failed', reason: errorMessage(error) };
    }
    try {
      let info: PluginInfo | undefined;
      try {
        info = await session.getInfo();
      } catch (error) {
        return { kind: 'failed', reason: errorMessage(error) };
      }
      if (info === undefined) {
        logger.warn(
          { socket, err: 'the socket does not serve the registration service' },
          'plugin socket refused',
        );
        entry.refused = identity;
        return { kind: 'refused' };
      }
      const problem = infoProblem(info);
      if (problem !== undefined) {
        logger.warn({ socket, driver: info.name, err: problem }, 'plugin socket refused');
        await this.tell(session, socket, { registered: false, error: problem });
        entry.refused = identity;
        return { kind: 'refused' };
      }
      const endpoint = serviceEndpoint(info, socket);
      const local = endpoint.startsWith('unix://');
      if (local && endpoint !== `unix://${socket}`) {
        // The API will not see this socket's real path: it is checked here, on its node.
        const serviceProblem = await this.options.policy.admit(endpoint).then(
          () => undefined,
          (error: unknown) => error,
        );
        if (serviceProblem !== undefined) {
          if (!isTerminal(serviceProblem)) {
            return { kind: 'failed', reason: errorMessage(serviceProblem) };
          }
          logger.warn(
            { socket, driver: info.name, endpoint, err: errorMessage(serviceProblem) },
            'plugin socket refused',
          );
          await this.tell(session, socket, {
            registered: false,
            error: errorMessage(serviceProblem),
          });
          entry.refused = identity;
          return { kind: 'refused' };
        }
      }
      let registration: Registration;
      try {
        registration = await this.options.registrar.register({
          node: this.options.nodeName,
          endpoint,
          driver: info.name,
          supportedVersions: info.supportedVersions,
          // A socket on this node: the API cannot dial it, and must not tell the plugin twice.
          // A TCP endpoint GetInfo names the API dials and checks itself.
          ...(local ? { probedOnNode: true } : {}),
        });
      } catch (error) {
        await this.tell(session, socket, { registered: false, error: errorMessage(error) });
        return { kind: 'failed', reason: errorMessage(error) };
      }
      const previous = entry.registered;
      entry.registered = {
        identity: identity ?? '',
        key: { node: registration.node, driver: registration.driver },
        endpoint: registration.endpoint,
      };
      entry.refused = undefined;
      logger.info(
        {
          socket,
          driver: registration.driver,
          endpoint: registration.endpoint,
          version: registration.version,
        },
        'plugin registered',
      );
      await this.tell(session, socket, { registered: true });
      if (previous !== undefined && !samePlugin(previous, entry.registered)) {
        // The replaced socket named another driver or endpoint: that registration is stale.
        await this.options.registrar
          .deregister({ ...previous.key, endpoint: previous.endpoint })
          .catch((error: unknown) => {
            logger.warn(
              { socket, driver: previous.key.driver, err: errorMessage(error) },
              'replaced plugin not deregistered',
            );
          });
      }
      return { kind: 'done' };
    } finally {
      session.close();
    }
  }

  private async deregister(socket: string, entry: SocketEntry): Promise<Attempt> {
    const registered = entry.registered;
    if (registered === undefined) return { kind: 'done' };
    try {
      await this.options.registrar.deregister({
        ...registered.key,
        endpoint: registered.endpoint,
      });
    } catch (error) {
      return { kind: 'failed', reason: errorMessage(error) };
    }
    entry.registered = undefined;
    this.options.logger.info(
      { socket, driver: registered.key.driver, endpoint: registered.endpoint },
      'plugin deregistered',
    );
    return { kind: 'done' };
  }

  /** NotifyRegistrationStatus; a plugin that cannot be told keeps its registration (kubelet too). */
  private async tell(
    session: { notify(outcome: { registered: boolean; error?: string }): Promise<void> },
    socket: string,
    outcome: { registered: boolean; error?: string },
  ): Promise<void> {
    try {
      await session.notify(outcome);
    } catch (error) {
      this.options.logger.warn({ socket, err: errorMessage(error) }, 'plugin not told');
    }
  }

  // Read through methods: a scan or an attempt awaits, and these change meanwhile.
  private isClosed(): boolean {
    return this.closed;
  }

  private rescanAsked(): boolean {
    return this.scanAgain && !this.closed;
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) => {
      this.options.logger.error({ err: errorMessage(error) }, 'discovery failed');
    });
    this.running.add(tracked);
    void tracked.finally(() => this.running.delete(tracked));
  }
}

/**
 * Why kubelet's plugin watcher would refuse this GetInfo answer (its DRA handler's
 * ValidatePlugin): not a DRA plugin, an invalid driver name, or no version slicekeeper speaks.
 */
export function infoProblem(info: PluginInfo): string | undefined {
  if (info.type !== DRA_PLUGIN_TYPE) {
    return `the plugin is a "${info.type}", not a "${DRA_PLUGIN_TYPE}"`;
  }
  const nameProblem = driverNameProblem(info.name);
  if (nameProblem !== undefined) return `driver name "${info.name}": ${nameProblem}`;
  if (negotiateVersion(info.supportedVersions, SUPPORTED_PLUGIN_VERSIONS) === undefined) {
    return unsupportedVersionsMessage(info.supportedVersions, SUPPORTED_PLUGIN_VERSIONS);
  }
  return undefined;
}

/**
 * Where the plugin serves its resource service: GetInfo's `endpoint` (kubelet accepts a bare
 * socket path there) or, when empty, the registration socket itself, as kubelet does.
 */
export function serviceEndpoint(info: PluginInfo, socket: string): string {
  if (info.endpoint === '') return `unix://${socket}`;
  return info.endpoint.startsWith('/') ? `unix://${info.endpoint}` : info.endpoint;
}

/** Whether the socket changed while an attempt of it was in flight (another pass is due). */
function changedMeanwhile(entry: SocketEntry): boolean {
  return entry.dirty;
}

function samePlugin(a: RegisteredSocket, b: RegisteredSocket): boolean {
  return a.key.node === b.key.node && a.key.driver === b.key.driver && a.endpoint === b.endpoint;
}
