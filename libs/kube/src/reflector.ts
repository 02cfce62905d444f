import { SlicekeeperError, errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { Backoff, systemClock } from '@slicekeeper/time';
import type { BackoffOptions, Clock, TimerHandle } from '@slicekeeper/time';
import { classifyKubeError, responseStatusOf } from './classify-kube-error';
import type { KubeRequest, KubeTransport } from './kube-transport';
import { KubeApiError, withQuery } from './kube-transport';
import { parseJson, toListPage } from './resource-slice-json';

/** What a reflector needs of the connection (unit tests pass a fake). */
export type ReflectorTransport = Pick<KubeTransport, 'request' | 'stream'>;

/** A change a watch reports about one object. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ReflectorOptions<T, R> {
  transport: ReflectorTransport;
  /** The collection, e.g. `/apis/resource.k8s.io/v1/resourceslices`. */
  path: string;
  /** The resource as metrics name it (`resourceslices`, `nodes`). */
  resource: string;
  /** What the objects are called in logs and error messages, e.g. `ResourceSlices`. */
  kind: string;
  labelSelector?: string;
  /** Accept header of a list. @defaultValue 'application/json' */
  listAccept?: string;
  /** Accept header of a watch. @defaultValue 'application/json' */
  watchAccept?: string;
  /**
   * The object of a list item or watch event, checked; throws, with what is wrong as the
   * message, when it is not a valid object (the item or event is then logged and skipped).
   */
  decode: (json: unknown) => T;
  /**
   * A list replaces everything known: `items` is the whole state at `resourceVersion`.
   * `initial` for the first list. What it returns is what {@link Reflector.relist} resolves with.
   */
  onReplace: (items: T[], resourceVersion: string, initial: boolean) => R;
  /** One watch event, in resourceVersion order. */
  onEvent: (type: WatchEventType, object: T, resourceVersion: string) => void;
  /** A bookmark: every change up to `resourceVersion` has been delivered. */
  onProgress?: (resourceVersion: string) => void;
  logger: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /** Called once per list page and once per watch, as KubeSliceClient's `onRequest` is. */
  onRequest?: (verb: string, resource: string, code: number | 'error') => void;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** Uniform in [0, 1): spreads watch timeouts. Injected for tests. @defaultValue Math.random */
  random?: () => number;
  /**
   * Delays before retrying a failed list or watch. @defaultValue about client-go's reflector:
   * 800 ms doubling to 30 s, less up to half at random
   */
  backoff?: BackoffOptions;
  /** Objects per list page. @defaultValue 500 (client-go's pager) */
  listPageSize?: number;
  /** Timeout of one list page, and of a watch until its response starts, ms. @defaultValue 60000 */
  requestTimeoutMs?: number;
  /**
   * The server ends each watch after between this and twice this (`timeoutSeconds`, at random,
   * as client-go asks), ms; the watch then resumes. @defaultValue 300000
   */
  minWatchTimeoutMs?: number;
}

const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0.5 };

/**
 * A watch that lasted this long, or delivered any event, was healthy: its end is resumed at
 * once and resets the backoff. A shorter, silent one is retried with backoff (client-go treats
 * it as an error: "very short watch").
 */
const HEALTHY_WATCH_MS = 1000;

/**
 * How long after its `timeoutSeconds` the server may take to end a watch before we end it
 * ourselves (a connection that died without a FIN), ms.
 */
const WATCH_DEADLINE_GRACE_MS = 30_000;

type WatchOutcome =
  /** Ended by the server (its timeout, a restart) or by our deadline: resume from the last version. */
  | { kind: 'ended'; healthy: boolean }
  /** 410 Gone / Expired: the last version is compacted, list again. */
  | { kind: 'expired'; healthy: boolean; error: SlicekeeperError }
  /** Anything else: resume from the last version after a backoff. */
  | { kind: 'failed'; healthy: boolean; error: SlicekeeperError }
  /** We ended it (close or relist). */
  | { kind: 'stopped' };

