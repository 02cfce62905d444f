import { classifyKubeError, responseStatusOf } from './classify-kube-error';
import type { KubeRequest, KubeTransport } from './kube-transport';
import { parseJson } from './resource-slice-json';
import { endWriteSpan, failWriteSpan, startWriteSpan } from './write-trace';

/** Reports one API request: verb, resource and HTTP status, or 'error' without a response. */
export type OnKubeRequest = (verb: string, resource: string, code: number | 'error') => void;

/** Our per-request timeout fired; classified as 'timeout'. */
class RequestTimeoutError extends Error {
  override readonly name = 'TimeoutError';

  constructor(timeoutMs: number, cause: unknown) {
    super(`no complete response within ${timeoutMs} ms`, { cause });
  }
}

export interface KubeCall {
  transport: KubeTransport;
  /** From sending until the whole body is read, ms. */
  timeoutMs: number;
  onRequest: OnKubeRequest | undefined;
  verb: string;
  resource: string;
  /** Put in front of every error, e.g. `patch status of Node "node-a"`. */
  context: string;
  /** The object's name, when the request names one (a span attribute of a traced write). */
  name?: string | undefined;
  request: Omit<KubeRequest, 'signal'>;
}

/**
 * Sends one API request with the transport's connection pool, credentials and a timeout (until
 * the whole body is read), reports it to `onRequest`, and returns the response as JSON. Every
 * failure, a body that is not JSON included, is classified (see {@link classifyKubeError}).
 *
 * With the transport's tracing, every write (any method but GET) is a client span, a child of
 * the active span, whose `traceparent` goes with the request; a failed one ends with status
 * error, and a successful one's JSON answer carries its span (`takeWriteTrace`) for the write's
 * watch echo. Without tracing a request costs no more than the branch.
 */
export async function callKube(call: KubeCall): Promise<unknown> {
  const traced =
    call.transport.tracing === undefined || call.request.method === 'GET'
      ? undefined
      : startWriteSpan(call.transport, call.request.method, call.request.path, call);
  const abort = new AbortController();
  const timer = setTimeout(() => {
    abort.abort();
  }, call.timeoutMs);
  let status: number;
  let body: string;
  try {
    const response = await call.transport.request(
      traced === undefined
        ? { ...call.request, signal: abort.signal }
        : { ...call.request, signal: abort.signal, headers: traced.headers },
    );
    call.onRequest?.(call.verb, call.resource, response.status);
    status = response.status;
    body = response.body;
  } catch (error) {
    const responded = responseStatusOf(error);
    call.onRequest?.(call.verb, call.resource, responded ?? 'error');
    const cause = abort.signal.aborted ? new RequestTimeoutError(call.timeoutMs, error) : error;
    const classified = classifyKubeError(cause, call.context);
    if (traced !== undefined) failWriteSpan(traced, responded, classified);
    throw classified;
  } finally {
    clearTimeout(timer);
  }
  let json: unknown;
  try {
    json = parseJson(body);
  } catch (error) {
    const classified = classifyKubeError(error, call.context);
    if (traced !== undefined) failWriteSpan(traced, status, classified);
    throw classified;
  }
  if (traced !== undefined) endWriteSpan(traced, status, json);
  return json;
}
