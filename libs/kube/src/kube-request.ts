import { classifyKubeError, responseStatusOf } from './classify-kube-error';
import type { KubeRequest, KubeTransport } from './kube-transport';
import { parseJson } from './resource-slice-json';
import { endWriteSpan, failWriteSpan, startWriteSpan } from './write-trace';
import type { WriteTrace } from './write-trace';

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
  name?: string;
  request: Omit<KubeRequest, 'signal'>;
}

/**
 * Sends one API request with the transport's connection pool, credentials and a timeout (until
 * the whole body is read), reports it to `onRequest`, and returns the response as JSON. Every
 * failure, a body that is not JSON included, is classified (see {@link classifyKubeError}).
 */
export async function callKube(call: KubeCall): Promise<unknown> {
  return (await sendKube(call)).json;
}

/** What {@link sendKube} got: the JSON answer, and the span of a traced write. */
export interface KubeAnswer {
  json: unknown;
  /** Set for a write made with tracing on: its span, for the write's watch echo. */
  written?: WriteTrace;
}

/**
 * {@link callKube}, which also hands back a traced write's span. With the transport's tracing,
 * every write (any method but GET) is a client span, a child of the active span, whose
 * `traceparent` goes with the request; a failed one ends with status error.
 */
export async function sendKube(call: KubeCall): Promise<KubeAnswer> {
  const traced =
    call.request.method === 'GET'
      ? undefined
      : startWriteSpan({
          transport: call.transport,
          method: call.request.method,
          path: call.request.path,
          verb: call.verb,
          resource: call.resource,
          name: call.name,
        });
  const abort = new AbortController();
  const timer = setTimeout(() => {
    abort.abort();
  }, call.timeoutMs);
  let status: number;
  let body: string;
  try {
    const response = await call.transport.request({
      ...call.request,
      signal: abort.signal,
      ...(traced === undefined ? {} : { headers: traced.headers }),
    });
    call.onRequest?.(call.verb, call.resource, response.status);
    status = response.status;
    body = response.body;
  } catch (error) {
    const responded = responseStatusOf(error);
    call.onRequest?.(call.verb, call.resource, responded ?? 'error');
    const cause = abort.signal.aborted ? new RequestTimeoutError(call.timeoutMs, error) : error;
    const classified = classifyKubeError(cause, call.context);
    if (traced !== undefined) failWriteSpan(traced.span, responded, classified);
    throw classified;
  } finally {
    clearTimeout(timer);
  }
  let json: unknown;
  try {
    json = parseJson(body);
  } catch (error) {
    const classified = classifyKubeError(error, call.context);
    if (traced !== undefined) failWriteSpan(traced.span, status, classified);
    throw classified;
  }
  const tracing = call.transport.tracing;
  if (traced === undefined || tracing === undefined) return { json };
  return { json, written: endWriteSpan(tracing, traced.span, status, json) };
}