interface Waiter<R> {
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resourceVersionOf(object: unknown): string | undefined {
  if (!isRecord(object) || !isRecord(object.metadata)) return undefined;
  const { resourceVersion } = object.metadata;
  return typeof resourceVersion === 'string' && resourceVersion !== ''
    ? resourceVersion
    : undefined;
}

/** A watch's resourceVersion is ahead of this API server (HA servers): list again, as client-go. */
function isTooLargeResourceVersion(status: Record<string, unknown>): boolean {
  const details = isRecord(status.details) ? status.details : {};
  const causes = Array.isArray(details.causes) ? (details.causes as unknown[]) : [];
  return causes.some((cause) => isRecord(cause) && cause.reason === 'ResourceVersionTooLarge');
}

/** A short excerpt of an unreadable line, for a log. */
function excerpt(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Keeps a local copy of one collection in step with the API server, as client-go's Reflector
 * does: it lists (page by page with `limit`/`continue`), then watches from the list's
 * resourceVersion with `allowWatchBookmarks=true`, tracking the last resourceVersion seen
 * (bookmarks included). A watch that ends (the server's `timeoutSeconds`, a restart, a dropped
 * connection, an error) is resumed from that resourceVersion, so nothing is listed again and
 * nothing is lost; failures are retried with jittered, capped backoff. Only 410 Gone — as the
 * HTTP status or as an ERROR event with code 410, both meaning the version was compacted — and
 * a version ahead of the server lead to a new list.
 *
 * Written on {@link KubeTransport} rather than @kubernetes/client-node's `makeInformer` /
 * `ListWatch` (read in 1.4.0), which falls short on exactly this: its list is one call of the
 * caller's function (no `limit`/`continue` of its own); its watch never asks for bookmarks (it
 * only records one if sent) nor sets `timeoutSeconds`; a watch that fails with anything but
 * 410 is not retried at all (it reports the error and stops until the caller restarts it,
 * with no backoff); unreadable events are dropped silently; and its `Watch` cannot send an
 * Accept header (Nodes as metadata only) and builds a new agent per request, outside our
 * connection pool. What it does get right — resuming a cleanly ended watch from the last
 * resourceVersion, and relisting after a 410 (as the status of the request, or as an ERROR
 * event followed by the end of the stream) — is kept here.
 */
export class Reflector<T, R> {
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private readonly listPageSize: number;
  private readonly requestTimeoutMs: number;
  private readonly minWatchTimeoutMs: number;
  private lastResourceVersion: string | undefined;
  private listed = false;
  private relistWanted = false;
  private closed = false;
  private running: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private readonly syncWaiters: Waiter<undefined>[] = [];
  private relistWaiters: Waiter<R>[] = [];
  /** Ends the current watch. */
  private abortWatch: AbortController | undefined;
  /** Ends the current list request. */
  private abortRequest: AbortController | undefined;
  /** Ends the current wait before a retry. */
  private wakeUp: (() => void) | undefined;

  /** The collection listed and watched (see {@link usePath}). */
  private path: string;

  constructor(private readonly options: ReflectorOptions<T, R>) {
    this.path = options.path;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.backoff = new Backoff({ ...DEFAULT_BACKOFF, ...options.backoff, random: this.random });
    this.listPageSize = options.listPageSize ?? 500;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    this.minWatchTimeoutMs = options.minWatchTimeoutMs ?? 300_000;
  }

  /** Whether the first list is in. */
  get synced(): boolean {
    return this.listed;
  }

  /** The last resourceVersion seen: of the last list, event or bookmark. */
  get resourceVersion(): string | undefined {
    return this.lastResourceVersion;
  }

