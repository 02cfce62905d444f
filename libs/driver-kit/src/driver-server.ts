import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import { isSpanContextValid, isValidSpanId, isValidTraceId, trace } from '@opentelemetry/api';
import {
  DRA_PLUGIN_TYPE,
  SUPPORTED_PUBLISHER_VERSIONS,
  TRACEPARENT_PATTERN,
  formatTraceparent,
  TRACEPARENT_RULE,
} from '@slicekeeper/contracts';
import type { DriverInventory } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import {
  fromDriverInventory,
  parseEndpoint,
  publishFeedback,
  publisher,
  registration,
} from '@slicekeeper/proto';
import type { PluginEndpoint, PublishFeedback } from '@slicekeeper/proto';

export interface DriverServerOptions {
  /** The DRA driver name GetInfo reports, e.g. `gpu.example.com`. */
  driverName: string;
  /**
   * Where to listen: `unix:///absolute/path.sock` (a stale socket file is replaced) or
   * `host:port`, port 0 picking a free one. Exactly one of `endpoint` and
   * `registrationDirectory`.
   */
  endpoint?: string;
  /**
   * Discovery mode: serve on `<registrationDirectory>/<driverName>.sock` (the directory is
   * created when missing) and nothing else. The node-mode plugin-watcher, or kubelet when this
   * is its `plugins_registry`, finds the socket, asks GetInfo, registers the driver with its own
   * identity and tells it the outcome (`registrationStatus`); when the socket goes (`close`),
   * the plugin is deregistered. The driver needs no token and makes no registration call.
   */
  registrationDirectory?: string;
  /** ResourcePublisher versions GetInfo reports. @defaultValue `['v1.ResourcePublisher']` */
  supportedVersions?: readonly string[];
  /**
   * The inventory to serve from the start; streams wait for `publish` when unset. A device's
   * `health` is sent as the driver reports it (slicekeeper taints an unhealthy device). Every
   * field of the domain model goes on the wire as given, `passThrough` objects as JSON text;
   * slicekeeper, not the server, judges whether the fields are valid. It carries the
   * `traceparent` of the span active when the server is constructed, as `publish` does.
   */
  inventory?: DriverInventory;
  /** Logs serving, the registration status and every publish feedback (at info). */
  logger?: Logger;
  /**
   * Send the inventory once per stream, then end it (EOF), as drivers that report once do.
   * @defaultValue false
   */
  reportOnce?: boolean;
  /**
   * Called with what slicekeeper made of the inventory, each time it calls NotifyPublishStatus
   * (after each change of the outcome). The call is answered whatever the callback does.
   */
  onFeedback?: (feedback: PublishFeedback) => void;
  /**
   * Serve NotifyPublishStatus. False leaves it out, so that slicekeeper gets Unimplemented, as
   * from a driver written before the RPC existed (and does not ask again on that connection).
   * @defaultValue true
   */
  servePublishStatus?: boolean;
}

/** Where and how `publish` sends an inventory. */
export interface PublishOptions {
  /**
   * The node whose inventory this is (a server can stand in for the plugins of many nodes in
   * tests and benchmarks); every node without its own when unset.
   */
  nodeName?: string;
  /**
   * The W3C `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header) the
   * inventory carries, e.g. `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`: the
   * watcher's receive span becomes a child of that span, so the trace starts at the driver.
   * An empty string sends none. When unset: the OpenTelemetry span active at the `publish`
   * call (`trace.getActiveSpan()`), if its span context is valid; none otherwise.
   */
  traceparent?: string;
}

/**
 * How the publisher misbehaves, for tests: `unimplemented` answers every stream (open and new)
 * with Unimplemented, as a plugin that publishes nothing does.
 */
export type DriverFault = 'none' | 'unimplemented';

interface OpenStream {
  readonly call: ServerWritableStream<publisher.WatchResourcesRequest, publisher.DriverResources>;
  readonly nodeName: string;
}

