import { errorMessage } from '@slicekeeper/errors';

export interface HttpJsonResult {
  status: number;
  body: unknown;
}

/** One JSON request with a bound on its time; network failures are rethrown naming the request. */
export async function httpJson(
  method: string,
  url: string,
  options: { body?: unknown; token?: string; timeoutMs?: number } = {},
): Promise<HttpJsonResult> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
  } catch (error) {
    throw new Error(`${method} ${url}: ${errorMessage(error)}`, { cause: error });
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: keep the text for the error message.
  }
  return { status: response.status, body };
}

/** A failed request as an error: `POST /v1/plugins: 401 {"code":"unauthorized",…}`. */
export function httpError(method: string, url: string, result: HttpJsonResult): Error {
  const path = new URL(url).pathname;
  const body = typeof result.body === 'string' ? result.body : JSON.stringify(result.body);
  return new Error(`${method} ${path}: ${result.status} ${body}`);
}