  /**
   * Starts listing and watching; resolves once the first list is applied. A failing list is
   * retried with backoff meanwhile; rejects only if closed first.
   */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`${this.options.kind}: closed`));
    const synced = this.listed
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          this.syncWaiters.push({
            resolve: () => {
              resolve();
            },
            reject,
          });
        });
    this.running ??= this.run();
    return synced;
  }

  /**
   * Ends the current watch and lists again from scratch (anti-entropy); resolves with what the
   * new list's `onReplace` returned, or rejects if that list fails (the watch then resumes from
   * where it was) or the reflector was not started.
   */
  /**
   * Lists and watches `path` from now on (the same objects served in another API version):
   * lists it from scratch, as {@link relist} does, and resolves the same way.
   */
  usePath(path: string): Promise<R> {
    this.path = path;
    return this.relist();
  }

  relist(): Promise<R> {
    if (this.closed) return Promise.reject(new Error(`${this.options.kind}: closed`));
    if (this.running === undefined) {
      return Promise.reject(new Error(`${this.options.kind}: not started`));
    }
    const done = new Promise<R>((resolve, reject) => {
      this.relistWaiters.push({ resolve, reject });
    });
    this.relistWanted = true;
    // A list under way finishes; it may have started before this call, so another follows.
    this.abortWatch?.abort();
    this.wakeUp?.();
    return done;
  }

  /** Stops watching; idempotent. Pending start() and relist() calls reject. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.abortWatch?.abort();
      this.abortRequest?.abort();
      this.wakeUp?.();
      await this.running;
      const error = new Error(`${this.options.kind}: closed`);
      for (const waiter of this.syncWaiters.splice(0)) waiter.reject(error);
      for (const waiter of this.relistWaiters.splice(0)) waiter.reject(error);
    })();
    return this.closing;
  }

  /** A method, so that a check after an await is not narrowed away. */
  private isClosed(): boolean {
    return this.closed;
  }

  private async run(): Promise<void> {
    let delayMs: number | undefined;
    while (!this.isClosed()) {
      if (delayMs !== undefined) await this.wait(delayMs);
      delayMs = undefined;
      if (this.isClosed()) break;
      if (this.lastResourceVersion === undefined || this.relistWanted) {
        try {
          await this.list();
        } catch (error) {
          if (this.isClosed()) break;
          delayMs = this.backoff.next();
          this.options.logger.warn(
            {
              resource: this.options.resource,
              attempt: this.backoff.attempts,
              delayMs,
              err: errorMessage(error),
            },
            'list failed',
          );
          continue;
        }
      }
      const outcome = await this.watch();
      if (outcome.kind === 'stopped') continue;
      if (outcome.healthy) this.backoff.reset();
      switch (outcome.kind) {
        case 'ended':
          delayMs = outcome.healthy ? 0 : this.backoff.next();
          this.options.logger.debug(
            { resource: this.options.resource, resourceVersion: this.lastResourceVersion, delayMs },
            'watch ended, resuming',
          );
          break;
        case 'expired':
          // The next round lists: this version is gone from the server's history.
          this.lastResourceVersion = undefined;
          delayMs = outcome.healthy ? 0 : this.backoff.next();
          this.options.logger.info(
            { resource: this.options.resource, delayMs, err: outcome.error.message },
            'watch expired, listing again',
          );
          break;
        case 'failed':
          delayMs = this.backoff.next();
          this.options.logger.warn(
            {
              resource: this.options.resource,
              resourceVersion: this.lastResourceVersion,
              attempt: this.backoff.attempts,
              delayMs,
              err: outcome.error.message,
            },
            'watch failed, resuming',
          );
          break;
      }
    }
  }

  /** Waits `ms` on the clock, or until close() or relist() wakes us. */
  private wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: TimerHandle | undefined = undefined;
      const wake = () => {
        if (timer !== undefined) this.clock.clearTimer(timer);
        this.wakeUp = undefined;
        resolve();
      };
      this.wakeUp = wake;
      timer = this.clock.setTimer(wake, ms);
    });
  }

  /** Lists the whole collection and replaces the state with it. */
  private async list(): Promise<void> {
    const { kind, resource } = this.options;
    this.relistWanted = false;
    const waiters = this.relistWaiters;
    this.relistWaiters = [];
    let items: T[] = [];
    let resourceVersion: string | undefined;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          ({ items, resourceVersion } = await this.listPages());
          break;
        } catch (error) {
          // A continue token that expired mid-list: list from the start once (client-go's pager).
          const expired = error instanceof SlicekeeperError && error.code === 'expired';
          if (attempt >= 2 || !expired || this.isClosed()) throw error;
        }
      }
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      throw error;
    }
    const initial = !this.listed;
    this.lastResourceVersion = resourceVersion;
    let result: R;
    try {
      result = this.options.onReplace(items, resourceVersion, initial);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
      throw error;
    }
    this.options.logger.debug(
      { resource, resourceVersion, objects: items.length },
      initial ? `listed ${kind}` : `listed ${kind} again`,
    );
    this.listed = true;
    for (const waiter of this.syncWaiters.splice(0)) waiter.resolve(undefined);
    for (const waiter of waiters) waiter.resolve(result);
  }

  private async listPages(): Promise<{ items: T[]; resourceVersion: string }> {
    const { kind } = this.options;
    const context = `list ${kind}`;
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const body = await this.request('list', context, {
        method: 'GET',
        path: withQuery(this.path, {
          labelSelector: this.options.labelSelector,
          limit: this.listPageSize,
          continue: token,
        }),
        accept: this.options.listAccept ?? 'application/json',
      });
      let page;
      try {
        page = toListPage(parseJson(body), `${kind} list`);
      } catch (error) {
        throw classifyKubeError(error, context);
      }
      for (const item of page.items) {
        const object = this.decode(item, 'list item');
        if (object !== undefined) items.push(object);
      }
      token = page.continueToken;
      resourceVersion = page.resourceVersion ?? resourceVersion;
    } while (token !== undefined);
    if (resourceVersion === undefined) {
      throw classifyKubeError(
        new Error('the API server answered a list without a resourceVersion'),
        context,
      );
    }
    return { items, resourceVersion };
  }

  /** One request with our timeout, reported to onRequest; failures are classified. */
  private async request(
    verb: string,
    context: string,
    request: Omit<KubeRequest, 'signal'>,
  ): Promise<string> {
    const abort = new AbortController();
    this.abortRequest = abort;
    const deadline = { passed: false };
    const timer = this.clock.setTimer(() => {
      deadline.passed = true;
      abort.abort();
    }, this.requestTimeoutMs);
    try {
      const response = await this.options.transport.request({ ...request, signal: abort.signal });
      this.options.onRequest?.(verb, this.options.resource, response.status);
      return response.body;
    } catch (error) {
      this.options.onRequest?.(verb, this.options.resource, responseStatusOf(error) ?? 'error');
      const cause = deadline.passed
        ? Object.assign(new Error(`no complete response within ${this.requestTimeoutMs} ms`), {
            name: 'TimeoutError',
            cause: error,
          })
        : error;
      throw classifyKubeError(cause, context);
    } finally {
      this.clock.clearTimer(timer);
      if (this.abortRequest === abort) this.abortRequest = undefined;
    }
  }

  /** Watches from the last resourceVersion until the watch ends; never throws. */
  private async watch(): Promise<WatchOutcome> {
    const { kind, resource } = this.options;
    const context = `watch ${kind}`;
    const abort = new AbortController();
    this.abortWatch = abort;
    const timeoutSeconds = Math.floor((this.minWatchTimeoutMs / 1000) * (1 + this.random()));
    const deadline = { passed: false };
    const expire = () => {
      deadline.passed = true;
      abort.abort();
    };
    // Until the response starts: the request timeout; then the server's timeout and a grace.
    let timer = this.clock.setTimer(expire, this.requestTimeoutMs);
    const startedAt = this.clock.now();
    let events = 0;
    const healthy = () => events > 0 || this.clock.now() - startedAt >= HEALTHY_WATCH_MS;
    let opened = false;
    try {
      if (this.relistWanted || this.isClosed()) return { kind: 'stopped' };
      const stream = await this.options.transport.stream({
        method: 'GET',
        path: withQuery(this.path, {
          watch: 'true',
          labelSelector: this.options.labelSelector,
          resourceVersion: this.lastResourceVersion,
          allowWatchBookmarks: 'true',
          timeoutSeconds,
        }),
        accept: this.options.watchAccept ?? 'application/json',
        signal: abort.signal,
      });
      opened = true;
      this.options.onRequest?.('watch', resource, stream.status);
      this.clock.clearTimer(timer);
      timer = this.clock.setTimer(expire, timeoutSeconds * 1000 + WATCH_DEADLINE_GRACE_MS);
      for await (const line of stream.lines) {
        const status = this.onLine(line);
        if (status === 'skipped') continue;
        if (status === undefined) {
          events++;
          continue;
        }
        // Leaving the loop ends the response (an ERROR event is the server's last word anyway).
        const code = typeof status.code === 'number' ? status.code : 500;
        const error = classifyKubeError(
          new KubeApiError(code, JSON.stringify(status), {}),
          context,
        );
        if (error.code === 'expired' || isTooLargeResourceVersion(status)) {
          return { kind: 'expired', healthy: healthy(), error };
        }
        return { kind: 'failed', healthy: healthy(), error };
      }
      return { kind: 'ended', healthy: healthy() };
    } catch (error) {
      if (!opened) this.options.onRequest?.('watch', resource, responseStatusOf(error) ?? 'error');
      if (this.isClosed() || (abort.signal.aborted && !deadline.passed)) {
        return { kind: 'stopped' };
      }
      if (deadline.passed && opened) return { kind: 'ended', healthy: healthy() };
      const classified = classifyKubeError(
        deadline.passed
          ? Object.assign(new Error(`no response within ${this.requestTimeoutMs} ms`), {
              name: 'TimeoutError',
            })
          : error,
        context,
      );
      if (classified.code === 'expired') {
        return { kind: 'expired', healthy: healthy(), error: classified };
      }
      return { kind: 'failed', healthy: healthy(), error: classified };
    } finally {
      this.clock.clearTimer(timer);
      if (this.abortWatch === abort) this.abortWatch = undefined;
    }
  }

  /**
   * Applies one watch event. Returns undefined when it was applied (or was a bookmark),
   * 'skipped' when it was not a valid event (logged), and the Status of an ERROR event.
   */
  private onLine(line: string): Record<string, unknown> | 'skipped' | undefined {
    const { resource } = this.options;
    let event: unknown;
    try {
      event = JSON.parse(line) as unknown;
    } catch {
      this.options.logger.warn({ resource, line: excerpt(line) }, 'skipped unreadable watch event');
      return 'skipped';
    }
    if (!isRecord(event) || typeof event.type !== 'string' || !isRecord(event.object)) {
      this.options.logger.warn({ resource, line: excerpt(line) }, 'skipped malformed watch event');
      return 'skipped';
    }
    const { type, object } = event;
    switch (type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        const resourceVersion = resourceVersionOf(object);
        if (resourceVersion === undefined) {
          this.options.logger.warn(
            { resource, event: type, line: excerpt(line) },
            'skipped watch event without resourceVersion',
          );
          return 'skipped';
        }
        // Consumed in order either way: a resumed watch starts after it.
        this.lastResourceVersion = resourceVersion;
        const decoded = this.decode(object, `${type} event`);
        if (decoded === undefined) return 'skipped';
        this.options.onEvent(type, decoded, resourceVersion);
        return undefined;
      }
      case 'BOOKMARK': {
        const resourceVersion = resourceVersionOf(object);
        if (resourceVersion === undefined) return 'skipped';
        this.lastResourceVersion = resourceVersion;
        this.options.onProgress?.(resourceVersion);
        return undefined;
      }
      case 'ERROR':
        return object;
      default:
        this.options.logger.warn({ resource, event: type }, 'skipped watch event of unknown type');
        return 'skipped';
    }
  }

  /** The object, or undefined (logged) when it is not valid. */
  private decode(json: unknown, what: string): T | undefined {
    try {
      return this.options.decode(json);
    } catch (error) {
      this.options.logger.warn(
        { resource: this.options.resource, err: errorMessage(error) },
        `skipped invalid ${what}`,
      );
      return undefined;
    }
  }
}