/**
 * What a DRA driver needs to serve slicekeeper: the kubelet plugin-registration service
 * (`GetInfo`, `NotifyRegistrationStatus`) and `ResourcePublisher` (`WatchResources`,
 * `NotifyPublishStatus`), on one unix socket or TCP port. The driver pushes complete
 * inventories with `publish`; every open stream (and every stream opened later) gets the latest
 * one for its node. What slicekeeper made of them comes back through `onFeedback`.
 *
 * Tracing: each inventory carries the W3C `traceparent` of the driver's OpenTelemetry span
 * active at the `publish` call (or the one given in {@link PublishOptions.traceparent}), so
 * slicekeeper's trace of that change starts at the driver. The server reads it through
 * `@opentelemetry/api` only: a driver that registers no tracer provider sends none and pays
 * nothing. It is taken when `publish` is called and kept with that inventory: a stream that
 * opens (or reopens) later is sent the same traceparent.
 */
export class DriverServer {
  private readonly options: DriverServerOptions;
  private readonly server = new Server();
  private readonly streams = new Set<OpenStream>();
  private readonly byNode = new Map<string, publisher.DriverResources>();
  private fallback: publisher.DriverResources | undefined;
  private fault: DriverFault = 'none';
  private calls = 0;
  private boundEndpoint: string | undefined;
  private lastStatus: registration.RegistrationStatus | undefined;
  private latestFeedback: PublishFeedback | undefined;
  private closing: Promise<void> | undefined;

  private readonly listenEndpoint: string;

  /** Throws when `endpoint` and `registrationDirectory` are both set, or neither. */
  constructor(options: DriverServerOptions) {
    this.options = options;
    this.listenEndpoint = listenEndpointOf(options);
    if (options.inventory !== undefined) {
      this.fallback = fromDriverInventory(options.inventory, activeTraceparent());
    }
    this.server.addService(registration.RegistrationService, {
      getInfo: (
        _call: ServerUnaryCall<registration.InfoRequest, registration.PluginInfo>,
        callback: sendUnaryData<registration.PluginInfo>,
      ) => {
        callback(null, {
          type: DRA_PLUGIN_TYPE,
          name: options.driverName,
          endpoint: '',
          supportedVersions: [...(options.supportedVersions ?? SUPPORTED_PUBLISHER_VERSIONS)],
        });
      },
      notifyRegistrationStatus: (
        call: ServerUnaryCall<
          registration.RegistrationStatus,
          registration.RegistrationStatusResponse
        >,
        callback: sendUnaryData<registration.RegistrationStatusResponse>,
      ) => {
        this.lastStatus = call.request;
        options.logger?.info({ ...call.request }, 'registration status');
        callback(null, {});
      },
    });
    this.server.addService(publisher.ResourcePublisherService, {
      watchResources: (call: OpenStream['call']) => {
        this.onWatch(call);
      },
      // A method left out is answered Unimplemented by grpc-js, as by any gRPC server.
      ...(options.servePublishStatus === false
        ? {}
        : {
            notifyPublishStatus: (
              call: ServerUnaryCall<
                publisher.NotifyPublishStatusRequest,
                publisher.NotifyPublishStatusResponse
              >,
              callback: sendUnaryData<publisher.NotifyPublishStatusResponse>,
            ) => {
              this.onPublishStatus(call.request, callback);
            },
          }),
    });
  }

