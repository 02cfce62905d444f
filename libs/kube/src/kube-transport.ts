import http from 'node:http';
import type { OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { TerminalError, errorMessage } from '@slicekeeper/errors';
import type { Tracing } from '@slicekeeper/telemetry';
import { loadClusterAccess } from './kubeconfig';
import type { ClusterAccess, KubeconfigSource } from './kubeconfig';

function describeSource(source: KubeconfigSource): string {
  switch (source.kind) {
    case 'file':
      return `kubeconfig "${source.path}"`;
    case 'in-cluster':
      return 'in-cluster config';
    case 'yaml':
      return 'kubeconfig text';
  }
}

/**
 * The API server's non-2xx answer: its status, body text and headers (one string per name), the
 * fields `classifyKubeError` reads, as it reads client-node's `ApiException`.
 */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';

  constructor(
    /** The HTTP status. */
    readonly code: number,
    readonly body: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(`HTTP ${code}`);
  }
}

/** One API request: the path with its query, relative to the server URL. */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** e.g. `/apis/resource.k8s.io/v1/resourceslices?limit=500`. */
  path: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Content-Type of the body (a patch names its kind). @defaultValue 'application/json' */
  contentType?: string;
  /** @defaultValue 'application/json' */
  accept?: string;
  /** Aborts the request, the response body included. */
  signal: AbortSignal;
  /** Sent besides the transport's own (a write's W3C `traceparent`). */
  headers?: Readonly<Record<string, string>>;
}

export interface KubeTransportOptions {
  /**
   * With tracing on: every write (create, update, delete, patch) made through the transport is
   * a client span carrying its W3C `traceparent` header (see `callKube`); lists and watches are
   * not traced. Without it (the default) no span is made.
   */
  tracing?: Tracing;
}

/** A 2xx answer. */
export interface KubeResponse {
  status: number;
  body: string;
}

/** A 2xx answer read as it arrives. */
export interface KubeStream {
  status: number;
  /** The body's non-empty lines, without line ends (a watch sends one JSON event per line). */
  lines: AsyncIterable<string>;
}

/** What an aborted request fails with (classified as 'timeout' when nobody else explains it). */
function abortError(): Error {
  return Object.assign(new Error('the request was aborted'), { name: 'AbortError' });
}

function ignoreError(): void {
  // The error is thrown to whoever iterates the stream.
}

/** The lines of a body, as they arrive. */
async function* linesOf(body: AsyncIterable<unknown>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of body) {
    rest += decoder.write(chunk as Buffer);
    let start = 0;
    for (let end = rest.indexOf('\n'); end >= 0; end = rest.indexOf('\n', start)) {
      const line = rest.slice(start, end).trim();
      start = end + 1;
      if (line !== '') yield line;
    }
    rest = rest.slice(start);
  }
  const last = (rest + decoder.end()).trim();
  if (last !== '') yield last;
}

/** The connection closed before the whole response body arrived; classified as 'connection'. */
class ResponseCutError extends Error {
  override readonly name = 'ResponseCutError';
  readonly code = 'ECONNRESET';

  constructor() {
    super('the connection closed before the response was complete');
  }
}

/** Response headers, one string per name. */
function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/**
 * One cluster connection: the server URL, a keep-alive agent built once from the kubeconfig's
 * TLS settings, and the credentials applied to each request. Client certificates and the CA are
 * read once; an exec plugin that returns client certificates is not supported (tokens are).
 *
 * Requests go out as plain JSON over Node's http(s), not through client-node's generated API
 * classes: their model round trip (JSON → models with Dates and renamed fields → JSON) cost
 * about a third of the syncer's CPU per change (`npm run bench`), and it drops any field the
 * pinned models do not know, which a PUT would then erase. The kubeconfig is read by
 * `loadClusterAccess`, which loads client-node only for an exec plugin or an auth provider.
 */
export class KubeTransport {
  /** Base URL of the API server, without a trailing slash. */
  readonly server: string;
  /** The server's host (no brackets around an IPv6 address) and port, for span attributes. */
  readonly serverAddress: string;
  readonly serverPort: number;
  /** Where writes through this connection are traced; undefined when tracing is off. */
  readonly tracing: Tracing | undefined;
  private readonly agent: http.Agent;
  private readonly credentials: ClusterAccess['credentials'];

