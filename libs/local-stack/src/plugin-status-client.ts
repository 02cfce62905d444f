import { pluginPath } from '@slicekeeper/contracts';
import { httpJson } from './http-json';

export interface PluginStatusClientOptions {
  /** The registration API, e.g. `http://127.0.0.1:8080`. */
  apiUrl: string;
  /** Bound on each request, ms. @defaultValue 5000 */
  timeoutMs?: number;
}

/** A plugin of the stack, and the node token that may read its status. */
export interface StackPlugin {
  node: string;
  driver: string;
  /** The node's bearer token: a node-bound token may only act on its own node. */
  token: string;
}

/** The registration status of one plugin as `GET /v1/plugins/{node}/{driver}` reports it. */
interface PluginStatusBody {
  sync?: { outcome?: string; slices?: unknown[] };
}

/** Reads the registration API's status of the stack's plugins (the drivers register themselves). */
export class PluginStatusClient {
  constructor(private readonly options: PluginStatusClientOptions) {}

  /** The names of the plugin's published ResourceSlices once its last sync succeeded, else undefined. */
  async publishedSlices(plugin: StackPlugin): Promise<string[] | undefined> {
    const url = this.url(pluginPath(plugin));
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