  /** Listens; resolves with the endpoint to register (`unix:///…` or `host:port`). */
  async start(): Promise<string> {
    const listen = listenAddress(this.listenEndpoint);
    if (this.options.registrationDirectory !== undefined) {
      await mkdir(this.options.registrationDirectory, { recursive: true });
    }
    if (listen.kind === 'unix') await rm(listen.path, { force: true });
    const target =
      listen.kind === 'unix' ? `unix://${listen.path}` : `${listen.host}:${listen.port}`;
    const port = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(target, ServerCredentials.createInsecure(), (error, bound) => {
        if (error === null) resolve(bound);
        else reject(error);
      });
    });
    const host =
      listen.kind === 'tcp' && listen.host.includes(':')
        ? `[${listen.host}]`
        : listen.kind === 'tcp'
          ? listen.host
          : '';
    this.boundEndpoint = listen.kind === 'unix' ? this.listenEndpoint : `${host}:${port}`;
    this.options.logger?.info({ endpoint: this.boundEndpoint }, 'serving');
    return this.boundEndpoint;
  }

  /** The endpoint being served, once started. */
  get endpoint(): string {
    if (this.boundEndpoint === undefined) throw new Error('DriverServer not started');
    return this.boundEndpoint;
  }

  /** Open WatchResources streams. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** WatchResources calls received since start (each connect or reconnect is one). */
  get watchCalls(): number {
    return this.calls;
  }

  /** What the last NotifyRegistrationStatus said. */
  get registrationStatus(): registration.RegistrationStatus | undefined {
    return this.lastStatus;
  }

  /** What the last NotifyPublishStatus said, once slicekeeper has called it. */
  get lastFeedback(): PublishFeedback | undefined {
    return this.latestFeedback;
  }

  /**
   * Replaces the inventory: of one node when `nodeName` is given (a server can stand in for the
   * plugins of many nodes in tests and benchmarks), else of every node without its own. Every
   * affected open stream gets it at once, with the `traceparent` of the span active now (see
   * {@link PublishOptions.traceparent}); a stream opened later gets the same message.
   *
   * @param target The node (as a string, the older form) or {@link PublishOptions}.
   * @throws Error naming `traceparent` and the rule when an explicit one is not a version-00
   *   W3C traceparent; nothing is sent then.
   */
  publish(inventory: DriverInventory, target?: string | PublishOptions): void {
    const options: PublishOptions =
      typeof target === 'string' ? { nodeName: target } : { ...target };
    const { nodeName } = options;
    const message = fromDriverInventory(inventory, traceparentFor(options.traceparent));
    if (nodeName === undefined) this.fallback = message;
    else this.byNode.set(nodeName, message);
    for (const stream of this.streams) {
      if (
        nodeName === undefined ? !this.byNode.has(stream.nodeName) : stream.nodeName === nodeName
      ) {
        this.send(stream, message);
      }
    }
  }

  /** Switches a fault on or off; `unimplemented` also fails the open streams. */
  setFault(fault: DriverFault): void {
    this.fault = fault;
    if (fault === 'unimplemented') {
      for (const stream of [...this.streams]) this.fail(stream, status.UNIMPLEMENTED, 'not served');
    }
  }

  /** Ends every open stream cleanly (EOF), as a driver that reports once does. */
  endStreams(): void {
    for (const stream of [...this.streams]) {
      this.streams.delete(stream);
      stream.call.end();
    }
  }

  /** Fails every open stream with `code` (default UNAVAILABLE), as a crashing driver would. */
  failStreams(code: status = status.UNAVAILABLE, details = 'driver failure'): void {
    for (const stream of [...this.streams]) this.fail(stream, code, details);
  }

  /** Stops serving at once (open streams fail) and removes the socket file. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.streams.clear();
      this.server.forceShutdown();
      const listen = listenAddress(this.listenEndpoint);
      if (listen.kind === 'unix') await rm(listen.path, { force: true });
    })();
    return this.closing;
  }

  private onWatch(call: OpenStream['call']): void {
    const stream: OpenStream = { call, nodeName: call.request.nodeName };
    this.calls++;
    if (this.fault === 'unimplemented') {
      call.emit('error', { code: status.UNIMPLEMENTED, details: 'not served' });
      return;
    }
    this.streams.add(stream);
    call.on('cancelled', () => this.streams.delete(stream));
    call.on('close', () => this.streams.delete(stream));
    const message = this.byNode.get(stream.nodeName) ?? this.fallback;
    if (message !== undefined) this.send(stream, message);
  }

  private onPublishStatus(
    request: publisher.NotifyPublishStatusRequest,
    callback: sendUnaryData<publisher.NotifyPublishStatusResponse>,
  ): void {
    let feedback: PublishFeedback;
    try {
      feedback = publishFeedback(request);
    } catch (error) {
      this.options.logger?.warn({ err: errorMessage(error) }, 'publish feedback refused');
      callback({ code: status.INVALID_ARGUMENT, details: errorMessage(error) });
      return;
    }
    this.latestFeedback = feedback;
    this.options.logger?.info(
      {
        node: feedback.nodeName,
        outcome: feedback.outcome,
        snapshotGeneration: feedback.snapshotGeneration,
        problems: feedback.problems,
        droppedFields: feedback.droppedFields,
        slices: feedback.sliceNames,
        ...(feedback.error === undefined ? {} : { error: feedback.error }),
      },
      'publish feedback',
    );
    try {
      this.options.onFeedback?.(feedback);
    } catch (error) {
      this.options.logger?.error({ err: errorMessage(error) }, 'feedback handler failed');
    }
    callback(null, {});
  }

  private send(stream: OpenStream, message: publisher.DriverResources): void {
    stream.call.write(message);
    if (this.options.reportOnce === true) {
      this.streams.delete(stream);
      stream.call.end();
    }
  }

  private fail(stream: OpenStream, code: status, details: string): void {
    this.streams.delete(stream);
    stream.call.emit('error', { code, details });
  }
}

/**
 * The traceparent an inventory carries: the explicit one, checked, else the active span's.
 * Thrown here, not sent: the watcher ignores an invalid one, so the driver would never learn.
 */
