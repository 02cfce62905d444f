import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pluginPath } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';

export interface PluginStatusClientOptions {
  /** The registration API, e.g. `http://127.0.0.1:8080` or `https://127.0.0.1:8443`. */
  apiUrl: string;
  /** Bound on each request, ms. @defaultValue 5000 */
  timeoutMs?: number;
  /**
   * PEM file of the CA(s) an `https:` API's certificate must chain to, instead of the system's
   * roots (`REGISTRATION_API_CA_FILE`); read at every request, as a rotated bundle must be used.
   */
  caFile?: string;
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

/** Largest answer read, bytes: a status is a few kilobytes. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** Reads the registration API's status of the stack's plugins (the drivers register themselves). */
export class PluginStatusClient {
  constructor(private readonly options: PluginStatusClientOptions) {}

  /** The names of the plugin's published ResourceSlices once its last sync succeeded, else undefined. */
  async publishedSlices(plugin: StackPlugin): Promise<string[] | undefined> {
    const url = new URL(pluginPath(plugin), this.options.apiUrl);
    let answer: { status: number; body: string };
    try {
      answer = await this.get(url, plugin.token);
    } catch (error) {
      throw new Error(`GET ${url.toString()}: ${errorMessage(error)}`, { cause: error });
    }
    if (answer.status !== 200) return undefined;
    const sync = (parseJson(answer.body) as PluginStatusBody | undefined)?.sync;
    if (sync?.outcome !== 'synced' || sync.slices === undefined || sync.slices.length === 0) {
      return undefined;
    }
    return sync.slices.map(String);
  }

  /** node's http(s) rather than fetch: fetch takes no CA of its own without undici's Agent. */
  private async get(url: URL, token: string): Promise<{ status: number; body: string }> {
    const options: RequestOptions & { ca?: Buffer } = {
      method: 'GET',
      headers: { accept: 'application/json', authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
    };
    let send = httpRequest;
    if (url.protocol === 'https:') {
      send = httpsRequest;
      if (this.options.caFile !== undefined) options.ca = await readFile(this.options.caFile);
    }
    return new Promise((resolve, reject) => {
      const request = send(url, options, (response) => {
        readBody(response).then((body) => {
          resolve({ status: response.statusCode ?? 0, body });
        }, reject);
      });
      request.on('error', reject);
      request.end();
    });
  }
}

async function readBody(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      response.destroy();
      throw new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
