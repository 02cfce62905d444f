import { Metadata, connectivityState, credentials, status } from '@grpc/grpc-js';
import type { ChannelInterface, ServiceError } from '@grpc/grpc-js';
import { classifyGrpcError, grpcStatusCode, registration } from '@slicekeeper/proto';
import { admissionError } from './admission-error';
import type { AdmittedEndpoint } from './endpoint-policy';

/** What a plugin says about itself in `Registration.GetInfo` (domain copy of the wire type). */
export interface PluginInfo {
  type: string;
  name: string;
  /** Where the plugin serves its other services, when not on the probed endpoint; may be empty. */
  endpoint: string;
  supportedVersions: string[];
}

/** The outcome the plugin is told in `NotifyRegistrationStatus`. */
export interface RegistrationOutcome {
  registered: boolean;
  /** Why the registration failed; empty when it succeeded. */
  error?: string;
}

/** One connection to a plugin, for the duration of its registration. */
export interface PluginSession {
  /**
   * Calls `Registration.GetInfo`. Resolves to undefined when the plugin does not serve the
   * registration service (Unimplemented); throws an admission error (`plugin-timeout`,
   * `plugin-unreachable`, `plugin-error`) otherwise.
   */
  getInfo(): Promise<PluginInfo | undefined>;
  /** Calls `Registration.NotifyRegistrationStatus`; Unimplemented counts as delivered. */
  notify(outcome: RegistrationOutcome): Promise<void>;
  /** Closes the connection. Idempotent. */
  close(): void;
}

/** Dials plugins. The registration API's tests inject a spy to prove nothing was dialled. */
export interface PluginProber {
  /**
   * Dials the endpoint's checked target; throws `plugin-unreachable` with the reason when the
   * connection fails, or when it does not succeed within the dial timeout.
   */
  connect(endpoint: AdmittedEndpoint): Promise<PluginSession>;
}

export interface GrpcPluginProberOptions {
  /**
   * How long to wait for a connection that is neither made nor refused, ms (kubelet: 10 s). A
   * refused connection or a peer that is not HTTP/2 fails at once. @defaultValue 10000
   */
  dialTimeoutMs?: number;
  /** Deadline of each call, ms (kubelet: 1 s for GetInfo). @defaultValue 1000 */
  callTimeoutMs?: number;
}

/**
 * Largest message accepted from a plugin, bytes. A PluginInfo is a few hundred bytes; the bound
 * keeps a hostile plugin from making the API buffer megabytes.
 */
const MAX_MESSAGE_BYTES = 64 * 1024;

/** Probes plugins over gRPC the way kubelet's plugin watcher does. */
export class GrpcPluginProber implements PluginProber {
  private readonly dialTimeoutMs: number;
  private readonly callTimeoutMs: number;

  constructor(options: GrpcPluginProberOptions = {}) {
    this.dialTimeoutMs = options.dialTimeoutMs ?? 10_000;
    this.callTimeoutMs = options.callTimeoutMs ?? 1000;
  }

  async connect(endpoint: AdmittedEndpoint): Promise<PluginSession> {
    const client = new registration.RegistrationClient(
      endpoint.target,
      credentials.createInsecure(),
      {
        'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
        'grpc.enable_retries': 0,
        'grpc.service_config_disable_resolution': 1,
        // One probe, one connection: never share a subchannel with another probe.
        'grpc.use_local_subchannel_pool': 1,
      },
    );
    const outcome = await firstConnection(client.getChannel(), Date.now() + this.dialTimeoutMs);
    if (outcome !== 'ready') {
      const reason =
        outcome === 'failed'
          ? await dialFailure(client, this.callTimeoutMs)
          : `not reachable within ${this.dialTimeoutMs}ms`;
      client.close();
      throw admissionError('plugin-unreachable', `dial ${endpoint.endpoint}: ${reason}`);
    }
    return new GrpcPluginSession(client, endpoint.endpoint, this.callTimeoutMs);
  }
}

class GrpcPluginSession implements PluginSession {
  private closed = false;

  constructor(
    private readonly client: registration.RegistrationClient,
    private readonly endpoint: string,
    private readonly callTimeoutMs: number,
  ) {}