function traceparentFor(explicit: string | undefined): string {
  if (explicit === undefined) return activeTraceparent();
  if (explicit === '' || isTraceparent(explicit)) return explicit;
  throw new Error(`publish: traceparent "${explicit}": ${TRACEPARENT_RULE}`);
}

function isTraceparent(value: string): boolean {
  const match = TRACEPARENT_PATTERN.exec(value);
  return match !== null && isValidTraceId(match[1] ?? '') && isValidSpanId(match[2] ?? '');
}

/**
 * The W3C traceparent of the driver's active OpenTelemetry span; empty when there is none or
 * its context is invalid (no tracer provider registered: the API's no-op span).
 */
function activeTraceparent(): string {
  const context = trace.getActiveSpan()?.spanContext();
  if (context === undefined || !isSpanContextValid(context)) return '';
  return formatTraceparent(context);
}

/**
 * The endpoint a server listens on: its `endpoint`, or its socket in the registration directory
 * (`<driverName>.sock`, kubelet's convention of one socket per driver in `plugins_registry`).
 */
function listenEndpointOf(options: DriverServerOptions): string {
  const { endpoint, registrationDirectory } = options;
  if (endpoint !== undefined && registrationDirectory !== undefined) {
    throw new Error('DriverServer: endpoint and registrationDirectory: set one, not both');
  }
  if (registrationDirectory !== undefined) {
    if (!registrationDirectory.startsWith('/')) {
      throw new Error(
        `DriverServer: registrationDirectory "${registrationDirectory}": must be an absolute path`,
      );
    }
    return `unix://${join(registrationDirectory, `${options.driverName}.sock`)}`;
  }
  if (endpoint === undefined) {
    throw new Error('DriverServer: endpoint or registrationDirectory: one is required');
  }
  return endpoint;
}

/** A plugin endpoint to listen on: as `parseEndpoint` accepts, plus port 0 (any free port). */
function listenAddress(endpoint: string): PluginEndpoint {
  const anyPort = endpoint.endsWith(':0');
  const parsed = parseEndpoint(anyPort ? `${endpoint.slice(0, -2)}:1` : endpoint);
  if (typeof parsed === 'string') throw new Error(`endpoint "${endpoint}": ${parsed}`);
  if (parsed.kind === 'tcp' && anyPort) return { ...parsed, port: 0 };
  return parsed;
}
