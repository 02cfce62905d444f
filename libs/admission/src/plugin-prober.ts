import { Metadata, credentials, status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
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
  /** Dials the endpoint; throws `plugin-unreachable` when it cannot within the dial timeout. */
  connect(endpoint: AdmittedEndpoint): Promise<PluginSession>;
}

export interface GrpcPluginProberOptions {
  /** How long to wait for the connection, ms (kubelet: 10 s). @defaultValue 10000 */
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
    try {
      await new Promise<void>((resolve, reject) => {
        client.waitForReady(Date.now() + this.dialTimeoutMs, (error) => {
          if (error === undefined) resolve();
          else reject(error);
        });
      });
    } catch (error) {
      client.close();
      throw admissionError(
        'plugin-unreachable',
        `dial ${endpoint.endpoint}: not reachable within ${this.dialTimeoutMs}ms`,
        error,
      );
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

function settle<T>(
  error: ServiceError | null,
  response: T,
  resolve: (value: T) => void,
  reject: (reason: unknown) => void,
): void {
  if (error === null) resolve(response);
  else reject(error);
}