  async getInfo(): Promise<PluginInfo | undefined> {
    try {
      const info = await new Promise<registration.PluginInfo>((resolve, reject) => {
        this.client.getInfo({}, new Metadata(), this.callOptions(), (error, response) => {
          settle(error, response, resolve, reject);
        });
      });
      return {
        type: info.type,
        name: info.name,
        endpoint: info.endpoint,
        supportedVersions: [...info.supportedVersions],
      };
    } catch (error) {
      const code = grpcStatusCode(error);
      if (code === status.UNIMPLEMENTED) return undefined;
      const context = `GetInfo ${this.endpoint}`;
      if (code === status.DEADLINE_EXCEEDED) {
        throw admissionError(
          'plugin-timeout',
          `${context}: no answer within ${this.callTimeoutMs}ms`,
          error,
        );
      }
      const classified = classifyGrpcError(error, context);
      throw admissionError(
        code === status.UNAVAILABLE ? 'plugin-unreachable' : 'plugin-error',
        classified.message,
        error,
      );
    }
  }

  async notify(outcome: RegistrationOutcome): Promise<void> {
    try {
      await new Promise<unknown>((resolve, reject) => {
        this.client.notifyRegistrationStatus(
          { pluginRegistered: outcome.registered, error: outcome.error ?? '' },
          new Metadata(),
          this.callOptions(),
          (error, response) => {
            settle(error, response, resolve, reject);
          },
        );
      });
    } catch (error) {
      if (grpcStatusCode(error) === status.UNIMPLEMENTED) return;
      throw classifyGrpcError(error, `NotifyRegistrationStatus ${this.endpoint}`);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }

  private callOptions() {
    return { deadline: Date.now() + this.callTimeoutMs };
  }
}

/**
 * Waits for the channel's first connection attempt to succeed or fail. grpc-js would retry a
 * channel in TRANSIENT_FAILURE until the deadline, but a refused connection or a peer that is
 * not HTTP/2 will not come good within a registration request: it fails now, with its reason.
 * Only an attempt still in progress at the deadline is a timeout.
 */
function firstConnection(
  channel: ChannelInterface,
  deadline: number,
): Promise<'ready' | 'failed' | 'timeout'> {
  return new Promise((resolve) => {
    const check = (): void => {
      // `true`: an idle channel starts connecting.
      const state = channel.getConnectivityState(true);
      if (state === connectivityState.READY) {
        resolve('ready');
      } else if (
        state === connectivityState.TRANSIENT_FAILURE ||
        state === connectivityState.SHUTDOWN
      ) {
        resolve('failed');
      } else {
        channel.watchConnectivityState(state, deadline, (error) => {
          if (error === undefined) check();
          else resolve('timeout');
        });
      }
    };
    check();
  });
}

/**
 * grpc-js's account of a failed connection (as of @grpc/grpc-js 1.14): `No connection
 * established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1234. Resolution note: `, the
 * last error of a failed HTTP/2 handshake followed by a timestamp.
 */
const LAST_ERROR =
  /Last error: (?:Error: )?(.*?)(?: \(\d{4}-\d\d-\d\dT[\d:.]+Z\))?\. Resolution note:/s;

/**
 * Why the channel's connection attempt failed. grpc-js does not expose it, but a channel in
 * TRANSIENT_FAILURE fails a call at once (UNAVAILABLE) with it in the details, so one GetInfo
 * that cannot leave the client asks. A connect() error (`connect ECONNREFUSED …`, `connect
 * ENOENT …`) is reported as it is; a failure after the connection was made means the peer does
 * not speak HTTP/2.
 */
async function dialFailure(
  client: registration.RegistrationClient,
  timeoutMs: number,
): Promise<string> {
  const error = await new Promise<ServiceError | null>((resolve) => {
    client.getInfo({}, new Metadata(), { deadline: Date.now() + timeoutMs }, (failure) => {
      resolve(failure);
    });
  });
  const details = error?.details ?? '';
  const reason = LAST_ERROR.exec(details)?.[1];
  if (reason === undefined) return details === '' ? 'the connection failed' : details;
  return /^connect E[A-Z]+\b/.test(reason)
    ? reason
    : `not a gRPC server (the HTTP/2 handshake failed: ${reason})`;
}

function settle<T>(
  error: ServiceError | null,
  response: T,
  resolve: (value: T) => void,
  reject: (reason: unknown) => void,
): void {
  if (error === null) resolve(response);
  else reject(error);
}
