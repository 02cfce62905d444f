/** A JSON object as the emulator answers it, for tests. */
export type Json = Record<string, unknown>;

/**
 * Sends one request to the emulator at `url` (a JSON body, or a string as it is) and reads the
 * answer as JSON.
 */
export async function callEmulator(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': contentType },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** Reads a watch stream until `count` events arrived, then hangs up. */
export async function firstWatchEvents(
  url: string,
  init: RequestInit,
  count: number,
): Promise<Json[]> {
  const controller = new AbortController();
  const res = await fetch(url, { ...init, signal: controller.signal });
  const events: Json[] = [];
  let buffered = '';
  const decoder = new TextDecoder();
  if (res.body === null) return events;
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        events.push(JSON.parse(buffered.slice(0, newline)) as Json);
        buffered = buffered.slice(newline + 1);
      }
      if (events.length >= count) break;
    }
  } finally {
    controller.abort();
  }
  return events;
}
