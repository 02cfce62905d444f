import { httpError, httpJson } from './http-json';

export interface PluginRegistrarOptions {
  /** The registration API, e.g. `http://127.0.0.1:8080`. */
  apiUrl: string;
  /** Bound on each request, ms. @defaultValue 5000 */
  timeoutMs?: number;
}

export interface PluginRegistration {
  node: string;
  driver: string;
  endpoint: string;
  /** The node's bearer token: a node-bound token may only act on its own node. */
  token: string;
}

/** The registration status of one plugin as `GET /v1/plugins/{node}/{driver}` reports it. */
interface PluginStatusBody {
  sync?: { outcome?: string; slices?: unknown[] };
}

/**
 * Registers plugins with the registration API the way kubelet's plugin watcher would when a
 * plugin socket appears, and removes them again. The local stack does this for the example
 * drivers because their registration client sends no bearer token (the API answers 401).
 */
export class PluginRegistrar {
  constructor(private readonly options: PluginRegistrarOptions) {}

  async register(plugin: PluginRegistration): Promise<void> {
    const url = this.url('/v1/plugins');
    const result = await httpJson('POST', url, {
      token: plugin.token,
      body: { node: plugin.node, driver: plugin.driver, endpoint: plugin.endpoint },
      ...this.timeout(),
    });
    if (result.status !== 200 && result.status !== 201) throw httpError('POST', url, result);
  }

  /** Removes the plugin's endpoint; one that is not registered (404) counts as removed. */
  async deregister(plugin: PluginRegistration): Promise<void> {
    const url = this.url(
      `/v1/plugins/${encodeURIComponent(plugin.node)}/${encodeURIComponent(plugin.driver)}?endpoint=${encodeURIComponent(plugin.endpoint)}`,
    );
    const result = await httpJson('DELETE', url, { token: plugin.token, ...this.timeout() });
    if (result.status !== 200 && result.status !== 404) throw httpError('DELETE', url, result);
  }

  /** The names of the plugin's published ResourceSlices once its last sync succeeded, else undefined. */
  async publishedSlices(
    plugin: Pick<PluginRegistration, 'node' | 'driver' | 'token'>,
  ): Promise<string[] | undefined> {
    const url = this.url(
      `/v1/plugins/${encodeURIComponent(plugin.node)}/${encodeURIComponent(plugin.driver)}`,
    );
    const result = await httpJson('GET', url, { token: plugin.token, ...this.timeout() });
    if (result.status !== 200) return undefined;
    const sync = (result.body as PluginStatusBody | undefined)?.sync;
    if (sync?.outcome !== 'synced' || sync.slices === undefined || sync.slices.length === 0) {
      return undefined;
    }
    return sync.slices.map(String);
  }

  private url(path: string): string {
    return new URL(path, this.options.apiUrl).toString();
  }

  private timeout(): { timeoutMs?: number } {
    return this.options.timeoutMs === undefined ? {} : { timeoutMs: this.options.timeoutMs };
  }
}
