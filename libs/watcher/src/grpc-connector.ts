import { status as grpcStatus } from '@grpc/grpc-js';
import { KUBELET_130_PLUGIN_VERSION } from '@slicekeeper/contracts';
import type { SyncStatus } from '@slicekeeper/contracts';
import { TerminalError, errorMessage, isTerminal, withContext } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';
import {
  classifyGrpcStatus,
  grpcTarget,
  kubeletDra,
  mapDriverResources,
  mapNodeResources,
  parseEndpoint,
  publishStatusRequest,
  publisher,
} from '@slicekeeper/proto';
import type { InventoryMapping } from '@slicekeeper/proto';
import type { Clock } from '@slicekeeper/time';
import { GrpcCall } from './grpc-http2';
import type { GrpcCallListener } from './grpc-http2';
import { GrpcSessionPool } from './grpc-session';
import type { GrpcSession } from './grpc-session';
import type { GrpcCallStatus, MessageRefusal } from './grpc-status';
import type {
  InventoryStream,
  InventoryStreamHandlers,
  NotifyResult,
  PublisherConnector,
  WatchRequest,
} from './publisher-connector';
/**
 * The endpoint policy as the connector uses it: `EndpointPolicy` of @slicekeeper/admission,
 * which the registration API checks registrations with.
 */
export interface DialPolicy {
  /**
   * Checks a registered endpoint as it is now (resolving its name, following its symlinks) and
   * returns the gRPC target to dial; rejects with a terminal error when the policy refuses it.
   */
  admit(endpoint: string): Promise<{ readonly target: string }>;
}

export interface GrpcConnectorOptions {
  /**
   * Largest inventory message accepted, bytes. A larger one is reported as `rejected` (the
   * plugin's bug), and gRPC ends the call. @defaultValue 16 MiB
   */
  maxMessageBytes?: number;
  /**
   * Checked before every dial, reconnects included, on what is dialled: a name is resolved
   * again and its checked address dialled, a socket path is followed to its real path, so a
   * registration that passed once cannot be re-pointed (DNS rebinding, a swapped symlink).
   * Without it endpoints are dialled as registered, unchecked: for tests only.
   */
  policy?: DialPolicy;
  /** How long a `NotifyPublishStatus` call may take, ms. @defaultValue 5000 */
  notifyTimeoutMs?: number;
  /**
   * Time from a keepalive ping's answer to the next ping on a connection, ms; 0 sends none. A
   * connection whose ping goes unanswered for `keepaliveTimeoutMs` is dropped and its streams
   * fail UNAVAILABLE, as for any stream error. Below 5 minutes, stock gRPC servers close the
   * connection of an idle stream (GOAWAY "too_many_pings"). @defaultValue 300000
   */
  keepaliveTimeMs?: number;
  /** How long a keepalive ping may go unanswered, ms. @defaultValue 20000 */
  keepaliveTimeoutMs?: number;
  /**
   * How long a dial may take to become an HTTP/2 connection, ms; the stream then fails
   * UNAVAILABLE ("connect timeout") and backs off. @defaultValue 20000
   */
  connectTimeoutMs?: number;
  /** Times the connect and keepalive timeouts. @defaultValue the system clock */
  clock?: Clock;
}

/**
 * Opens `ResourcePublisher.WatchResources`, or kubelet 1.30's
 * `v1alpha3.Node/NodeListAndWatchResources` for a plugin registered with
 * `KUBELET_130_PLUGIN_VERSION` (its named resources mapped by `mapNodeResources`; it has no
 * feedback RPC, so `notify` answers `unimplemented` without a call).
 *
 * The calls are made with the small gRPC client of `./grpc-http2` on `node:http2` rather than
 * with @grpc/grpc-js, whose channel stack costs 60–76 KiB of RSS per stream: a watcher holding
 * 1,000 streams settles at 21–37 KiB RSS and 11–12 KiB heap used per stream with this client,
 * 64.5 KiB and 37.7 KiB with grpc-js (`BENCH_ONLY=watcher-memory npm run bench`, 2026-11-24; the
 * README has the figures). A call ends with a typed status, classified by `classifyGrpcStatus`;
 * a message the client refused is reported as `rejected` from the status's `refused`, never
 * from its text.
 *
 * Streams to the same dialled target share one HTTP/2 session (one connection), as a
 * cluster-scoped plugin serves many keys on one endpoint; see {@link GrpcSessionPool}.
 */