  constructor(source: KubeconfigSource, options: KubeTransportOptions = {}) {
    this.tracing = options.tracing;
    try {
      const access = loadClusterAccess(source);
      const url = new URL(access.server);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new Error(`unsupported server URL "${access.server}"`);
      }
      this.server = access.server;
      this.serverAddress = url.hostname.replace(/^\[(.*)\]$/, '$1');
      this.serverPort = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
      // LIFO reuses the warmest sockets and lets idle ones time out under low load.
      const agentOptions = { keepAlive: true, scheduling: 'lifo' as const };
      if (url.protocol === 'http:') {
        // Plain HTTP (the kube emulator, kubectl proxy): allowed as kubectl allows it.
        this.agent = new http.Agent(agentOptions);
      } else {
        this.agent = new https.Agent({
          ...agentOptions,
          ca: access.ca,
          cert: access.cert,
          key: access.key,
          // Unset unless skipping, so NODE_TLS_REJECT_UNAUTHORIZED keeps its meaning.
          ...(access.skipTLSVerify ? { rejectUnauthorized: false } : {}),
          ...(access.tlsServerName === undefined ? {} : { servername: access.tlsServerName }),
        });
      }
      this.credentials = access.credentials;
    } catch (error) {
      throw new TerminalError(`load ${describeSource(source)}: ${errorMessage(error)}`, {
        code: 'config',
        cause: error,
      });
    }
  }

  /**
   * Sends one request over the shared agent with the current credentials and returns the
   * status and the body as text. A non-2xx answer rejects with a {@link KubeApiError} (status,
   * body text, headers), which `classifyKubeError` reads; a network failure rejects with Node's
   * error (its `code`, e.g. ECONNREFUSED).
   */
  async request(request: KubeRequest): Promise<KubeResponse> {
    const response = await this.send(request);
    return new Promise<KubeResponse>((resolve, reject) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('close', () => {
        // After 'end' this settles nothing; before it, the connection broke mid-body.
        if (!response.complete) reject(new ResponseCutError());
      });
      response.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const status = response.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          resolve({ status, body });
          return;
        }
        reject(new KubeApiError(status, body, flatHeaders(response.headers)));
      });
    });
  }

  /**
   * Sends one request whose answer is read as it arrives (a watch): resolves once a 2xx status
   * is in, with the body's lines; rejects like {@link request} otherwise. Iterating the lines
   * ends when the server ends the response and throws when the connection breaks or the
   * request's signal aborts it.
   */
  async stream(request: KubeRequest): Promise<KubeStream> {
    const response = await this.send(request);
    const status = response.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      const chunks: Buffer[] = [];
      for await (const chunk of response) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      throw new KubeApiError(status, body, flatHeaders(response.headers));
    }
    // Until the caller iterates, an error has no listener; iterating surfaces it.
    response.on('error', ignoreError);
    return { status, lines: linesOf(response) };
  }

  /** Sends `request`; resolves with the response as soon as its status and headers are in. */
  private async send(request: KubeRequest): Promise<http.IncomingMessage> {
    const headers: OutgoingHttpHeaders = {
      Accept: request.accept ?? 'application/json',
      ...request.headers,
      ...(await this.credentials()),
    };
    const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
    if (payload !== undefined) {
      headers['Content-Type'] = request.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    const url = new URL(`${this.server}${request.path}`);
    const send = url.protocol === 'https:' ? https.request : http.request;
    const { signal } = request;
    return new Promise<http.IncomingMessage>((resolve, reject) => {
      if (signal.aborted) {
        reject(abortError());
        return;
      }
      let response: http.IncomingMessage | undefined;
      const outgoing = send(
        url,
        { method: request.method, agent: this.agent, headers },
        (answer) => {
          response = answer;
          resolve(answer);
        },
      );
      // Not Node's `signal` option: an abort after the response is complete (not yet read to
      // its end) would destroy the socket with an error nobody listens to, or after the agent
      // pooled it. A complete response has nothing left to stop.
      const abort = () => {
        if (response?.complete !== true) outgoing.destroy(abortError());
      };
      signal.addEventListener('abort', abort, { once: true });
      outgoing.on('close', () => {
        signal.removeEventListener('abort', abort);
      });
      outgoing.on('error', reject);
      outgoing.end(payload);
    });
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agent.destroy();
  }
}

/** `path` with the query parameters that are set. */
export function withQuery(
  path: string,
  query: Record<string, string | number | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}
