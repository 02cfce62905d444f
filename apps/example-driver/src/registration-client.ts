import { pluginPath } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';

export interface RegistrationClientOptions {
  /** Base URL of the registration API, e.g. `http://registration-api:8080`. */
  baseUrl: string;
  /** Bound on each request, ms. @defaultValue 5000 */
  timeoutMs?: number;
  /** Bearer token for the API: a token bound to the driver's node, or an admin token. */
  token?: string;
}

export interface PluginIdentity {
  node: string;
  driver: string;
  /** The endpoint the plugin-watcher dials. */
  endpoint: string;
}

/** A failed registration request; `retryable` when the API may answer later (not up yet, 5xx, 429). */
export class RegistrationError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'RegistrationError';
  }
}

/**
 * The example driver's client of the registration API (`POST /v1/plugins`,
 * `DELETE /v1/plugins/{node}/{driver}?endpoint=`): what kubelet's plugin watcher does when a
 * plugin socket appears or goes.
 */
export class RegistrationClient {
  constructor(private readonly options: RegistrationClientOptions) {}

  /** Registers the plugin; the API probes it with GetInfo before it answers. */
  async register(plugin: PluginIdentity): Promise<void> {
    await this.request('POST', '/v1/plugins', plugin);
  }

  /** Removes the plugin's registration, so that its slices are withdrawn promptly. */
  async deregister(plugin: PluginIdentity): Promise<void> {
    const path = `${pluginPath(plugin)}?endpoint=${encodeURIComponent(plugin.endpoint)}`;
    await this.request('DELETE', path);
  }

  private async request(method: string, path: string, body?: unknown): Promise<void> {
    const url = new URL(path, this.options.baseUrl);
    let response: Response;
    try {
      const headers: Record<string, string> = {};
      if (this.options.token !== undefined) headers.authorization = `Bearer ${this.options.token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      response = await fetch(url, {
        method,
        headers,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new RegistrationError(`${method} ${url.pathname}: ${errorMessage(error)}`, true, {
        cause: error,
      });
    }
    if (!response.ok && !(method === 'DELETE' && response.status === 404)) {
      throw new RegistrationError(
        `${method} ${url.pathname}: ${response.status} ${await response.text()}`,
        response.status === 429 || response.status >= 500,
      );
    }
  }
}
