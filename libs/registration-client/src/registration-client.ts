import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { pluginPath, registrationSchema } from '@slicekeeper/contracts';
import type { Registration, SliceKey } from '@slicekeeper/contracts';
import { errorMessage } from '@slicekeeper/errors';
import { backoffDelayMs } from '@slicekeeper/time';

export interface RegistrationClientOptions {
  /** Base URL of the registration API, e.g. `https://registration-api.slicekeeper:8443`. */
  baseUrl: string;
  /** Bound on each request, ms. @defaultValue 5000 */
  timeoutMs?: number;
  /** Bearer token for the API: a token bound to the driver's node, or an admin token. */
  token?: string;
  /**
   * File holding the bearer token, read at every request: a projected ServiceAccount token is
   * rotated by kubelet (a symlink swap), and a rotated one must be used at once. Wins over
   * `token`.
   */
  tokenFile?: string;
  /**
   * PEM file of the CA(s) an `https:` API's certificate must chain to, instead of the system's
   * roots; read at every request, so that a rotated CA bundle is used without a restart.
   */
  caFile?: string;
}

/** The plugin a registration names: its key and the endpoint the plugin-watcher dials. */
export interface PluginIdentity {
  node: string;
  driver: string;
  endpoint: string;
}

/** `POST /v1/plugins`: what the API needs to probe and store a plugin. */
export interface RegisterRequest {
  /** The plugin's node, or `''` for a cluster-scoped plugin (admin tokens only). */
  node: string;
  /** `unix:///absolute/path.sock` or `host:port`: where the plugin serves its resource service. */
  endpoint: string;
  /** Required when the endpoint does not serve the registration service, else checked. */
  driver?: string;
  /** Used when the endpoint does not serve the registration service, or with `probedOnNode`. */
  supportedVersions?: readonly string[];
  /**
   * The caller, an agent on `node`, has dialled the plugin, asked GetInfo, checked the socket's
   * real path and tells the plugin itself: the API then dials nothing (it cannot reach a socket
   * on another node). Needs `driver`, `supportedVersions` and a token bound to `node`.
   */
  probedOnNode?: boolean;
}

export interface DeregisterOptions {
  /** Removes only this endpoint of the key; every endpoint when unset. */
  endpoint?: string;
  /** How long the slices stay unless the plugin registers again (`30s`); the API's default when unset. */
  grace?: string;
}

/**
 * A failed registration request. `retryable` when the API may answer otherwise later (not up
 * yet, 5xx, 429); `status` is the HTTP status when the API answered.
 */
export class RegistrationError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'RegistrationError';
  }
}

/** An answer of the API: status and body text. */
interface Answer {
  status: number;
  body: string;
}

/**
 * OpenSSL's verification failures as node reports them (`error.code`): the peer's certificate
 * does not chain to a trusted CA, or is not valid now.
 */
const CERTIFICATE_ERRORS: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'INVALID_CA',
]);

/** Retries of a registration while the API is not up yet. */
const REGISTER_BACKOFF = { initialMs: 250, maxMs: 2000 };

/** Largest answer read, bytes: a registration is a few hundred; the bound keeps a bad peer out. */
const MAX_ANSWER_BYTES = 256 * 1024;

/**
 * A client of the registration API's plugin routes (`POST /v1/plugins`,
 * `DELETE` and `GET /v1/plugins/{node}/{driver}`): what kubelet's plugin watcher does when a
 * plugin socket appears or goes, for the node-mode watcher's discovery and for drivers that
 * register themselves; and a plugin's status, for the local stack's start-up.
 */
export class RegistrationClient {
  private readonly timeoutMs: number;

  constructor(private readonly options: RegistrationClientOptions) {
    this.timeoutMs = options.timeoutMs ?? 5000;
  }

  /**
   * Registers the plugin; the API probes it with GetInfo before it answers, unless the request
   * says `probedOnNode`. Resolves with the
   * stored registration (its driver, agreed version and stored endpoint).
   */
  async register(plugin: RegisterRequest): Promise<Registration> {
    const answer = await this.request('POST', '/v1/plugins', plugin);
    const parsed = registrationSchema.safeParse(parseJson(answer.body));
    if (!parsed.success) {
      throw new RegistrationError(
        `POST /v1/plugins: ${answer.status} with a body that is not a registration`,
        false,
        answer.status,
      );
    }
    return parsed.data;
  }

