import { classifyKubeError, responseStatusOf } from './classify-kube-error';
import type { KubeRequest, KubeTransport } from './kube-transport';
import { parseJson } from './resource-slice-json';

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
  request: Omit<KubeRequest, 'signal'>;
}

/**
 * Sends one API request with the transport's connection pool, credentials and a timeout (until
 * the whole body is read), reports it to `onRequest`, and returns the response as JSON. Every
 * failure, a body that is not JSON included, is classified (see {@link classifyKubeError}).
 */
export async function callKube(call: KubeCall): Promise<unknown> {
  const abort = new AbortController();
  const timer = setTimeout(() => {
    abort.abort();
  }, call.timeoutMs);
  let body: string;
  try {
    const response = await call.transport.request({ ...call.request, signal: abort.signal });
    call.onRequest?.(call.verb, call.resource, response.status);
    body = response.body;
  } catch (error) {
    call.onRequest?.(call.verb, call.resource, responseStatusOf(error) ?? 'error');
    const cause = abort.signal.aborted ? new RequestTimeoutError(call.timeoutMs, error) : error;
    throw classifyKubeError(cause, call.context);
  } finally {
    clearTimeout(timer);
  }
  try {
    return parseJson(body);
  } catch (error) {
    throw classifyKubeError(error, call.context);
  }
}