export function createGrpcConnector(options: GrpcConnectorOptions = {}): PublisherConnector {
  const settings: ConnectorSettings = {
    pool: new GrpcSessionPool({
      session: SESSION_OPTIONS,
      clock: options.clock,
      keepaliveTimeMs: options.keepaliveTimeMs,
      keepaliveTimeoutMs: options.keepaliveTimeoutMs,
      connectTimeoutMs: options.connectTimeoutMs,
    }),
    maxMessageBytes: options.maxMessageBytes ?? 16 * 1024 * 1024,
    policy: options.policy,
    notifyTimeoutMs: options.notifyTimeoutMs ?? 5000,
  };
  return (request, handlers) => new GrpcInventoryStream({ settings, request, handlers });
}

/**
 * HTTP/2 settings of every connection: no server push, and the default 64 KiB stream window,
 * as grpc-js used (flow control still admits 16 MiB messages: the window is reopened as they
 * are read).
 */
const SESSION_OPTIONS = { settings: { enablePush: false } } as const;

interface ConnectorSettings {
  readonly pool: GrpcSessionPool;
  readonly maxMessageBytes: number;
  readonly policy: DialPolicy | undefined;
  readonly notifyTimeoutMs: number;
}

/** An inventory RPC: where it is served, its request, and how its messages become inventories. */
interface InventoryRpc {
  /** The method name, for error context. */
  readonly name: string;
  readonly path: string;
  request(nodeName: string): Uint8Array;
  /** The message as an inventory, or why it does not decode. */
  read(bytes: Buffer, nodeName: string): InventoryMapping | { kind: 'undecodable'; reason: string };
}

function inventoryRpc<M>(
  name: string,
  method: {
    readonly path: string;
    readonly responseDeserialize: (value: Buffer) => M;
  },
  request: (nodeName: string) => Uint8Array,
  map: (message: M, nodeName: string) => InventoryMapping,
): InventoryRpc {
  return {
    name,
    path: method.path,
    request,
    read(bytes, nodeName) {
      let message: M;
      try {
        message = method.responseDeserialize(bytes);
      } catch (error) {
        return { kind: 'undecodable', reason: errorMessage(error) };
      }
      return map(message, nodeName);
    },
  };
}

const WATCH_RESOURCES = inventoryRpc(
  'WatchResources',
  publisher.ResourcePublisherService.watchResources,
  (nodeName) => publisher.ResourcePublisherService.watchResources.requestSerialize({ nodeName }),
  (message, nodeName) => mapDriverResources(message, { nodeName }),
);

const NODE_LIST_AND_WATCH_RESOURCES = inventoryRpc(
  'NodeListAndWatchResources',
  kubeletDra.NodeService.nodeListAndWatchResources,
  () => kubeletDra.NodeService.nodeListAndWatchResources.requestSerialize({}),
  (message, nodeName) => mapNodeResources(message, { nodeName }),
);

const NOTIFY_PUBLISH_STATUS = publisher.ResourcePublisherService.notifyPublishStatus;

/**
 * The fully-qualified gRPC method a plugin registered with `version` streams its inventory on
 * (`slicekeeper.v1.ResourcePublisher/WatchResources`, or kubelet 1.30's), as OpenTelemetry's
 * `rpc.method` names it.
 */
export function inventoryMethod(version: string | undefined): string {
  const rpc =
    version === KUBELET_130_PLUGIN_VERSION ? NODE_LIST_AND_WATCH_RESOURCES : WATCH_RESOURCES;
  return rpc.path.slice(1);
}

/**
 * One stream of {@link createGrpcConnector}. A class rather than closures: a watcher holds one
 * per plugin, and methods are shared where closures were made for every stream.
 */
class GrpcInventoryStream implements InventoryStream, GrpcCallListener {
  private readonly settings: ConnectorSettings;
  private readonly request: WatchRequest;
  private readonly handlers: InventoryStreamHandlers;
  private readonly rpc: InventoryRpc;
  private done = false;
  private session: GrpcSession | undefined;
  private call: GrpcCall | undefined;

  constructor({
    settings,
    request,
    handlers,
  }: {
    settings: ConnectorSettings;
    request: WatchRequest;
    handlers: InventoryStreamHandlers;
  }) {
    this.settings = settings;
    this.request = request;
    this.handlers = handlers;
    this.rpc =
      request.version === KUBELET_130_PLUGIN_VERSION
        ? NODE_LIST_AND_WATCH_RESOURCES
        : WATCH_RESOURCES;
    const { endpoint } = request;
    if (settings.policy !== undefined) {
      settings.policy.admit(endpoint).then(
        ({ target }) => {
          if (!this.done) this.open(target);
        },
        (error: unknown) => {
          this.fail(dialRefused(error));
        },
      );
      return;
    }
    const parsed = parseEndpoint(endpoint);
    if (typeof parsed !== 'string') {
      this.open(grpcTarget(parsed));
      return;
    }
    setImmediate(() => {
      this.fail(
        new TerminalError(`endpoint "${endpoint}": ${parsed}`, { code: 'invalid-endpoint' }),
      );
    });
  }