  /**
   * Registers the plugin as kubelet's registrar does for a plugin whose API is not up yet: a
   * retryable failure (no answer, 5xx, 429) is tried again with backoff (250 ms doubling to 2 s,
   * less up to 20 % at random so that a node's drivers do not retry in lockstep) until `timeoutMs`
   * has passed; a refusal (4xx) or the last failure is thrown.
   */
  async registerRetrying(plugin: RegisterRequest, timeoutMs: number): Promise<Registration> {
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.register(plugin);
      } catch (error) {
        const delay = backoffDelayMs(attempt, REGISTER_BACKOFF);
        if (
          !(error instanceof RegistrationError && error.retryable) ||
          Date.now() + delay > deadline
        ) {
          throw error;
        }
        await sleep(delay);
      }
    }
  }

  /**
   * Removes the plugin's registration (only its `endpoint` when the plugin names one), so that
   * its slices are withdrawn after the removal grace. A plugin that is not registered is no error.
   */
  async deregister(
    plugin: SliceKey & { endpoint?: string },
    options: Omit<DeregisterOptions, 'endpoint'> = {},
  ): Promise<void> {
    const query = new URLSearchParams();
    if (plugin.endpoint !== undefined) query.set('endpoint', plugin.endpoint);
    if (options.grace !== undefined) query.set('grace', options.grace);
    const search = query.size === 0 ? '' : `?${query.toString()}`;
    await this.request('DELETE', `${pluginPath(plugin)}${search}`);
  }

  /**
   * The plugin's registration and sync status (`GET /v1/plugins/{node}/{driver}`) as the API
   * answers it (JSON); undefined when the plugin is not registered.
   */
  async status(key: SliceKey): Promise<unknown> {
    const answer = await this.request('GET', pluginPath(key));
    return answer.status === 404 ? undefined : parseJson(answer.body);
  }

  private async request(method: string, path: string, body?: unknown): Promise<Answer> {
    const url = new URL(path, this.options.baseUrl);
    const where = `${method} ${url.pathname}`;
    let answer: Answer;
    try {
      answer = await this.send(method, url, body);
    } catch (error) {
      // Retryable even when the certificate is not trusted: the CA file is read at every
      // request, and a rotation may be half-way (new certificate served, bundle not yet synced).
      throw new RegistrationError(`${where}: ${this.failureMessage(url, error)}`, true, undefined, {
        cause: error,
      });
    }
    if (answer.status >= 200 && answer.status < 300) return answer;
    // Not registered: no error for a removal (nothing to do) or a read (no status).
    if ((method === 'DELETE' || method === 'GET') && answer.status === 404) return answer;
    throw new RegistrationError(
      `${where}: ${answer.status} ${answerMessage(answer.body)}`,
      answer.status === 429 || answer.status >= 500,
      answer.status,
    );
  }

  /**
   * Why a request got no answer, in words an operator can act on: a TLS verification failure
   * names the CA the certificate was checked against and OpenSSL's code, not just
   * "unable to verify the first certificate".
   */
  private failureMessage(url: URL, error: unknown): string {
    const code = errorCode(error);
    const trustedBy =
      this.options.caFile === undefined
        ? 'the system CAs (set REGISTRATION_API_CA_FILE to the CA that signed it)'
        : this.options.caFile;
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
      return `the registration API's certificate does not name ${url.hostname} (its subjectAltName): ${code}`;
    }
    if (code !== undefined && CERTIFICATE_ERRORS.has(code)) {
      return `the registration API's certificate is not trusted by ${trustedBy}: ${code}`;
    }
    return errorMessage(error);
  }

  private async send(method: string, url: URL, body: unknown): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const token =
      this.options.tokenFile === undefined
        ? this.options.token
        : (await readFile(this.options.tokenFile, 'utf8')).trim();
    if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const options: RequestOptions & { ca?: Buffer } = {
      method,
      headers,
      signal: AbortSignal.timeout(this.timeoutMs),
    };
    let send = httpRequest;
    if (url.protocol === 'https:') {
      send = httpsRequest;
      if (this.options.caFile !== undefined) options.ca = await readFile(this.options.caFile);
    }
    return new Promise<Answer>((resolve, reject) => {
      const request = send(url, options, (response) => {
        readAnswer(response).then(resolve, reject);
      });
      request.on('error', reject);
      request.end(payload);
    });
  }
}

async function readAnswer(response: IncomingMessage): Promise<Answer> {
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
  return { status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The API's error answer (`{ code, message }`) as one line, or the raw body. */
function answerMessage(body: string): string {
  const parsed = parseJson(body);
  if (typeof parsed === 'object' && parsed !== null && 'message' in parsed) {
    const { message } = parsed;
    const code = 'code' in parsed ? parsed.code : undefined;
    if (typeof message === 'string') {
      return typeof code === 'string' ? `${code}: ${message}` : message;
    }
  }
  return body;
}

/** A node error's `code`; duck-typed, as errors of node's TLS layer need not be of this realm. */
function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}