  cancel(): void {
    if (!this.finish()) return;
    this.call?.cancel();
    this.releaseSession(false);
  }

  // The optional feedback RPC goes over the stream's connection, while the stream is open.
  notify(nodeName: string, status: SyncStatus): Promise<NotifyResult> {
    return new Promise<NotifyResult>((resolve) => {
      if (this.rpc !== WATCH_RESOURCES) {
        resolve('unimplemented');
        return;
      }
      if (this.session === undefined || this.done) {
        resolve('failed');
        return;
      }
      new GrpcCall({
        session: this.session,
        path: NOTIFY_PUBLISH_STATUS.path,
        request: NOTIFY_PUBLISH_STATUS.requestSerialize(publishStatusRequest(nodeName, status)),
        maxMessageBytes: this.settings.maxMessageBytes,
        timeoutMs: this.settings.notifyTimeoutMs,
        listener: {
          message: () => undefined,
          status: ({ code }) => {
            if (code === grpcStatus.OK) resolve('delivered');
            else resolve(code === grpcStatus.UNIMPLEMENTED ? 'unimplemented' : 'failed');
          },
        },
      });
    });
  }

  /** A message of the call (GrpcCallListener). */
  message(bytes: Buffer): void {
    if (this.done) return;
    const mapping = this.rpc.read(bytes, this.request.nodeName);
    if (mapping.kind === 'inventory') {
      this.handlers.message(mapping.inventory, mapping.traceparent);
    } else if (mapping.kind === 'rejected') {
      const { problem, traceparent } = mapping;
      this.handlers.rejected(
        traceparent === undefined
          ? { problem, callEnded: false }
          : { problem, callEnded: false, traceparent },
      );
    } else {
      // As grpc-js: a message the client cannot deserialize ends the call. The plugin did
      // answer: that is its bug, not an outage.
      this.call?.cancel();
      if (!this.finish()) return;
      this.releaseSession(true);
      this.handlers.rejected({
        problem: `message does not decode: ${mapping.reason}`,
        callEnded: true,
      });
    }
  }

  /** The end of the call (GrpcCallListener). */
  status(status: GrpcCallStatus): void {
    if (!this.finish()) return;
    if (status.code === grpcStatus.OK) {
      this.releaseSession(false);
      this.handlers.end();
      return;
    }
    this.releaseSession(true);
    // A message the client refused ends the call, but the plugin did answer: that is its bug,
    // not an outage.
    if (status.refused === undefined) {
      this.handlers.error(classifyGrpcStatus(status, `${this.rpc.name} ${this.request.endpoint}`));
    } else {
      this.handlers.rejected({ problem: refusalProblem(status.refused), callEnded: true });
    }
  }

  private open(target: string): void {
    const session = this.settings.pool.acquire(target);
    this.session = session;
    this.call = new GrpcCall({
      session,
      path: this.rpc.path,
      request: this.rpc.request(this.request.nodeName),
      maxMessageBytes: this.settings.maxMessageBytes,
      listener: this,
    });
  }

  /** Marks the stream over; false when it already was. */
  private finish(): boolean {
    if (this.done) return false;
    this.done = true;
    return true;
  }

  private fail(error: SlicekeeperError): void {
    if (this.finish()) this.handlers.error(error);
  }

  private releaseSession(failed: boolean): void {
    if (this.session !== undefined) this.settings.pool.release(this.session, failed);
    this.call = undefined;
  }
}

/** A refused message as its driver's author reads it. */
function refusalProblem(refusal: MessageRefusal): string {
  switch (refusal.kind) {
    case 'too-large':
      return `message of ${refusal.bytes} bytes exceeds the limit of ${refusal.limit} bytes`;
    case 'too-large-decompressed':
      return `message exceeds the limit of ${refusal.limit} bytes once decompressed`;
  }
}

/**
 * A dial the policy would not allow. A refusal (terminal: forbidden or malformed) says so
 * plainly, as it will not pass on a retry; the stream still backs off, as the registration
 * may be replaced. A failure to check (a name that does not resolve now) is transient.
 */
function dialRefused(error: unknown): SlicekeeperError {
  return isTerminal(error)
    ? withContext('endpoint policy refused the dial', error)
    : withContext('dial', error);
}
